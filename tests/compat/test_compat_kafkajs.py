"""The compatibility scenario (scenario.py) with kafkajs (Node.js, its own
protocol code), one `node kafkajs/scenario.js STAGE` process per stage: the
admin client for topics, committed offsets, end offsets and offsets by
timestamp; the producer; a consumer group member. Codecs: gzip (built in),
snappy (kafkajs-snappy, pure JS). kafkajs is installed by `npm ci` in
tests/compat/kafkajs (package-lock.json pins it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import scenario

HERE = Path(__file__).resolve().parent / "kafkajs"
CODECS = ("none", "gzip", "snappy")
NATIVE = ("kafkajs has no built-in {0} codec and the {0} codec packages published for it ({1}) are "
          "native addons built with node-gyp; not installed (FINDINGS.md)")
SKIP = {"produce_lz4": NATIVE.format("lz4", "kafkajs-lz4 -> lz4"),
        "produce_zstd": NATIVE.format("zstd", "@kafkajs/zstd -> cppzst")}
XFAIL: dict = {}
INSTALL = ("install it with `npm ci --prefix tests/compat/kafkajs` (scripts/test.sh does; Node.js 20 and npm "
           "are needed: `apt-get install -y nodejs npm`)")


class Driver:
    name = "kafkajs"
    explicit_timestamps = True
    none_is_end = True   # fetchTopicOffsetsByTimestamp answers the high watermark for "none"

    def __init__(self, bs: str, node: str):
        self.bs = bs
        self.node = node
        v = self._call("versions", {}, timeout=30)
        self.version = f"{v['kafkajs']} (kafkajs-snappy {v['kafkajs-snappy']}, node {v['node']})"

    def _call(self, command: str, args: dict, timeout: float = 90):
        with tempfile.TemporaryDirectory(prefix="compat-kafkajs-") as d:
            inp, out = Path(d) / "in.json", Path(d) / "out.json"
            inp.write_text(json.dumps({"bootstrap": self.bs, **args}))
            p = subprocess.run([self.node, str(HERE / "scenario.js"), command, str(inp), str(out)],
                               cwd=HERE, capture_output=True, text=True, timeout=timeout)
            res = json.loads(out.read_text()) if out.exists() else {}
        if p.stderr:
            print(f"--- kafkajs {command} stderr ---\n{p.stderr[-6000:]}")
        assert p.returncode == 0 and "ok" in res, \
            f"kafkajs {command} exited {p.returncode}: {res.get('error')}\nstderr:\n{p.stderr[-4000:]}"
        return res["ok"]

    def create_topic(self, topic, partitions):
        self._call("create-topic", {"topic": topic, "partitions": partitions})

    def produce(self, topic, codec, recs):
        acks = self._call("produce", {"topic": topic, "codec": codec,
                                      "records": [{"seq": r.seq, "key": r.key, "value": r.value, "ts": r.ts}
                                                  for r in recs]})
        by_seq = {a["seq"]: a for a in acks}
        for r in recs:
            r.partition, r.offset = by_seq[r.seq]["partition"], by_seq[r.seq]["offset"]
        return recs

    def consume_group(self, topic, group, count, describe):
        res = self._call("consume", {"topic": topic, "group": group, "count": count, "describe": describe})
        got = [scenario.parse(p, o, k, v, ts) for p, o, k, v, ts in res["records"]]
        live = self._description(res["described"]) if describe else None
        return got, {int(p): o for p, o in res["committed"].items()}, live

    def group_offsets(self, topic, group):
        res = self._call("group-offsets", {"topic": topic, "group": group})
        return {int(p): (c, e) for p, (c, e) in res.items()}

    @staticmethod
    def _description(g):
        assert g["errorCode"] == 0, f"DescribeGroups error {g['errorCode']}"
        return g["state"], len(g["members"]), g["protocolType"]

    def describe_group(self, group):
        return self._description(self._call("describe-group", {"group": group}))

    def offsets_for_times(self, topic, timestamps):
        res = self._call("offsets-for-times", {"topic": topic, "timestamps": timestamps})
        return {int(t): {int(p): (o if o >= 0 else None, None) for p, o in ps.items()} for t, ps in res.items()}


def _missing() -> str | None:
    node = shutil.which("node")
    if node is None:
        return f"node is not on PATH: {INSTALL}"
    for pkg in ("kafkajs", "kafkajs-snappy"):
        if not (HERE / "node_modules" / pkg / "package.json").is_file():
            return f"{pkg} is not installed in {HERE / 'node_modules'}: {INSTALL}"
    return None


@pytest.fixture(scope="module")
def kafkajs_run(compat_broker):
    return scenario.run_client(_missing(), lambda: Driver(compat_broker.bootstrap, shutil.which("node")),
                               compat_broker, CODECS, "kafkajs")


@pytest.mark.parametrize("step", scenario.steps(skip=SKIP, xfail=XFAIL))
def test_kafkajs(step, kafkajs_run):
    scenario.check(kafkajs_run, step)
