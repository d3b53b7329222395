//! The bulkhead of the historical read path: at most `max_gets` GETs and
//! `max_bytes` bytes in flight, shared by the priority classes. When a slot
//! frees, it goes to the waiting class furthest below its reserved share
//! (slots in use divided by share), so each class gets at least its share
//! when it has demand and idle share is lent to the others. A paused
//! `bulk` class gets nothing until resumed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::classes::{ClassPolicy, PriorityClass};

#[derive(Debug)]
struct Waiter {
    bytes: usize,
    /// Receives the permit itself, so a reader that gives up after being
    /// granted frees the slot when the channel drops it.
    ready: oneshot::Sender<GetPermit>,
}

#[derive(Debug, Default)]
struct State {
    gets: usize,
    bytes: usize,
    per_class: [usize; 3],
    queues: [VecDeque<Waiter>; 3],
}

#[derive(Debug)]
pub struct GetBudget {
    max_gets: usize,
    max_bytes: usize,
    state: Mutex<State>,
    policy: Mutex<ClassPolicy>,
    /// Whether the bulk class is paused, for readers waiting to resume.
    bulk_paused: tokio::sync::watch::Sender<bool>,
    /// Bulk reads waiting for the class to resume.
    paused_reads: std::sync::atomic::AtomicUsize,
}

/// One admitted GET; dropping it frees the slot.
#[derive(Debug)]
pub struct GetPermit {
    budget: Arc<GetBudget>,
    class: PriorityClass,
    bytes: usize,
}

impl Drop for GetPermit {
    fn drop(&mut self) {
        let mut st = self.budget.lock();
        st.gets -= 1;
        st.bytes -= self.bytes;
        st.per_class[self.class as usize] -= 1;
        self.budget.dispatch(&mut st);
    }
}

