#!/usr/bin/env python3
"""Transactions benchmark (issue 17): what a transactional producer costs
against an idempotent one, and how long commit_transaction() takes.

Started by benches/transactions.sh (builds the broker and the test venv).

One broker (release binary, default settings), one run, phases one after
the other, so that the ratios compare figures measured seconds apart on
the same (noisy) machine. Every phase produces --records records of
--value-bytes bytes (uncompressed, no key) to a fresh topic of
--partitions partitions with confluent-kafka (librdkafka), acks=all,
enable.idempotence=true, linger.ms=5, other settings librdkafka's defaults:

- idem: the baseline, an idempotent producer; produce all, then flush().
- txn-K (for each K of --txn-sizes): the same producer plus a
  transactional.id (init_transactions() before the clock starts);
  begin_transaction(), K records, flush(), commit_transaction(), repeated.
  flush() is called explicitly only to split the commit's time in two:
  librdkafka's commit_transaction() starts with the same flush, so
  "commit" (flush + commit_transaction()) is what a plain
  commit_transaction() call costs the application, and "EndTxn" is the
  commit_transaction() call after the flush (the EndTxn round trip: the
  broker answers once PrepareCommit is written; the markers follow
  asynchronously).

Default sizes: 1000 and 100 records, and 50000, which at this machine's
idempotent rate (about 600,000 records/s with the data on tmpfs) is a
transaction of about 100 ms, the commit interval of Confluent's published
figure (about 3 % of producer throughput). What a transaction costs is
mostly per transaction (the AddPartitionsToTxn, the flush and the EndTxn
round trips, during which the producer's pipeline drains), so the ratio
follows the transaction's duration ("txn ms"), not its record count.

The order is (idem, txn-K1, txn-K2, ...) x --rounds, then idem once more,
so every transactional phase has an idempotent phase before and after it;
each phase's ratio is taken against the mean of those two, and drift of
the baseline over the run shows in the idem rows. The summary's ratio is
the median records/s of a kind of phase over the median of the
idempotent phases (a phase another process slowed down moves a median
less than it moves its neighbours' ratios). Throughput is the
whole pipeline's: the Python client and the broker share the machine's
cores (per-phase CPU seconds of the broker, this process and everything
else are reported). After each phase the topic's high watermarks are
checked (idem: exactly --records; txn: --records plus one commit marker
per partition per transaction) and read_committed's last stable offset
must equal the high watermark (every transaction completed); then the
topic is deleted, so the data directory holds one phase's data at a time
(see Phase.measure for why that matters on this VM).

The broker's data directory is on tmpfs (/dev/shm) unless
--data-on-disk: this machine's disk stalls fdatasync 50-800 ms at random
(benches/store_faults.py), which would decide every commit's p99.

Writes bench-results/transactions-<time>.json and prints a table.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
E2E = REPO / "tests" / "e2e"
sys.path.insert(0, str(E2E))

import kutil  # noqa: E402
from confluent_kafka import TopicPartition  # noqa: E402
from strata_broker import Broker  # noqa: E402


def cpu_stat() -> tuple[float, float]:
    """Machine-wide (busy, steal) CPU seconds (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    tck = os.sysconf("SC_CLK_TCK")
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / tck, (v[7] if len(v) > 7 else 0) / tck


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def quantile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


class Phase:
    def __init__(self, b: Broker, args, name: str):
        self.b, self.args, self.name = b, args, name
        self.topic = kutil.create_topic(kutil.admin(b.bootstrap), kutil.unique(name), args.partitions)
        rnd = os.urandom(args.value_bytes * 256)
        self.values = [rnd[i * args.value_bytes:(i + 1) * args.value_bytes] for i in range(256)]

    def producer(self, **conf):
        return kutil.producer(self.b.bootstrap, **{"enable.idempotence": True, "acks": "all", "linger.ms": 5,
                                                   "compression.type": "none", **conf})

    def produce(self, p, start: int, n: int):
        topic, values = self.topic, self.values
        for i in range(start, start + n):
            v = values[i & 255]
            while True:
                try:
                    p.produce(topic, value=v)
                    break
                except BufferError:
                    p.poll(0.005)
            if i & 1023 == 0:
                p.poll(0)

    def measure(self, body) -> dict:
        c0, b0, o0, t0 = cpu_stat(), self.b.cpu_seconds(), own_cpu(), time.perf_counter()
        extra = body()
        wall = time.perf_counter() - t0
        c1, b1, o1 = cpu_stat(), self.b.cpu_seconds(), own_cpu()
        (c0, s0), (c1, s1) = c0, c1
        n = self.args.records
        mb = n * self.args.value_bytes / 1e6
        res = {"phase": self.name, "topic": self.topic, "records": n, "wall_s": wall,
               "records_per_s": n / wall, "MBps": mb / wall,
               "broker_cpu_s": b1 - b0, "client_cpu_s": o1 - o0,
               "other_cpu_s": (c1 - c0) - (b1 - b0) - (o1 - o0), "steal_cpu_s": s1 - s0, **extra}
        res.update(self.check(res))
        # Keeps the data directory's footprint at one phase: on this VM,
        # memory not touched lately costs about 10 times more to fill
        # (free page reporting hands freed pages back to the host), and a
        # run that keeps every phase's data on tmpfs slows down threefold
        # a few GiB in.
        adm = kutil.admin(self.b.bootstrap)
        adm.delete_topics([self.topic], operation_timeout=30)[self.topic].result(timeout=60)
        return res

    def check(self, res: dict) -> dict:
        """High watermarks and read_committed's LSO after the phase (the
        last commit's markers are written after its EndTxn was answered:
        waits up to 15 s for them)."""
        parts = [TopicPartition(self.topic, p) for p in range(self.args.partitions)]
        c = kutil.consumer(self.b.bootstrap, **{"isolation.level": "read_committed"})

        def settled():
            hw = kutil.high_watermarks(self.b.bootstrap, self.topic, self.args.partitions)
            lso = {tp.partition: c.get_watermark_offsets(tp, timeout=15, cached=False)[1] for tp in parts}
            return (hw, lso) if lso == hw else None
        try:
            hw, lso = kutil.wait_until(settled, 15, 0.1, f"{self.name}: read_committed LSO = high watermark")
        finally:
            c.close()
        total = sum(hw.values())
        markers = total - self.args.records
        if "commits" not in res:
            assert markers == 0, f"{self.name}: {total} records in the log, {self.args.records} produced"
        else:
            assert 0 < markers <= res["commits"] * self.args.partitions, \
                f"{self.name}: {total} offsets for {self.args.records} records and {res['commits']} commits"
        return {"log_offsets": total, "markers": markers}


def run_idem(b, args, name) -> dict:
    ph = Phase(b, args, name)
    p = ph.producer()
    # Before the clock, as init_transactions() is for txn: the producer id,
    # the connection and the topic's metadata.
    p.produce(args.warmup_topic, value=b"warm-up")
    assert p.flush(30) == 0
    p.list_topics(ph.topic, timeout=10)

    def body():
        ph.produce(p, 0, args.records)
        assert p.flush(120) == 0, "records left unacknowledged"
        return {}
    return ph.measure(body)


def run_txn(b, args, name, k: int) -> dict:
    ph = Phase(b, args, name)
    p = ph.producer(**{"transactional.id": kutil.unique("bench-tx"), "transaction.timeout.ms": 60000})
    t = time.perf_counter()
    p.init_transactions(30)
    init_ms = (time.perf_counter() - t) * 1000
    p.list_topics(ph.topic, timeout=10)
    flush_ms, end_ms, txn_ms = [], [], []

    def body():
        for start in range(0, args.records, k):
            t0 = time.perf_counter()
            p.begin_transaction()
            ph.produce(p, start, min(k, args.records - start))
            t1 = time.perf_counter()
            assert p.flush(120) == 0, "records left unacknowledged"
            t2 = time.perf_counter()
            p.commit_transaction(120)
            t3 = time.perf_counter()
            flush_ms.append((t2 - t1) * 1000)
            end_ms.append((t3 - t2) * 1000)
            txn_ms.append((t3 - t0) * 1000)
        return {"txn_records": k, "commits": len(end_ms), "init_transactions_ms": init_ms,
                "flush_ms": flush_ms, "end_txn_ms": end_ms, "txn_ms": txn_ms,
                "commit_ms": [a + c for a, c in zip(flush_ms, end_ms)]}
    return ph.measure(body)


def summarize(phases: list[dict], sizes: list[int], args) -> dict:
    """Per phase: the ratio to the mean of the idempotent phases before and
    after it (drift shows there). Headline: median records/s of a kind of
    phase over the median of the idempotent phases; disturbances on this
    machine only ever slow a phase down, and a median shrugs off the odd
    slowed one where a neighbour's ratio does not."""
    idem = [i for i, r in enumerate(phases) if r["phase"] == "idem"]
    limit = 0.1 * (os.cpu_count() or 1)
    for i, r in enumerate(phases):
        r["disturbed"] = max(r["other_cpu_s"], r["steal_cpu_s"]) > max(0.5, limit * r["wall_s"])
        if r["phase"] == "idem":
            continue
        before = max(j for j in idem if j < i)
        after = min(j for j in idem if j > i)
        base = (phases[before]["records_per_s"] + phases[after]["records_per_s"]) / 2
        r["baseline_records_per_s"] = base
        r["ratio"] = r["records_per_s"] / base
    gb = args.records * args.value_bytes / 1e9

    def kind(rs):
        return {"records_per_s": [r["records_per_s"] for r in rs], "MBps": [r["MBps"] for r in rs],
                "median_records_per_s": statistics.median(r["records_per_s"] for r in rs),
                "median_MBps": statistics.median(r["MBps"] for r in rs),
                "median_broker_cpu_s_per_GB": statistics.median(r["broker_cpu_s"] for r in rs) / gb,
                "median_client_cpu_s_per_GB": statistics.median(r["client_cpu_s"] for r in rs) / gb}
    out = {"idem": kind([phases[i] for i in idem])}
    base = out["idem"]["median_records_per_s"]
    for k in sizes:
        rs = [r for r in phases if r.get("txn_records") == k]
        pool = {key: [x for r in rs for x in r[key]] for key in ("commit_ms", "end_txn_ms", "flush_ms")}
        out[f"txn-{k}"] = s = kind(rs)
        s.update({
            "ratio": s["median_records_per_s"] / base, "neighbour_ratios": [r["ratio"] for r in rs],
            "commits": sum(r["commits"] for r in rs),
            "mean_txn_ms": statistics.mean(x for r in rs for x in r["txn_ms"]),
            **{f"{key[:-3]}_p{q}_ms": quantile(v, q / 100) for key, v in pool.items() for q in (50, 99)},
            "commit_max_ms": max(pool["commit_ms"]),
        })
    return out


def report(phases: list[dict], summary: dict, args, path: Path):
    print(f"\n{args.records:,} records of {args.value_bytes} B per phase, {args.partitions} partitions, "
          f"acks=all, idempotent, linger.ms=5; data on {'disk' if args.data_on_disk else 'tmpfs'}")
    hdr = (f"{'phase':<10} {'rec/s':>9} {'MB/s':>7} {'x idem':>7} {'commits':>7} "
           f"{'txn ms':>6} {'commit p50/p99 ms':>18} {'EndTxn p50/p99 ms':>18} {'CPU s broker/client/other':>26}")
    print(hdr)
    print("-" * len(hdr))
    for r in phases:
        ratio = f"{r['ratio']:.3f}" if "ratio" in r else "-"
        if "commits" in r:
            com = f"{quantile(r['commit_ms'], 0.5):.1f} / {quantile(r['commit_ms'], 0.99):.1f}"
            end = f"{quantile(r['end_txn_ms'], 0.5):.1f} / {quantile(r['end_txn_ms'], 0.99):.1f}"
            n = str(r["commits"])
            txn = f"{statistics.mean(r['txn_ms']):.1f}"
        else:
            com = end = n = txn = "-"
        cpu = f"{r['broker_cpu_s']:.1f} / {r['client_cpu_s']:.1f} / {r['other_cpu_s']:.1f}" + \
            ("*" if r["disturbed"] else " ")
        print(f"{r['phase']:<10} {r['records_per_s']:>9,.0f} {r['MBps']:>7.1f} {ratio:>7} {n:>7} "
              f"{txn:>6} {com:>18} {end:>18} {cpu:>27}")
    print("x idem: against the mean of the idempotent phases just before and after. "
          "*: other processes used > 10 % of the CPUs")
    idem = summary["idem"]
    print(f"\nSummary (medians over the phases of a kind; latencies pooled over the rounds):")
    print(f"  {'':<24} {'rec/s':>9} {'MB/s':>7} {'x idem':>7} {'txn ms':>7} {'commit p50/p99':>15} "
          f"{'EndTxn p50/p99':>15} {'broker CPU s/GB':>16}")
    print(f"  {'idempotent':<24} {idem['median_records_per_s']:>9,.0f} {idem['median_MBps']:>7.1f} {'1':>7} "
          f"{'-':>7} {'-':>15} {'-':>15} {idem['median_broker_cpu_s_per_GB']:>16.2f}")
    for k in args.sizes:
        s = summary[f"txn-{k}"]
        print(f"  {f'txn, {k} records each':<24} {s['median_records_per_s']:>9,.0f} {s['median_MBps']:>7.1f} "
              f"{s['ratio']:>7.3f} {s['mean_txn_ms']:>7.1f} "
              f"{s['commit_p50_ms']:>6.1f} / {s['commit_p99_ms']:<6.1f} "
              f"{s['end_txn_p50_ms']:>6.1f} / {s['end_txn_p99_ms']:<6.1f} {s['median_broker_cpu_s_per_GB']:>16.2f}")
    print("  commit = flush() + commit_transaction(), what a plain commit_transaction() costs; "
          "EndTxn = commit_transaction() after the flush; ms")
    for r in phases:
        if r["disturbed"]:
            print(f"WARNING: machine not quiet: {r['phase']}: other processes used {r['other_cpu_s']:.1f} CPU s "
                  f"(steal {r['steal_cpu_s']:.1f} s) in {r['wall_s']:.1f} s", file=sys.stderr)
    print(f"results: {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000, help="records per phase [200000]")
    ap.add_argument("--txn-sizes", default="50000,1000,100",
                    help="records per transaction, comma-separated [50000,1000,100]")
    ap.add_argument("--rounds", type=int, default=7, help="rounds of (idem, txn-K...) [7]")
    ap.add_argument("--value-bytes", type=int, default=1024, help="record value size [1024]")
    ap.add_argument("--partitions", type=int, default=6, help="partitions per topic [6]")
    ap.add_argument("--data-on-disk", action="store_true", help="data directory on disk instead of /dev/shm")
    ap.add_argument("--keep", action="store_true", help="keep the broker's log and data")
    args = ap.parse_args()
    args.sizes = [int(x) for x in args.txn_sizes.split(",") if x]

    work = Path(tempfile.mkdtemp(prefix="strata-transactions-"))
    data = work / "data" if args.data_on_disk else Path(tempfile.mkdtemp(prefix="strata-transactions-",
                                                                            dir="/dev/shm"))
    b = Broker(data_dir=data, log_dir=work, name="broker")
    phases = []
    t_start = time.monotonic()
    rc, problems = None, []
    try:
        b.start()
        args.warmup_topic = kutil.create_topic(kutil.admin(b.bootstrap), "warm-up", 1)
        plan = []
        for _ in range(args.rounds):
            plan += [("idem", None)] + [(f"txn-{k}", k) for k in args.sizes]
        plan.append(("idem", None))
        for name, k in plan:
            r = run_idem(b, args, name) if k is None else run_txn(b, args, name, k)
            phases.append(r)
            print(f"[transactions] {name}: {r['records_per_s']:,.0f} rec/s, {r['MBps']:.1f} MB/s in "
                  f"{r['wall_s']:.1f} s" + (f", {r['commits']} commits" if k else ""), file=sys.stderr)
        rc = b.stop()
    finally:
        b.close()
        problems = [ln for ln in b.log_text().splitlines() if re.search(r"\b(WARN|ERROR)\b", ln)]
    summary = summarize(phases, args.sizes, args)
    res_dir = REPO / "bench-results"
    res_dir.mkdir(exist_ok=True)
    path = res_dir / f"transactions-{time.strftime('%Y%m%d-%H%M%S')}.json"
    json.dump({"records": args.records, "value_bytes": args.value_bytes, "partitions": args.partitions,
               "txn_sizes": args.sizes, "rounds": args.rounds, "data_on_disk": args.data_on_disk,
               "cpus": os.cpu_count(), "total_s": time.monotonic() - t_start, "broker_exit_code": rc,
               "broker_log_problems": problems[:50], "broker_log_problem_lines": len(problems),
               "summary": summary, "phases": phases}, open(path, "w"), indent=1)
    report(phases, summary, args, path)
    print(f"broker: exit code {rc} on SIGTERM, {len(problems)} WARN/ERROR log lines"
          + "".join(f"\n  {ln}" for ln in problems[:5]))
    if args.keep:
        print(f"kept: the broker's log in {work}, its data in {data}")
    else:
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
