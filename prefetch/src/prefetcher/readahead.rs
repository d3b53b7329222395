//! Read-ahead per stream: the window that grows while a stream reads in
//! order, the chunks it requests in the background, and the room it holds
//! them in until its reader arrives (at most half the memory cache,
//! reserved when requested). It never serves reads; the prefetcher's
//! cursor takes held chunks from here.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strata_catalog::RemoteSegment;

use super::{Prefetcher, ReadRequest, StreamKey};
use crate::cursor::ChunkSource;
use crate::stats::PrefetchStats;

#[derive(Debug)]
pub(super) struct Stream {
    /// First and last (segment base offset, chunk) of the previous read.
    last_start: (i64, u64),
    last_end: (i64, u64),
    window: usize,
    /// Read-ahead was requested up to here (inclusive).
    ahead_to: Option<(i64, u64)>,
    /// Read-ahead chunks that arrived, held until the stream reads past
    /// them: under LRU, the chunks every stream consumed meanwhile are newer
    /// than read-ahead fetched a while ago, so the shared cache alone would
    /// evict read-ahead before its reader arrives (and fetch it twice).
    held: BTreeMap<(i64, u64), Bytes>,
    used: Instant,
}

impl Stream {
    /// Whether read-ahead chunk `at` is still in front of this stream's
    /// reader, within what it requested.
    fn wants(&self, at: (i64, u64)) -> bool {
        at >= self.last_start && self.ahead_to.is_some_and(|a| at <= a)
    }
}

impl Prefetcher {
    /// Sum of the read-ahead windows of streams active in the last minute.
    pub fn readahead_depth(&self) -> usize {
        let streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams
            .values()
            .filter(|s| s.used.elapsed() < Duration::from_secs(60))
            .map(|s| s.window)
            .sum()
    }

    /// Bytes of read-ahead held by streams or on its way to them.
    pub fn readahead_held_bytes(&self) -> usize {
        self.held_bytes.load(Ordering::Relaxed)
    }
    /// Moves the stream's read-ahead window and requests the chunks it now
    /// covers in the background: this read's own chunks (so they arrive in
    /// parallel) and `window` more. A read is sequential when it starts
    /// where the stream's previous read was (between its first and one past
    /// its last chunk); then the window doubles, else it resets.
    pub(super) fn advance_stream(self: &Arc<Self>, req: &ReadRequest, chunk: u64) {
        let Some(seg) = req.segments.first() else {
            return;
        };
        if self.cfg.readahead_max_chunks == 0 {
            return; // read-ahead off: the read's cursor fetches what it needs
        }
        let here = (seg.base_offset, chunk);
        let span = (req.max_bytes as u64)
            .div_ceil(self.chunk_bytes())
            .clamp(1, 64) as usize;
        let mut wanted = Vec::new();
        {
            let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
            if streams.len() > 4096 {
                streams.retain(|_, s| {
                    let keep = s.used.elapsed() < Duration::from_secs(60);
                    if !keep {
                        self.release(std::mem::take(&mut s.held));
                    }
                    keep
                });
            }
            let min = self.cfg.readahead_min_chunks.max(1);
            // All windows together may fill at most half the memory cache:
            // deeper read-ahead would evict chunks before their readers
            // arrive and fetch them twice.
            let active = streams
                .values()
                .filter(|s| s.used.elapsed() < Duration::from_secs(10))
                .count()
                .max(1);
            // A stream holds from the chunk it reads to the end of its
            // window: the read's own `span` chunks, then `window` more.
            let cache_chunks = self.cfg.memory_cache_bytes / 2 / self.chunk_bytes() as usize;
            let max = self
                .cfg
                .readahead_max_chunks
                .min((cache_chunks / active).saturating_sub(span + 1))
                .max(min);
            // Idle streams give back what they hold.
            for s in streams.values_mut() {
                if !s.held.is_empty() && s.used.elapsed() >= Duration::from_secs(10) {
                    self.release(std::mem::take(&mut s.held));
                }
            }
            let s = streams.entry(req.stream.clone()).or_insert(Stream {
                last_start: (i64::MIN, 0),
                last_end: (i64::MIN, 0),
                window: 0,
                ahead_to: None,
                held: BTreeMap::new(),
                used: Instant::now(),
            });
            let after_end = self.successor(&req.segments, s.last_end);
            // Reads stop at segment ends, so the start of a later segment
            // continues a sequential stream too.
            let sequential = (here >= s.last_start && here <= s.last_end)
                || after_end == Some(here)
                || (here.1 == 0 && here.0 > s.last_end.0 && s.last_end.0 != i64::MIN);
            if sequential {
                s.window = (s.window * 2).clamp(min, max);
            } else {
                s.window = min;
                s.ahead_to = None;
                self.release(std::mem::take(&mut s.held));
            }
            // What it read past goes.
            let ahead = s.held.split_off(&here);
            self.release(std::mem::replace(&mut s.held, ahead));
            s.last_start = here;
            s.last_end = here;
            s.used = Instant::now();
            // Request (ahead_to, here + span + window], and `here` itself,
            // as far as there is room to hold them.
            let mut pos = match s.ahead_to {
                Some(a) if a >= here => a,
                _ => {
                    if !self.reserve(&req.segments, here) {
                        return;
                    }
                    wanted.push(here);
                    s.ahead_to = Some(here);
                    here
                }
            };
            let to = self.nth_after(&req.segments, here, span + s.window);
            while let Some(next) = self.successor(&req.segments, pos) {
                if to.is_none_or(|t| next > t) || !self.reserve(&req.segments, next) {
                    break;
                }
                wanted.push(next);
                s.ahead_to = Some(next);
                pos = next;
            }
        }
        for (base, c) in wanted {
            let Some(seg) = req.segments.iter().find(|s| s.base_offset == base).cloned() else {
                self.unreserve(&req.segments, (base, c));
                continue;
            };
            let me = self.clone();
            let class = req.class;
            let stream = req.stream.clone();
            PrefetchStats::add(&self.stats.readahead_chunks, 1);
            self.handle.spawn(async move {
                match me.fetch_chunk(&seg, c, class, None, Some(&stream)).await {
                    Ok(Some(chunk)) => me.hold(&stream, &seg, (base, c), chunk),
                    // Its stream read past it before it got to a GET.
                    Ok(None) => me.unreserve(std::slice::from_ref(&seg), (base, c)),
                    Err(e) => {
                        me.unreserve(std::slice::from_ref(&seg), (base, c));
                        tracing::debug!(object = %seg.log_key, chunk = c, error = %e, "read-ahead failed")
                    }
                }
            });
        }
    }