impl GetBudget {
    pub fn new(max_gets: usize, max_bytes: usize, policy: ClassPolicy) -> Arc<Self> {
        let (bulk_paused, _) = tokio::sync::watch::channel(policy.bulk_paused);
        Arc::new(GetBudget {
            max_gets: max_gets.max(1),
            max_bytes: max_bytes.max(1),
            state: Mutex::new(State::default()),
            policy: Mutex::new(policy),
            bulk_paused,
            paused_reads: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn policy(&self) -> ClassPolicy {
        self.policy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the class policy (shares, pause, membership) at run time.
    pub fn set_policy(self: &Arc<Self>, p: ClassPolicy) {
        self.bulk_paused.send_replace(p.bulk_paused);
        *self.policy.lock().unwrap_or_else(|e| e.into_inner()) = p;
        let mut st = self.lock();
        self.dispatch(&mut st);
    }

    /// Returns once the bulk class is not paused.
    pub async fn wait_bulk_resumed(&self) {
        use std::sync::atomic::Ordering;
        let mut rx = self.bulk_paused.subscribe();
        if !*rx.borrow() {
            return;
        }
        self.paused_reads.fetch_add(1, Ordering::Relaxed);
        let _ = rx.wait_for(|paused| !*paused).await;
        self.paused_reads.fetch_sub(1, Ordering::Relaxed);
    }

    /// Bulk reads waiting for the class to resume.
    pub fn bulk_paused(&self) -> bool {
        *self.bulk_paused.borrow()
    }

    pub fn paused_reads(&self) -> usize {
        self.paused_reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// (GETs in flight, bytes in flight, waiting GETs per class).
    pub fn snapshot(&self) -> (usize, usize, [usize; 3]) {
        let st = self.lock();
        (
            st.gets,
            st.bytes,
            [st.queues[0].len(), st.queues[1].len(), st.queues[2].len()],
        )
    }

    /// Waits for a slot for a GET of `bytes` in `class`.
    pub async fn acquire(self: &Arc<Self>, class: PriorityClass, bytes: usize) -> GetPermit {
        let bytes = bytes.min(self.max_bytes);
        let rx = {
            let mut st = self.lock();
            let (tx, rx) = oneshot::channel();
            st.queues[class as usize].push_back(Waiter { bytes, ready: tx });
            self.dispatch(&mut st);
            rx
        };
        match rx.await {
            Ok(permit) => permit,
            // Waiters are only dropped unanswered with the budget itself
            // (shutdown): never hand out a slot we do not hold.
            Err(_) => std::future::pending::<GetPermit>().await,
        }
    }

    /// Grants slots to waiters while capacity lasts.
    fn dispatch(self: &Arc<Self>, st: &mut State) {
        let policy = self.policy();
        loop {
            if st.gets >= self.max_gets {
                return;
            }
            // The eligible class furthest below its share.
            let mut best: Option<(usize, f64)> = None;
            for c in PriorityClass::ALL {
                let i = c as usize;
                if st.queues[i].is_empty() || (c == PriorityClass::Bulk && policy.bulk_paused) {
                    continue;
                }
                let share = policy.shares[i].max(1) as f64;
                let load = st.per_class[i] as f64 / share;
                if best.is_none_or(|(_, l)| load < l) {
                    best = Some((i, load));
                }
            }
            let Some((i, _)) = best else {
                return;
            };
            let need = st.queues[i].front().map(|w| w.bytes).unwrap_or(0);
            if st.bytes + need > self.max_bytes && st.gets > 0 {
                return;
            }
            let Some(w) = st.queues[i].pop_front() else {
                return;
            };
            st.gets += 1;
            st.bytes += w.bytes;
            st.per_class[i] += 1;
            let permit = GetPermit {
                budget: self.clone(),
                class: PriorityClass::ALL[i],
                bytes: w.bytes,
            };
            if let Err(permit) = w.ready.send(permit) {
                // The reader gave up before being granted: undo here (the
                // permit's Drop would take the lock we hold).
                st.gets -= 1;
                st.bytes -= permit.bytes;
                st.per_class[i] -= 1;
                std::mem::forget(permit);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn hold(b: &Arc<GetBudget>, class: PriorityClass) -> GetPermit {
        tokio::time::timeout(Duration::from_secs(1), b.acquire(class, 1))
            .await
            .expect("granted")
    }

    #[tokio::test]
    async fn slots_follow_shares_and_bulk_can_pause() {
        let b = GetBudget::new(4, 1 << 20, ClassPolicy::default());
        // Fill every slot with bulk work: idle share is lent out.
        let mut bulk: Vec<GetPermit> = Vec::new();
        for _ in 0..4 {
            bulk.push(hold(&b, PriorityClass::Bulk).await);
        }
        // Critical and bulk both wait; the freed slot goes to critical.
        let crit = tokio::spawn({
            let b = b.clone();
            async move { b.acquire(PriorityClass::Critical, 1).await }
        });
        let more_bulk = tokio::spawn({
            let b = b.clone();
            async move { b.acquire(PriorityClass::Bulk, 1).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(b.snapshot().2, [1, 0, 1]);
        bulk.pop();
        let c = tokio::time::timeout(Duration::from_secs(1), crit)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(b.snapshot().2, [0, 0, 1], "bulk still waits");
        // Pausing bulk: freed slots stay free.
        let mut p = b.policy();
        p.bulk_paused = true;
        b.set_policy(p.clone());
        bulk.pop();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(b.snapshot().2, [0, 0, 1]);
        assert_eq!(b.snapshot().0, 3);
        p.bulk_paused = false;
        b.set_policy(p);
        let _nb = tokio::time::timeout(Duration::from_secs(1), more_bulk)
            .await
            .unwrap()
            .unwrap();
        drop(c);
    }

    #[tokio::test]
    async fn bytes_in_flight_are_bounded() {
        let b = GetBudget::new(10, 100, ClassPolicy::default());
        let first = b.acquire(PriorityClass::Standard, 80).await;
        let second = tokio::spawn({
            let b = b.clone();
            async move { b.acquire(PriorityClass::Standard, 80).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(b.snapshot().1, 80, "the second GET waits for bytes");
        drop(first);
        let _s = tokio::time::timeout(Duration::from_secs(1), second)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(b.snapshot().1, 80);
    }
}
