"""Owned by the differential test (tests/compat/test_differential.py, issue 34).

The machinery that runs one case (cases.py) against one broker and compares
two brokers' answers:

- `Req`: one request, compared. Its body is a nested dict for kclient.build;
  strings "@..." name this case's own topics/groups/ids ("@" alone is the
  case's topic, "@g" a group: the case name is substituted), strings "$var"
  are values an earlier step saved on this broker (a producer id, a member
  id, a topic id, this broker's node id). `save` stores response fields as
  variables; `raw` sends bytes instead (malformed / oversized frames).
- Setup operations: tuples ("create_topic", "@", {...}), ("produce", ...)
  executed by the `Session.op_*` methods; they are not compared, but a
  setup step that fails on one broker fails the case, naming the broker.
- `normalise`: what legitimately differs between two clusters is renamed or
  dropped by declared rules (NORMALISE below, plus a case's own `ignore`),
  never silently: node ids, member/topic/producer ids are renamed to labels
  in order of appearance (so "the same id twice" is still compared), host,
  port and cluster id dropped, error message text recorded beside the
  comparison instead of compared, arrays with a natural key sorted.
- `diff`: field by field, one line per difference.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import socket
import struct
import time
from dataclasses import dataclass, field

import kclient

# ---------------------------------------------------------------------------
# case data


@dataclass
class Req:
    api: str
    version: int
    body: dict | None = None
    label: str = ""
    save: dict = field(default_factory=dict)      # var -> dotted path in the plain response
    raw: bytes | None = None                      # send these bytes instead of a kio request
    fresh_conn: bool = False                      # on a connection of its own
    expect_response: bool = True
    timeout: float = 20.0                         # seconds to wait for the answer
    keep: object = None                           # fn(result, session) -> result: this case's part of a broker-wide list


@dataclass
class Case:
    name: str
    steps: list
    ignore: list = field(default_factory=list)    # extra path globs dropped (declared in the case)
    expected_difference: dict = field(default_factory=dict)  # path glob -> reason (deliberate)
    note: str = ""


# ---------------------------------------------------------------------------
# normalisation

# Field names whose values are per-cluster identities: renamed in order of
# first appearance (per case and broker), sentinels kept as they are.
RENAME = {"node_id", "leader_id", "controller_id", "broker_id", "leader", "coordinator_id",
          "member_id", "topic_id", "producer_id", "replica_nodes", "isr_nodes", "offline_replicas",
          "session_id", "preferred_read_replica", "eligible_leader_replicas", "last_known_elr",
          "group_instance_id_member", "cluster_id", "new_leader"}
# Dropped: addresses and the text of error messages (recorded separately).
DROP = {"host", "port", "error_message", "rack", "batch_index_error_message"}
# Wall-clock times set by the broker: -1 kept, anything else is "<clock>".
CLOCK = {"log_append_time", "transaction_start_time", "transaction_start_time_ms"}
# Natural keys of array elements (the order of these arrays carries no meaning).
SORT_KEYS = ("name", "topic", "partition_index", "partition", "index", "key", "api_key", "group_id",
             "resource_name", "member_id", "config_name", "transactional_id", "node_id", "broker_id",
             "topic_name", "error_code")


# The id families a renamed field belongs to (one numbering per family).
FAMILY = {"node_id": "node", "leader_id": "node", "controller_id": "node", "broker_id": "node", "leader": "node",
          "coordinator_id": "node", "replica_nodes": "node", "isr_nodes": "node", "offline_replicas": "node",
          "preferred_read_replica": "node", "eligible_leader_replicas": "node", "last_known_elr": "node",
          "new_leader": "node"}


class Namer:
    """Renames per-cluster identities to <family><n> in order of first
    appearance; sentinels (-1, null, "", the zero UUID; 0 for session ids)
    are kept."""

    def __init__(self, node_strings=()):
        self.labels: dict = {}
        self.node_strings = set(node_strings)

    def __call__(self, fieldname, value):
        fam = FAMILY.get(fieldname, fieldname)
        if value in (-1, None, "", "00000000-0000-0000-0000-000000000000"):
            return value
        if value == 0 and fam in ("session_id",):
            return value
        k = (fam, value)
        if k not in self.labels:
            n = sum(1 for f, _ in self.labels if f == fam) + 1
            self.labels[k] = f"<{fam}{n}>"
        return self.labels[k]


def _sort_key(d):
    return tuple(str(d.get(k, "")) for k in SORT_KEYS if k in d)


def normalise(x, namer: Namer, messages: list, path: str = "", slug: str = ""):
    if isinstance(x, str) and slug and slug in x:
        return x.replace(slug, "@")  # the case's own names (the slug differs in a self-check)
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            p = f"{path}.{k}" if path else k
            if k in DROP:
                if k in ("error_message", "batch_index_error_message") and v:
                    messages.append((p, v))
                continue
            if k in CLOCK and isinstance(v, int):
                out[k] = v if v < 0 else "<clock>"
            elif k in RENAME:
                if isinstance(v, list):
                    out[k] = [namer(k, i) for i in v]
                else:
                    out[k] = namer(k, v)
            elif k == "resource_name" and v in namer.node_strings:
                out[k] = "<this broker's node id>"
            elif k == "synonyms":  # order is precedence: never sorted
                out[k] = [normalise(e, namer, messages, f"{p}.{i}", slug) for i, e in enumerate(v or [])] \
                    if v is not None else None
            elif k == "records" and isinstance(v, (bytes, bytearray)):
                out[k] = summarise_records(bytes(v), namer)
            else:
                out[k] = normalise(v, namer, messages, p, slug)
        return out
    if isinstance(x, list):
        if x and all(isinstance(e, dict) for e in x) and any(k in x[0] for k in SORT_KEYS):
            x = sorted(x, key=_sort_key)
        return [normalise(e, namer, messages, f"{path}.{i}", slug) for i, e in enumerate(x)]
    if isinstance(x, bytes):
        return x.hex() if len(x) <= 64 else f"<{len(x)} bytes>"
    return x


def drop_paths(x, globs, path=""):
    """Removes the fields whose dotted path matches one of `globs`."""
    if not globs:
        return x
    if isinstance(x, dict):
        return {k: drop_paths(v, globs, f"{path}.{k}" if path else k) for k, v in x.items()
                if not any(fnmatch.fnmatchcase(f"{path}.{k}" if path else k, g) for g in globs)}
    if isinstance(x, list):
        return [drop_paths(v, globs, f"{path}.{i}") for i, v in enumerate(x)]
    return x


def summarise_records(data: bytes, namer: Namer) -> list:
    """Record batches (v2) as their header fields and records, CRC checked;
    the leader epoch and producer id renamed like other ids."""
    out = []
    pos = 0
    while pos + 12 <= len(data):
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + batch_length
        if end > len(data):
            out.append({"partial_batch_bytes": len(data) - pos})
            break
        (_, _, ple, magic, crc, attrs, lod, first_ts, max_ts, pid, pepoch, bseq,
         count) = struct.unpack_from(">qiibIhiqqqhii", data, pos)
        b = {"base_offset": base_offset, "magic": magic, "attributes": attrs,
             "last_offset_delta": lod, "first_timestamp": first_ts, "max_timestamp": max_ts,
             "producer_id": namer("producer_id", pid), "producer_epoch": pepoch,
             "base_sequence": bseq, "record_count": count, "partition_leader_epoch": ple}
        if attrs & 0x20:  # a control batch (transaction marker): written at the broker's clock
            b["first_timestamp"] = b["max_timestamp"] = "<clock>"
        if magic != 2:
            b["undecoded"] = True
            out.append(b)
            pos = end
            continue
        import wire
        b["crc_ok"] = wire.crc32c(data[pos + 21:end]) == crc
        recs = []
        if attrs & 0x07 == 0:
            rpos = pos + 61
            try:
                for _ in range(count):
                    length, rpos = wire.read_zigzag_varint(data, rpos)
                    rend = rpos + length
                    rpos += 1
                    tsd, rpos = wire.read_zigzag_varint(data, rpos)
                    od, rpos = wire.read_zigzag_varint(data, rpos)
                    kl, rpos = wire.read_zigzag_varint(data, rpos)
                    key = None if kl < 0 else data[rpos:rpos + kl].hex()
                    rpos += max(kl, 0)
                    vl, rpos = wire.read_zigzag_varint(data, rpos)
                    val = None if vl < 0 else data[rpos:rpos + vl]
                    recs.append({"offset_delta": od, "timestamp_delta": tsd, "key": key,
                                 "value": val.hex() if val is not None and len(val) <= 64 else
                                 (None if val is None else f"<{len(val)} bytes>")})
                    rpos = rend
            except IndexError:
                recs.append("<truncated>")
        else:
            recs = f"<codec {attrs & 7}>"
        b["records"] = recs
        out.append(b)
        pos = end
    if pos < len(data) and not (out and "partial_batch_bytes" in out[-1]):
        out.append({"trailing_bytes": len(data) - pos})
    return out


def diff(k, s, path="") -> list[str]:
    """Field-by-field differences between Kafka's `k` and Strata's `s`."""
    out = []
    if isinstance(k, dict) and isinstance(s, dict):
        for key in list(k) + [x for x in s if x not in k]:
            p = f"{path}.{key}" if path else key
            if key not in s:
                out.append(f"{p}: kafka={_short(k[key])} strata=<missing>")
            elif key not in k:
                out.append(f"{p}: kafka=<missing> strata={_short(s[key])}")
            else:
                out += diff(k[key], s[key], p)
    elif isinstance(k, list) and isinstance(s, list):
        if len(k) != len(s):
            out.append(f"{path}: kafka_has={len(k)} strata_has={len(s)} elements: "
                       f"kafka={_short(k)} strata={_short(s)}")
        else:
            for i, (a, b) in enumerate(zip(k, s)):
                out += diff(a, b, f"{path}.{i}")
    elif k != s or type(k) is not type(s):
        out.append(f"{path}: kafka={_short(k)} strata={_short(s)}")
    return out


def _short(v, n=300):
    r = repr(v)
    return r if len(r) <= n else r[:n] + "..."


# ---------------------------------------------------------------------------
# one broker's run of one case


class SetupError(AssertionError):
    pass


class Session:
    """One case on one broker: its connection, its variables."""

    def __init__(self, broker_name: str, bootstrap: str, case_name: str):
        self.broker = broker_name
        self.bootstrap = bootstrap
        self.slug = "d-" + re.sub(r"[^a-zA-Z0-9]+", "-", case_name)[:150]
        self.vars: dict = {}
        self.conn = kclient.Conn(bootstrap)
        self.extra_conns: list = []
        self.results: dict = {}
        self.messages: list = []
        self.barriers = 0

    def close(self):
        for c in [self.conn, *self.extra_conns]:
            c.close()

    # -- values ---------------------------------------------------------------
    def resolve(self, v):
        if isinstance(v, str):
            if v.startswith("$"):
                name = v[1:]
                if name.startswith("tid:"):
                    return self.topic_id(self.resolve(name[4:]))
                if name not in self.vars:
                    raise SetupError(f"{self.broker}: variable {name} not set")
                return self.vars[name]
            if v.startswith("@"):
                return self.slug + v[1:]
            return v
        if isinstance(v, dict):
            return {k: self.resolve(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [self.resolve(x) for x in v]
        if callable(v):
            return v(self)
        return v

    def call(self, api, version, conn=None, **body):
        return kclient.plain((conn or self.conn).call(api, version, **body))

    def topic_id(self, name: str) -> str:
        md = self.call("Metadata", 12, topics=[{"name": name}], allow_auto_topic_creation=False)
        return md["topics"][0]["topic_id"]

    def node_strings(self):
        return {str(v) for k, v in self.vars.items() if k == "node"}

    def node_id(self) -> int:
        md = self.call("Metadata", 12, topics=[], allow_auto_topic_creation=False)
        return md["brokers"][0]["node_id"]

    def expect(self, ok: bool, what: str, resp):
        if not ok:
            raise SetupError(f"setup on {self.broker}: {what}: {resp}")

    # -- the compared requests --------------------------------------------------
    def run_req(self, i: int, r: Req):
        label = r.label or f"{i}:{r.api}v{r.version}"
        conn = self.conn
        if r.fresh_conn:
            conn = kclient.Conn(self.bootstrap)
            self.extra_conns.append(conn)
        conn.sock.settimeout(r.timeout)
        if r.raw is not None:
            raw = r.raw(self) if callable(r.raw) else r.raw
            conn.send_raw(raw)
            result = self._raw_outcome(conn, r)
        else:
            body = self.resolve(r.body or {})
            try:
                resp = conn.call(r.api, r.version, _expect_response=r.expect_response, **body)
                result = kclient.plain(resp) if resp is not None else {"no_response": True}
            except (kclient.ConnectionClosed, ConnectionResetError, BrokenPipeError):
                result = {"connection_closed": True}
            except socket.timeout:
                result = {"timed_out": True}
                conn.close()  # the late answer must not be read as the next one
                self.conn = conn = kclient.Conn(self.bootstrap)
        conn.sock.settimeout(20.0)
        if r.keep is not None and isinstance(result, dict) and not result.keys() & {
                "connection_closed", "timed_out", "no_response"}:
            result = r.keep(result, self)
        for var, path in r.save.items():
            v = result
            for part in path.split("."):
                v = v[int(part)] if isinstance(v, list) else v[part]
            self.vars[var] = v
        self.results[label] = result
        if r.api in ("IncrementalAlterConfigs", "AlterConfigs") and r.raw is None \
                and not (r.body or {}).get("validate_only"):
            self.metadata_barrier()

    def metadata_barrier(self):
        """Kafka's brokers apply a config change from the controller's log
        a moment after the alter is answered: until then DescribeConfigs
        shows the old value. They apply that log in order, so once a topic
        created after the change is in Metadata, the change is applied too
        (harmless on Strata, which answers after applying)."""
        self.barriers += 1
        self.op_create_topic(f"{self.slug}-barrier-{self.barriers}", 1)

    def _raw_outcome(self, conn, r: Req):
        """What a raw frame got: a decoded answer or the connection closed."""
        try:
            corr, body = conn.recv_body()
        except (kclient.ConnectionClosed, ConnectionResetError, BrokenPipeError):
            return {"connection_closed": True}
        except socket.timeout:
            return {"timed_out": True}
        if r.api and r.version is not None:
            try:
                return kclient.plain(kclient.decode_response(kclient.api_key(r.api), r.version, body))
            except Exception as e:  # noqa: BLE001 - reported as a difference
                return {"undecodable": type(e).__name__, "bytes": len(body)}
        return {"response_bytes": len(body)}

    # -- setup operations -------------------------------------------------------
    def op_create_topic(self, name, partitions=1, configs=None, wait=True):
        name = self.resolve(name)
        r = self.call("CreateTopics", 7, timeout=30000, validate_only=False, topics=[{
            "name": name, "num_partitions": partitions, "replication_factor": 1,
            "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).items()]}])
        deadline = time.monotonic() + 20
        while r["topics"][0]["error_code"] == 36 and time.monotonic() < deadline:
            # a topic of that name still being deleted
            time.sleep(0.1)
            r = self.call("CreateTopics", 7, timeout=30000, validate_only=False, topics=[{
                "name": name, "num_partitions": partitions, "replication_factor": 1,
                "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).items()]}])
        self.expect(r["topics"][0]["error_code"] == 0, f"CreateTopics {name}", r)
        if wait:
            self.wait_topic(name, partitions)

    def wait_topic(self, name, partitions, timeout=20.0):
        """Until Metadata shows every partition with a leader and ListOffsets answers."""
        deadline = time.monotonic() + timeout
        while True:
            md = self.call("Metadata", 12, topics=[{"name": name}], allow_auto_topic_creation=False)
            t = md["topics"][0]
            ok = t["error_code"] == 0 and len(t["partitions"]) == partitions and all(
                p["error_code"] == 0 and p["leader_id"] >= 0 for p in t["partitions"])
            if ok:
                lo = self.call("ListOffsets", 7, topics=[{"name": name, "partitions": [
                    {"partition_index": p, "timestamp": -1} for p in range(partitions)]}])
                if all(p["error_code"] == 0 for p in lo["topics"][0]["partitions"]):
                    self.vars[f"tid:{name}"] = t["topic_id"]
                    return
            if time.monotonic() > deadline:
                raise SetupError(f"setup on {self.broker}: topic {name} not ready in {timeout}s: {md}")
            time.sleep(0.05)

    def op_wait_topic(self, name, partitions=1):
        self.wait_topic(self.resolve(name), partitions)

    def op_delete_topic(self, name):
        name = self.resolve(name)
        r = self.call("DeleteTopics", 6, timeout=30000, topics=[{"name": name}])
        self.expect(r["responses"][0]["error_code"] == 0, f"DeleteTopics {name}", r)
        self.op_delete_topic_wait(name)

    def op_delete_topic_wait(self, name):
        """Until Metadata no longer knows the topic."""
        name = self.resolve(name)
        deadline = time.monotonic() + 20
        while True:
            md = self.call("Metadata", 12, topics=[{"name": name}], allow_auto_topic_creation=False)
            if md["topics"][0]["error_code"] == 3:
                return
            if time.monotonic() > deadline:
                raise SetupError(f"setup on {self.broker}: topic {name} still there: {md}")
            time.sleep(0.05)

    def op_produce(self, topic, partition=0, n=3, ts=1_700_000_000_000, key=None, value_prefix="v",
                   pid=-1, epoch=-1, seq=-1, transactional=None, version=9, acks=-1, expect_error=0):
        """One batch of `n` records, timestamps ts, ts+1000, ...; `transactional`: the
        transactional id (the batch is then transactional)."""
        import wire
        topic = self.resolve(topic)
        recs = [wire.Rec(None if key is None else key.encode(), f"{value_prefix}{i}".encode(), ts + 1000 * i)
                for i in range(n)]
        batch = wire.encode_batch(recs, attributes=0x10 if transactional else 0,
                                  producer_id=self.resolve(pid), producer_epoch=self.resolve(epoch),
                                  base_sequence=self.resolve(seq))
        r = self.call("Produce", version, acks=acks, timeout=30000, transactional_id=self.resolve(transactional),
                      topic_data=[{
            "name": topic, "partition_data": [{"index": partition, "records": batch}]}])
        pr = r["responses"][0]["partition_responses"][0]
        self.expect(pr["error_code"] == expect_error, f"Produce to {topic}-{partition}", r)
        return pr

    def op_init_producer(self, var, transactional_id=None, timeout=60000):
        """InitProducerId; saves $<var>_pid and $<var>_epoch."""
        tid = self.resolve(transactional_id)
        deadline = time.monotonic() + 30
        while True:
            r = self.call("InitProducerId", 4, transactional_id=tid, transaction_timeout=timeout,
                          producer_id=-1, producer_epoch=-1)
            if r["error_code"] in (15, 14, 51) and time.monotonic() < deadline:  # coordinator loading / concurrent
                time.sleep(0.1)
                continue
            break
        self.expect(r["error_code"] == 0, f"InitProducerId {tid}", r)
        self.vars[f"{var}_pid"] = r["producer_id"]
        self.vars[f"{var}_epoch"] = r["producer_epoch"]

    def op_add_partitions(self, txn, var, topic, partitions=(0,)):
        r = self.call("AddPartitionsToTxn", 3, v3_and_below_transactional_id=self.resolve(txn),
                      v3_and_below_producer_id=self.vars[f"{var}_pid"],
                      v3_and_below_producer_epoch=self.vars[f"{var}_epoch"],
                      v3_and_below_topics=[{"name": self.resolve(topic), "partitions": list(partitions)}])
        errs = [p["partition_error_code"] for t in r["results_by_topic_v3_and_below"]
                for p in t["results_by_partition"]]
        self.expect(all(e == 0 for e in errs), "AddPartitionsToTxn", r)

    def op_end_txn(self, txn, var, commit=True):
        deadline = time.monotonic() + 20
        while True:
            r = self.call("EndTxn", 3, transactional_id=self.resolve(txn), producer_id=self.vars[f"{var}_pid"],
                          producer_epoch=self.vars[f"{var}_epoch"], committed=commit)
            if r["error_code"] == 51 and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            break
        self.expect(r["error_code"] == 0, "EndTxn", r)

    def op_wait_lso(self, topic, partition, offset):
        """Until ListOffsets read_committed latest reaches `offset` (markers written)."""
        topic = self.resolve(topic)
        deadline = time.monotonic() + 20
        while True:
            r = self.call("ListOffsets", 7, isolation_level=1, topics=[{"name": topic, "partitions": [
                {"partition_index": partition, "timestamp": -1}]}])
            if r["topics"][0]["partitions"][0]["offset"] >= offset:
                return
            if time.monotonic() > deadline:
                raise SetupError(f"setup on {self.broker}: LSO of {topic} below {offset}: {r}")
            time.sleep(0.05)

    def op_join(self, group, var, topics=("@",), protocol_type="consumer", session=10000, rebalance=10000,
                instance=None, sync=True, conn=None):
        """A whole JoinGroup (v5, MEMBER_ID_REQUIRED round) + SyncGroup as leader; saves
        $<var>_member, $<var>_gen."""
        g = self.resolve(group)
        meta = _subscription([self.resolve(t) for t in topics])
        body = dict(group_id=g, session_timeout=session, rebalance_timeout=rebalance,
                    protocol_type=protocol_type, group_instance_id=self.resolve(instance),
                    protocols=[{"name": "range", "metadata": meta}])
        member = ""
        for _ in range(3):
            r = self.call("JoinGroup", 5, member_id=member, **body)
            if r["error_code"] == 79:
                member = r["member_id"]
                continue
            break
        self.expect(r["error_code"] == 0, f"JoinGroup {g}", r)
        self.vars[f"{var}_member"] = r["member_id"]
        self.vars[f"{var}_gen"] = r["generation_id"]
        if sync:
            assignment = [{"member_id": m["member_id"], "assignment": b""} for m in r["members"]]
            s = self.call("SyncGroup", 3, group_id=g, generation_id=r["generation_id"], member_id=r["member_id"],
                          group_instance_id=self.resolve(instance), assignments=assignment)
            self.expect(s["error_code"] == 0, f"SyncGroup {g}", s)

    def op_join_pending(self, group, var, topics=("@",)):
        """A second member's JoinGroup sent on a connection of its own and not
        waited for: the group is then preparing a rebalance."""
        g = self.resolve(group)
        meta = _subscription([self.resolve(t) for t in topics])
        c = kclient.Conn(self.bootstrap)
        self.extra_conns.append(c)
        body = dict(group_id=g, session_timeout=10000, rebalance_timeout=10000, protocol_type="consumer",
                    group_instance_id=None, protocols=[{"name": "range", "metadata": meta}])
        r = kclient.plain(c.call("JoinGroup", 5, member_id="", **body))
        self.expect(r["error_code"] == 79, "JoinGroup (pending) first round", r)
        self.vars[f"{var}_member"] = r["member_id"]
        c.call("JoinGroup", 5, member_id=r["member_id"], _expect_response=False, **body)
        self.wait_group_state(group, "PreparingRebalance")

    def wait_group_state(self, group, state, timeout=10.0):
        g = self.resolve(group)
        deadline = time.monotonic() + timeout
        while True:
            r = self.call("DescribeGroups", 5, groups=[g], include_authorized_operations=False)
            if r["groups"][0]["group_state"] == state:
                return
            if time.monotonic() > deadline:
                raise SetupError(f"setup on {self.broker}: group {g} not {state}: {r}")
            time.sleep(0.05)

    def op_wait_group_state(self, group, state):
        self.wait_group_state(group, state)

    def op_leave(self, group, var):
        r = self.call("LeaveGroup", 4, group_id=self.resolve(group),
                      members=[{"member_id": self.vars[f"{var}_member"], "group_instance_id": None}])
        self.expect(r["error_code"] == 0, "LeaveGroup", r)

    def op_commit(self, group, topic, offsets: dict, var=None):
        member = self.vars[f"{var}_member"] if var else ""
        gen = self.vars[f"{var}_gen"] if var else -1
        r = self.call("OffsetCommit", 8, group_id=self.resolve(group), generation_id_or_member_epoch=gen,
                      member_id=member, group_instance_id=None, topics=[{"name": self.resolve(topic), "partitions": [
                          {"partition_index": p, "committed_offset": o, "committed_metadata": ""}
                          for p, o in offsets.items()]}])
        self.expect(all(p["error_code"] == 0 for t in r["topics"] for p in t["partitions"]), "OffsetCommit", r)

    def op_delete_group(self, group):
        r = self.call("DeleteGroups", 2, groups_names=[self.resolve(group)])
        self.expect(r["results"][0]["error_code"] == 0, "DeleteGroups", r)

    def op_alter_configs(self, resource_type, name, configs: dict):
        """IncrementalAlterConfigs, then until DescribeConfigs on this
        connection shows every SET value and no DELETEd key as dynamic.
        Kafka answers the alter once its controller committed it, and its
        broker applies the record to the image DescribeConfigs reads a
        little later: a describe at once saw the deleted retention.ms=4444
        still set (2026-12-07)."""
        r = self.call("IncrementalAlterConfigs", 1, validate_only=False, resources=[{
            "resource_type": resource_type, "resource_name": self.resolve(name),
            "configs": [{"name": k, "config_operation": op, "value": v} for k, (op, v) in configs.items()]}])
        self.expect(r["responses"][0]["error_code"] == 0, "IncrementalAlterConfigs", r)
        SET, DELETE = 0, 1
        DYNAMIC = {1, 2, 3}   # config_source: topic, broker, cluster-wide broker default
        want = {k: (op, v) for k, (op, v) in configs.items() if op in (SET, DELETE)}
        if not want:
            return
        deadline = time.monotonic() + 20
        while True:
            d = self.call("DescribeConfigs", 4, include_synonyms=False, include_documentation=False, resources=[{
                "resource_type": resource_type, "resource_name": self.resolve(name),
                "configuration_keys": list(want)}])
            res = d["results"][0]
            seen = {c["name"]: c for c in res["configs"]}
            if res["error_code"] == 0 and all(
                    k in seen and (seen[k]["value"] == v if op == SET else seen[k]["config_source"] not in DYNAMIC)
                    for k, (op, v) in want.items()):
                return
            if time.monotonic() > deadline:
                raise SetupError(f"setup on {self.broker}: IncrementalAlterConfigs {want} not visible "
                                 f"in DescribeConfigs after 20 s: {d}")
            time.sleep(0.05)

    def op_node_id(self, var="node"):
        self.vars[var] = str(self.node_id())
        self.vars[var + "_int"] = self.node_id()

    def op_set(self, var, value):
        self.vars[var] = self.resolve(value)

    def op_sleep_until_ms(self, ms):
        """Only for time itself being the condition (a timestamp in the past)."""
        time.sleep(ms / 1000)


def op(name: str, *args, **kwargs):
    """A setup operation: Session.op_<name>(*args, **kwargs)."""
    if not hasattr(Session, f"op_{name}"):
        raise AttributeError(f"no setup operation {name}")
    return (name, args, kwargs)


def _subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        b = t.encode()
        out += struct.pack(">h", len(b)) + b
    return out + struct.pack(">i", -1)


def run_case(case: Case, broker_name: str, bootstrap: str) -> Session:
    s = Session(broker_name, bootstrap, case.name)
    try:
        for i, step in enumerate(case.steps):
            if isinstance(step, Req):
                s.run_req(i, step)
            else:
                name, args, kwargs = step
                getattr(s, f"op_{name}")(*args, **kwargs)
    finally:
        s.close()
    return s


def compare(case: Case, k: Session, s: Session):
    """(unexpected differences, deliberate differences seen) after normalisation."""
    nk, ns = Namer(k.node_strings()), Namer(s.node_strings())
    kn = drop_paths(normalise(k.results, nk, k.messages, slug=k.slug), case.ignore)
    sn = drop_paths(normalise(s.results, ns, s.messages, slug=s.slug), case.ignore)
    lines = diff(kn, sn)
    unexpected, deliberate = [], []
    for line in lines:
        path = line.split(": kafka", 1)[0]  # every line is "<path>: kafka..."
        hit = next((g for g in case.expected_difference
                    if fnmatch.fnmatchcase(path, g) or fnmatch.fnmatchcase(path, g + ".*")), None)
        (deliberate if hit else unexpected).append(line)
    return unexpected, deliberate, kn, sn