    pub(super) fn held(&self, stream: &StreamKey, at: (i64, u64)) -> Option<Bytes> {
        let streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams.get(stream)?.held.get(&at).cloned()
    }

    /// Whether `stream` still waits for read-ahead chunk `at`: not read
    /// past, not held yet. Checked just before a read-ahead GET.
    pub(super) fn still_ahead(&self, stream: &StreamKey, at: (i64, u64)) -> bool {
        let streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams
            .get(stream)
            .is_some_and(|s| s.wants(at) && !s.held.contains_key(&at))
    }

    /// Bytes of chunk `at` of `segs`: what holding it takes.
    fn chunk_len(&self, segs: &[RemoteSegment], at: (i64, u64)) -> usize {
        let cb = self.chunk_bytes();
        segs.iter().find(|s| s.base_offset == at.0).map_or(0, |s| {
            s.size_bytes.saturating_sub(at.1 * cb).min(cb) as usize
        })
    }

    /// Takes room for holding chunk `at`, if the limit allows.
    fn reserve(&self, segs: &[RemoteSegment], at: (i64, u64)) -> bool {
        let len = self.chunk_len(segs, at);
        let limit = self.cfg.memory_cache_bytes / 2;
        self.held_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (held + len <= limit).then_some(held + len)
            })
            .is_ok()
    }

    fn unreserve(&self, segs: &[RemoteSegment], at: (i64, u64)) {
        self.held_bytes
            .fetch_sub(self.chunk_len(segs, at), Ordering::Relaxed);
    }

    /// Keeps an arrived read-ahead chunk for its stream in the room reserved
    /// for it, unless the stream read past it or jumped elsewhere meanwhile
    /// (then the room goes back).
    fn hold(&self, stream: &StreamKey, seg: &RemoteSegment, at: (i64, u64), chunk: Bytes) {
        let reserved = self.chunk_len(std::slice::from_ref(seg), at);
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        match streams.get_mut(stream) {
            Some(s) if s.wants(at) => {
                // Accounted as its actual length from here on.
                self.held_bytes.fetch_add(chunk.len(), Ordering::Relaxed);
                self.held_bytes.fetch_sub(reserved, Ordering::Relaxed);
                if let Some(old) = s.held.insert(at, chunk) {
                    self.held_bytes.fetch_sub(old.len(), Ordering::Relaxed);
                }
            }
            _ => {
                self.held_bytes.fetch_sub(reserved, Ordering::Relaxed);
            }
        }
    }

    /// Forgets held chunks (the cache may still have them).
    fn release(&self, held: BTreeMap<(i64, u64), Bytes>) {
        let bytes: usize = held.values().map(Bytes::len).sum();
        self.held_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Records where a stream's read ended (its next read starts there).
    pub(super) fn finish_stream(&self, stream: &StreamKey, end: (i64, u64)) {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = streams.get_mut(stream) {
            if end > s.last_end {
                s.last_end = end;
            }
        }
    }

    fn chunks_in(&self, seg: &RemoteSegment) -> u64 {
        seg.size_bytes.div_ceil(self.chunk_bytes())
    }

    /// The chunk after `at`, continuing into the next segment.
    fn successor(&self, segs: &[RemoteSegment], at: (i64, u64)) -> Option<(i64, u64)> {
        let i = segs.iter().position(|s| s.base_offset == at.0)?;
        if at.1 + 1 < self.chunks_in(&segs[i]) {
            return Some((at.0, at.1 + 1));
        }
        segs.get(i + 1).map(|s| (s.base_offset, 0))
    }

    /// The chunk `n` after `at` (or the last one there is).
    fn nth_after(&self, segs: &[RemoteSegment], at: (i64, u64), n: usize) -> Option<(i64, u64)> {
        let mut pos = at;
        let mut moved = false;
        for _ in 0..n {
            match self.successor(segs, pos) {
                Some(p) => {
                    pos = p;
                    moved = true;
                }
                None => break,
            }
        }
        moved.then_some(pos)
    }
}
