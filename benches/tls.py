#!/usr/bin/env python3
"""Produce and consume over SASL_SSL against PLAINTEXT, Strata and Apache
Kafka side by side, in one run (issue 36).

Started by benches/tls.sh, which provides the broker (STRATA_BIN),
librdkafka's rdkafka_performance (RDKAFKA_PERFORMANCE), the test venv
(cryptography for the certificates) and Apache Kafka's jars.

Each broker has two listeners: PLAINTEXT, and SASL_SSL with PLAIN (a PEM
key store, an EC P-256 certificate; TLS 1.3, as both negotiate with
librdkafka). PLAIN, not SCRAM: the mechanism costs once per connection,
and Debian's librdkafka 2.0.2, which rdkafka_performance links, fails
SCRAM-SHA-512 against Apache Kafka and Strata alike ("invalid
credentials"; librdkafka 2.16, in confluent-kafka, passes both). Rounds alternate the systems (Kafka, Strata, ...), each
on a fresh broker with an empty data directory:

  warm-up   --warmup-mb produced and consumed over PLAINTEXT (not
            measured; Kafka's JIT compiles its hot paths meanwhile).
  produce   rdkafka_performance -P: --mb of --record-size records, acks=all
            (Kafka acknowledges from the page cache, Strata after its
            group commit, as in benches/vs_kafka.sh), --partitions
            partitions, linger.ms 5; once over each listener, the order of
            the two alternating between rounds.
  consume   rdkafka_performance -C: the same records from offset 0 of every
            partition, over the listener they were written through.

The summary gives, per system and phase, the median MB/s over each
listener, the SASL_SSL / PLAINTEXT ratio (the issue's goal: at least
0.8), and Strata / Kafka per listener. Results:
bench-results/tls-<time>.json, with the commands and the brokers' logs.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benches"))

import vs_kafka  # noqa: E402  (its path setup, Tools, metadata and readiness)
from vs_kafka import KafkaCluster, Tools, log, metadata, wait_for  # noqa: E402
from strata_broker import Broker, check_binary, free_port  # noqa: E402
import tlsutil  # noqa: E402

ADMIN = ("admin", "admin-secret")
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              f'user_{ADMIN[0]}="{ADMIN[1]}";')
PRESETS = {
    "tiny": dict(rounds=1, mb=16, warmup_mb=4),
    "quick": dict(rounds=3, mb=256, warmup_mb=64),
    "full": dict(rounds=5, mb=1024, warmup_mb=128),
}
LISTENERS = ("PLAINTEXT", "SASL_SSL")


def sasl_ssl_args(tls) -> list[str]:
    return ["-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=PLAIN",
            "-X", f"sasl.username={ADMIN[0]}", "-X", f"sasl.password={ADMIN[1]}",
            "-X", f"ssl.ca.location={tls.ca}"]


class StrataTls:
    name = "strata"

    def __init__(self, base: Path, tls, partitions: int):
        self.b = Broker(data_dir=base / "strata" / "data", log_dir=base / "strata", name="strata",
                        listeners={"PLAINTEXT": "PLAINTEXT", "CLIENT": "SASL_SSL"},
                        settings={"num.partitions": partitions, "group.initial.rebalance.delay.ms": 0,
                                  "remote.log.storage.system.enable": "false",
                                  "sasl.enabled.mechanisms": "PLAIN",
                                  "listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS,
                                  "ssl.keystore.type": "PEM", "ssl.keystore.location": str(tls.broker)})

    def start(self):
        self.b.start()

    def addr(self, listener: str) -> str:
        return self.b.bootstrap if listener == "PLAINTEXT" else self.b.bootstrap_for("CLIENT")

    def command(self) -> str:
        return " ".join(self.b.command())

    def logs(self) -> list[Path]:
        return [self.b.log_path]

    def close(self):
        self.b.kill9()


class KafkaTls:
    name = "kafka"

    def __init__(self, base: Path, tls, partitions: int):
        self.client_port = free_port()
        self.cluster = KafkaCluster(nodes=1, base_dir=base / "kafka", port_source=free_port,
                                    heap="-Xmx1G -Xms1G")
        n = self.cluster.nodes[0]
        self.cluster.settings.update({
            "num.partitions": partitions,
            "listeners": f"PLAINTEXT://127.0.0.1:{n.port},CLIENT://127.0.0.1:{self.client_port},"
                         f"CONTROLLER://127.0.0.1:{n.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{n.port},CLIENT://127.0.0.1:{self.client_port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CLIENT:SASL_SSL",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS,
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(tls.broker),
        })

    def start(self):
        self.cluster.start()

    def addr(self, listener: str) -> str:
        n = self.cluster.nodes[0]
        return n.bootstrap if listener == "PLAINTEXT" else f"127.0.0.1:{self.client_port}"

    def command(self) -> str:
        n = self.cluster.nodes[0]
        return ", ".join(f"{k}={v}" for k, v in self.cluster._properties(n).items())

    def logs(self) -> list[Path]:
        return [n.log_path for n in self.cluster.nodes]

    def close(self):
        self.cluster.kill9(1)


def one_round(cls, rnd: int, args, base: Path, tls) -> dict:
    work = base / f"{cls.name}-{rnd}"
    work.mkdir(parents=True)
    tools = Tools(args, work)
    system = cls(work, tls, args.partitions)
    out = {"system": cls.name, "round": rnd, "phases": {}}
    try:
        system.start()
        wait_for(lambda: metadata(system.addr("PLAINTEXT"), [], timeout=2)["brokers"] or None,
                 60, f"{cls.name} answering Metadata")
        out["command"] = system.command()
        extra = {"PLAINTEXT": [], "SASL_SSL": sasl_ssl_args(tls)}
        n = args.mb * 1_000_000 // args.record_size
        warm = max(1, args.warmup_mb * 1_000_000 // args.record_size)
        r = tools.rk_produce(system.addr("PLAINTEXT"), "warmup", warm, "all", "warmup-produce")
        out["phases"]["warmup"] = {"ok": r["ok"] and tools.rk_consume(
            system.addr("PLAINTEXT"), "warmup", warm, "warmup-consume")["ok"]}
        order = list(LISTENERS) if rnd % 2 == 0 else list(reversed(LISTENERS))
        for listener in order:
            topic = f"bench-{listener.lower()}"
            p = tools.rk_produce(system.addr(listener), topic, n, "all", f"produce-{listener}",
                                 linger=5, extra=extra[listener])
            out["phases"][f"produce {listener}"] = p
            log(f"{cls.name} round {rnd} produce {listener}: {p.get('MBps')} MB/s ok={p['ok']}")
        for listener in order:
            topic = f"bench-{listener.lower()}"
            c = tools.rk_consume(system.addr(listener), topic, n, f"consume-{listener}", extra[listener])
            out["phases"][f"consume {listener}"] = c
            log(f"{cls.name} round {rnd} consume {listener}: {c.get('MBps')} MB/s ok={c['ok']}")
    finally:
        system.close()
        out["logs"] = [str(p) for p in system.logs()]
    return out


def summarize(rounds: list[dict]) -> dict:
    def median(system: str, phase: str):
        vals = [r["phases"][phase]["MBps"] for r in rounds
                if r["system"] == system and r["phases"].get(phase, {}).get("ok")]
        return statistics.median(vals) if vals else None

    def ratio(a, b):
        return round(a / b, 3) if a and b else None

    out = {}
    for phase in ("produce", "consume"):
        row = {}
        for system in ("kafka", "strata"):
            plain = median(system, f"{phase} PLAINTEXT")
            sasl = median(system, f"{phase} SASL_SSL")
            row[system] = {"PLAINTEXT_MBps": plain, "SASL_SSL_MBps": sasl, "SASL_SSL_over_PLAINTEXT": ratio(sasl, plain)}
        row["strata_over_kafka"] = {
            listener: ratio(row["strata"][f"{listener}_MBps"], row["kafka"][f"{listener}_MBps"])
            for listener in LISTENERS}
        out[phase] = row
    return out


def markdown(summary: dict) -> str:
    lines = ["| phase | system | PLAINTEXT MB/s | SASL_SSL MB/s | SASL_SSL / PLAINTEXT |",
             "|---|---|---|---|---|"]
    for phase, row in summary.items():
        for system in ("kafka", "strata"):
            s = row[system]
            lines.append(f"| {phase} | {system} | {s['PLAINTEXT_MBps']} | {s['SASL_SSL_MBps']} | "
                         f"{s['SASL_SSL_over_PLAINTEXT']} |")
        r = row["strata_over_kafka"]
        lines.append(f"| {phase} | Strata / Kafka | {r['PLAINTEXT']} | {r['SASL_SSL']} | |")
    return "\n".join(lines)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="quick")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--mb", type=int, help="MB produced (and consumed) per listener and round")
    ap.add_argument("--warmup-mb", type=int)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--phase-timeout", type=float, default=600)
    ap.add_argument("--work-dir", default=tempfile.gettempdir())
    ap.add_argument("--rdkafka-performance", default=os.environ.get("RDKAFKA_PERFORMANCE")
                    or str(REPO / "target" / "bench-tools" / "rdkafka_performance"))
    a = ap.parse_args(argv)
    for k, v in PRESETS[a.preset].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    return a


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    check_binary()
    if not os.access(args.rdkafka_performance, os.X_OK):
        print(f"rdkafka_performance not found at {args.rdkafka_performance}; run benches/tls.sh",
              file=sys.stderr)
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(tempfile.mkdtemp(prefix=f"tls-{stamp}-", dir=args.work_dir))
    tls = tlsutil.make_tls(base / "tls")
    rounds = []
    for rnd in range(args.rounds):
        for cls in (KafkaTls, StrataTls):
            rounds.append(one_round(cls, rnd, args, base, tls))
    summary = summarize(rounds)
    results = REPO / "bench-results"
    results.mkdir(exist_ok=True)
    path = results / f"tls-{stamp}.json"
    path.write_text(json.dumps({"command": os.environ.get("TLS_BENCH_COMMAND", "benches/tls.sh"),
                                "args": vars(args), "machine": vs_kafka.machine_info(base),
                                "rounds": rounds, "summary": summary}, indent=2))
    print(markdown(summary))
    print(f"\nresults: {path}")
    failed = [f"{r['system']} round {r['round']} {p}" for r in rounds for p, v in r["phases"].items()
              if not v.get("ok")]
    if failed:
        print("failed phases: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
