#!/usr/bin/env python3
"""Writes messages.rs: the wire layout of every Kafka request (and of the
consumer protocol's subscription and assignment), one table entry per field,
from Kafka's published message definitions.

    python3 broker/protocol/src/decode_bounds/gen_messages.py KAFKA_MESSAGE_DIR KAFKA_PROTOCOL_SRC

KAFKA_MESSAGE_DIR is clients/src/main/resources/common/message of an Apache
Kafka checkout; KAFKA_PROTOCOL_SRC is the kafka-protocol crate's src/ (only
its file names are read, to know which messages the codec has). The table
says which fields each version carries and how each is encoded; the sizes of
decoded elements come from the codec's own types (size_of), so the compiler
checks every name. Rerun when the codec crate or the protocol moves.
"""
import json
import os
import re
import sys

MAX = "MAX"

# Versions Strata serves beyond the checkout this table is written from
# (trunk of 2024-09), each with the same fields as the version before it in
# Kafka's newer definition: DescribeGroups v6 (KIP-1043, Kafka 4.0) only
# changes the answer for an unknown group.
NEWER_VERSIONS = {"DescribeGroupsRequest": 6}


def strip_comments(text):
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))


def versions(spec):
    spec = (spec or "none").strip()
    if spec == "none":
        return None
    if spec.endswith("+"):
        return (int(spec[:-1]), MAX)
    if "-" in spec:
        a, b = spec.split("-")
        return (int(a), int(b))
    return (int(spec), int(spec))


def snake(name):
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return s.lower()


PRIMS = {
    "bool": ("Bool", "bool"), "int8": ("I8", "i8"), "int16": ("I16", "i16"),
    "uint16": ("U16", "u16"), "int32": ("I32", "i32"),
    "int64": ("I64", "i64"), "float64": ("F64", "f64"),
    "uuid": ("Uuid", "[u8; 16]"),
    "string": ("Str", "kafka_protocol::protocol::StrBytes"),
    "bytes": ("Bytes", "bytes::Bytes"), "records": ("Records", "bytes::Bytes"),
}


class Gen:
    def __init__(self, msg, module):
        self.msg = msg
        self.module = module
        self.common = {s["name"]: s for s in msg.get("commonStructs", [])}
        self.structs = []  # (const name, rust lines)
        self.seen = {}

    def const_name(self, struct):
        return f"{snake(self.msg['name']).upper()}__{snake(struct).upper()}"

    def struct_fields(self, name, fields):
        cname = self.const_name(name)
        if cname in self.seen:
            return cname
        self.seen[cname] = True
        lines = [self.field(f) for f in fields]
        lines = [l for l in lines if l]
        self.structs.append((cname, lines))
        return cname

    def type_expr(self, f):
        t = f["type"]
        if t.startswith("[]"):
            inner = t[2:]
            if inner in PRIMS:
                variant, rust = PRIMS[inner]
                return f"T::Array(size_of::<{rust}>(), &T::{variant})"
            fields = f.get("fields") or self.common[inner]["fields"]
            c = self.struct_fields(inner, fields)
            rust = f"kafka_protocol::messages::{self.module}::{inner}"
            return f"T::Array(size_of::<{rust}>(), &T::Struct({c}))"
        if t in PRIMS:
            return f"T::{PRIMS[t][0]}"
        fields = f.get("fields") or self.common[t]["fields"]
        c = self.struct_fields(t, fields)
        nv = versions(f.get("nullableVersions"))
        if nv is not None:
            return f"T::OptStruct(V({nv[0]}, {nv[1]}), {c})"
        return f"T::Struct({c})"

    def field(self, f):
        v = versions(f.get("versions"))
        if v is None:
            return None
        tv = versions(f.get("taggedVersions"))
        ty = self.type_expr(f)
        vs = f"V({v[0]}, {v[1]})"
        if tv is not None:
            return f'F::tagged("{f["name"]}", {vs}, {f["tag"]}, V({tv[0]}, {tv[1]}), {ty}),'
        return f'F::new("{f["name"]}", {vs}, {ty}),'

    def message(self):
        top = self.struct_fields(self.msg["name"], self.msg["fields"])
        valid = versions(self.msg["validVersions"])
        if self.msg["name"] in NEWER_VERSIONS:
            valid = (valid[0], NEWER_VERSIONS[self.msg["name"]])
        flex = versions(self.msg.get("flexibleVersions"))
        flex_from = flex[0] if flex else "i16::MAX"
        out = []
        for cname, lines in self.structs:
            out.append(f"const {cname}: &[F] = &[")
            out += [f"    {l}" for l in lines]
            out.append("];")
        mname = snake(self.msg["name"]).upper()
        out.append(
            f'pub static {mname}: Message = Message {{ name: "{self.msg["name"]}", '
            f"valid: V({valid[0]}, {valid[1]}), flexible_from: {flex_from}, fields: {top} }};")
        return mname, out


def main():
    spec_dir, crate_src = sys.argv[1], sys.argv[2]
    have = {f[:-3] for f in os.listdir(os.path.join(crate_src, "messages"))}
    requests, data = [], []
    body = []
    for fname in sorted(os.listdir(spec_dir)):
        if not fname.endswith(".json"):
            continue
        msg = json.loads(strip_comments(open(os.path.join(spec_dir, fname)).read()))
        kind = msg.get("type")
        if kind == "request":
            pass
        elif kind == "data" and msg["name"] in ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment"):
            pass
        else:
            continue
        module = snake(msg["name"])
        if module not in have:
            continue
        mname, lines = Gen(msg, module).message()
        body.append("")
        body += lines
        if kind == "request":
            requests.append((msg["apiKey"], mname))
        else:
            data.append(mname)
    out = [
        "//! The wire layout of each Kafka request, and of the consumer protocol's",
        "//! subscription and assignment: which fields each version carries, in order,",
        "//! and how each is encoded. Written by `gen_messages.py` from Kafka's",
        "//! message definitions (Apache Kafka, trunk of 2024-09, which carries every",
        "//! version Kafka 3.9 serves); do not edit by hand.",
        "",
        "#![allow(clippy::all)]",
        "",
        "use std::mem::size_of;",
        "",
        "use super::schema::{Field as F, Message, Type as T, V};",
        "",
        "const MAX: i16 = i16::MAX;",
        "",
        "/// The layout of API `api_key`'s request body.",
        "pub fn request(api_key: i16) -> Option<&'static Message> {",
        "    Some(match api_key {",
    ]
    for key, m in sorted(requests):
        out.append(f"        {key} => &{m},")
    out += ["        _ => return None,", "    })", "}", "", "/// Every request layout, by API key.",
            "#[cfg(test)]", "pub const REQUESTS: &[(i16, &Message)] = &["]
    for key, m in sorted(requests):
        out.append(f"    ({key}, &{m}),")
    out.append("];")
    out += body
    print("\n".join(out))


main()
