"""The compatibility scenario (scenario.py) with aiokafka (asyncio, its own
protocol code): AIOKafkaAdminClient for topics and committed offsets,
AIOKafkaProducer, AIOKafkaConsumer for the group, end offsets and
offsets_for_times. Codecs: gzip (stdlib); snappy, lz4 and zstd through
cramjam (one PyPI wheel)."""

from __future__ import annotations

import asyncio
import time

import pytest

import scenario

CODECS = scenario.ALL_CODECS
XFAIL: dict = {}
INSTALL = "install it with `.venv/bin/pip install -r tests/requirements.txt` (scripts/test.sh does)"

try:
    import aiokafka
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
except ImportError as e:  # a missing client fails every step, never skips
    aiokafka = None
    IMPORT_ERROR = str(e)


class Driver:
    name = "aiokafka"
    explicit_timestamps = True
    none_is_end = False

    def __init__(self, bs: str):
        self.bs = bs
        self.version = aiokafka.__version__
        self.common = dict(bootstrap_servers=bs, request_timeout_ms=30000)

    def create_topic(self, topic, partitions):
        async def go():
            adm = AIOKafkaAdminClient(**self.common)
            await adm.start()
            try:
                res = await adm.create_topics([NewTopic(name=topic, num_partitions=partitions,
                                                        replication_factor=1)], timeout_ms=30000)
                errs = [e for e in getattr(res, "topic_errors", []) if e[1] != 0]
                assert not errs, f"CreateTopics errors {errs}"
            finally:
                await adm.close()
        asyncio.run(go())

    def produce(self, topic, codec, recs):
        from aiokafka import codec as acodec
        has = {"none": True, "gzip": acodec.has_gzip(), "snappy": acodec.has_snappy(),
               "lz4": acodec.has_lz4(), "zstd": acodec.has_zstd()}
        assert has[codec], f"aiokafka has no {codec} codec: the PyPI package cramjam is missing; {INSTALL}"

        async def go():
            p = AIOKafkaProducer(acks="all", compression_type=None if codec == "none" else codec,
                                 linger_ms=20, **self.common)
            await p.start()
            try:
                futs = [await p.send(topic, key=r.key.encode(), value=r.value.encode(), timestamp_ms=r.ts)
                        for r in recs]
                for r, md in zip(recs, await asyncio.wait_for(asyncio.gather(*futs), 60)):
                    # The broker answered log_append_time -1 (CreateTime). md.timestamp is not
                    # used: aiokafka 0.14.0 hands every record of a batch the first record's
                    # timestamp (MessageBatch.done overwrites its `timestamp`; FINDINGS.md).
                    assert md.timestamp_type == 0, f"seq {r.seq}: timestamp type {md.timestamp_type}, not CreateTime"
                    r.partition, r.offset = md.partition, md.offset
            finally:
                await p.stop()
        asyncio.run(go())
        return recs

    def consume_group(self, topic, group, count, describe):
        async def go():
            c = AIOKafkaConsumer(topic, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
                                 session_timeout_ms=10000, heartbeat_interval_ms=500, fetch_max_wait_ms=100,
                                 **self.common)
            await c.start()
            got, nxt = [], {}
            try:
                deadline = time.monotonic() + 45
                while len(got) < count:
                    assert time.monotonic() < deadline, f"group member got {len(got)} of {count} records in 45 s"
                    batch = await c.getmany(timeout_ms=500, max_records=10)
                    for recs in batch.values():
                        for m in recs:
                            if len(got) == count:
                                break   # fetched but not processed: not committed
                            got.append(scenario.parse(m.partition, m.offset, m.key, m.value, m.timestamp))
                            nxt[m.partition] = m.offset + 1
                await c.commit({TopicPartition(topic, p): o for p, o in nxt.items()})
                live = await self._describe(group) if describe else None
            finally:
                await c.stop()   # LeaveGroup; no autocommit
            return got, nxt, live
        return asyncio.run(go())

    def group_offsets(self, topic, group):
        tps = [TopicPartition(topic, p) for p in range(scenario.PARTITIONS)]

        async def go():
            adm = AIOKafkaAdminClient(**self.common)
            await adm.start()
            try:
                res = await adm.list_consumer_group_offsets(group, partitions=tps)
            finally:
                await adm.close()
            # aiokafka's admin client has no ListOffsets: end offsets from a group-less consumer
            c = AIOKafkaConsumer(**self.common)
            await c.start()
            try:
                end = await c.end_offsets(tps)
            finally:
                await c.stop()
            return res, end
        res, end = asyncio.run(go())
        committed = {tp.partition: (om.offset if om.offset >= 0 else None) for tp, om in res.items()}
        return {p: (committed.get(p), end[TopicPartition(topic, p)]) for p in range(scenario.PARTITIONS)}

    async def _describe(self, group):
        adm = AIOKafkaAdminClient(**self.common)
        await adm.start()
        try:
            [resp] = await adm.describe_consumer_groups([group])
        finally:
            await adm.close()
        # raw DescribeGroups response: (error, group, state, protocol type, protocol, members, ...)
        [g] = resp.groups
        assert g[0] == 0, f"DescribeGroups error {g[0]}"
        return g[2], len(g[5]), g[3]

    def describe_group(self, group):
        return asyncio.run(self._describe(group))

    def offsets_for_times(self, topic, timestamps):
        tps = [TopicPartition(topic, p) for p in range(scenario.PARTITIONS)]

        async def go():
            c = AIOKafkaConsumer(**self.common)
            await c.start()
            out = {}
            try:
                for t in timestamps:
                    res = await c.offsets_for_times({tp: t for tp in tps})
                    out[t] = {tp.partition: ((ot.offset, ot.timestamp) if ot is not None else (None, None))
                              for tp, ot in res.items()}
            finally:
                await c.stop()
            return out
        return asyncio.run(go())


@pytest.fixture(scope="module")
def aiokafka_run(compat_broker):
    missing = aiokafka is None and f"aiokafka is not installed ({IMPORT_ERROR}): {INSTALL}"
    return scenario.run_client(missing, lambda: Driver(compat_broker.bootstrap), compat_broker, CODECS,
                               "aiokafka")


@pytest.mark.parametrize("step", scenario.steps(xfail=XFAIL))
def test_aiokafka(step, aiokafka_run):
    scenario.check(aiokafka_run, step)
