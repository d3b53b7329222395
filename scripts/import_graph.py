#!/usr/bin/env python3
"""The import graph of each workspace crate: which source file uses which.

    scripts/import_graph.py            # report loops and layering violations; exit 1 if any
    scripts/import_graph.py --dot      # the graph, in Graphviz dot

A file imports another when it names an item through `crate::a::b`,
`super::x` or `self::x` paths (in `use` lines and inline paths), resolved
to the file that defines module `a::b`. `mod.rs`/`lib.rs` re-exports are
edges too. Test modules (`*_tests.rs`, `tests.rs`, `#[cfg(test)] mod
tests` blocks) are left out: a test may reach anywhere. The test command
runs this and fails on a loop (docs/architecture.md), on a file importing
what its layer may not (LAYERS, docs/partition-layer.md), or on a crate
depending on one below which it must stay (CRATE_DEPS).

The broker re-exports its lower crates' modules under their old names
(`pub use strata_storage::{log, ...}` in lib.rs); `crate::log::x` in the
broker resolves to the storage crate's file, so rules name it as before."""

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ["broker", "broker/common", "broker/storage", "broker/cluster", "broker/coordinators",
          "broker/protocol", "broker/security",
          "broker/cli", "catalog", "catalog/format", "tiering",
          "prefetch", "local-stack"]
# The top-level modules a crate re-exports from a lower crate, by that
# crate's directory (broker/src/lib.rs).
REEXPORTS = {
    "broker": {
        "broker/common": ["clock", "config", "durable_file", "metrics_family", "topic_name"],
        "broker/storage": ["fd_limit", "log", "log_manager", "meta_properties", "topic_error"],
        "broker/cluster": ["cluster", "coordinator_log", "coordinator_ownership", "producer_ids",
                           "replication"],
        "broker/coordinators": ["group", "txn"],
        "broker/protocol": ["decode_bounds", "tools"],
    },
}
PATH = re.compile(r"\b(crate|super|self)((?:::[a-z_][a-z0-9_]*)+)")
# A grouped import, `use crate::{a::b, c}` (one level of braces).
GROUP = re.compile(r"\b(crate|super|self)((?:::[a-z_][a-z0-9_]*)*)::\{([^{}]*)\}")


def module_files(src: Path) -> dict[tuple, Path]:
    """Module path (tuple of names) -> file, for every .rs file under src."""
    mods = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts in (["lib"], ["main"]):
            parts = []
        elif parts[-1] == "mod":
            parts = parts[:-1]
        mods[tuple(parts)] = f
    return mods


def strip_tests(text: str) -> str:
    """Drops `#[cfg(test)] mod x { ... }` blocks and `#[path] mod` lines."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def graph(crate: str) -> dict[Path, set[Path]]:
    src = ROOT / crate / "src"
    own = module_files(src)
    by_file = {f: m for m, f in own.items()}
    # Paths resolve to this crate's files and to the re-exported modules'.
    mods = dict(own)
    for lower, names in REEXPORTS.get(crate, {}).items():
        mods.update({m: f for m, f in module_files(ROOT / lower / "src").items() if m and m[0] in names})
    edges: dict[Path, set[Path]] = {}
    for f, mod in by_file.items():
        if f.name.endswith("_tests.rs") or f.name == "tests.rs" or "fuzz_targets" in f.name:
            continue
        text = strip_tests(re.sub(r"//[^\n]*", "", f.read_text()))
        here = mod if f.name in ("mod.rs", "lib.rs", "main.rs") else mod[:-1]
        targets = set()
        paths = PATH.findall(text)
        for kind, prefix, items in GROUP.findall(text):
            for item in items.split(","):
                m = re.match(r"\s*([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)", item)
                if m and m.group(1) not in ("self",):
                    paths.append((kind, f"{prefix}::{m.group(1)}"))
        for kind, rest in paths:
            names = rest.strip(":").split("::")
            base = () if kind == "crate" else (here[:-1] if kind == "super" else here)
            if kind == "super" and f.name not in ("mod.rs", "lib.rs", "main.rs"):
                base = mod[:-1]
            path = base + tuple(names)
            # The longest prefix that is a module file.
            for n in range(len(path), len(base), -1):
                t = mods.get(path[:n])
                if t is not None:
                    if t != f:
                        targets.add(t)
                    break
        edges[f] = targets
    return edges


def cycles(edges: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def is_parent_module(a: Path, b: Path) -> bool:
    """`a` is the mod.rs/lib.rs that declares the module `b` lives in."""
    return a.name in ("mod.rs", "lib.rs", "main.rs") and b.parent == a.parent or \
        (a.name in ("mod.rs",) and b.parent.parent == a.parent and b.name == "mod.rs")


# Layering rules (docs/partition-layer.md): files of a crate that must not
# import modules of it, with why. Grows as the partition layer takes over
# the handlers.
LAYERS = [
    ("broker", ["server/handlers/*.rs"], ["log", "log_manager"],
     "a handler reaches partitions through crate::partition, never the log"),
    ("broker", ["admin/*.rs", "server/topic_admin.rs", "server/config_admin.rs", "partition/*.rs"],
     ["server/handlers"],
     "the admin API and the services below the handlers never call a handler"),
    ("broker/storage", ["log/*.rs"], ["partition"],
     "the local log knows nothing of replicas: the partition above it checks roles and"
     " hands it the epoch to stamp and the high watermark's bound (partition/mod.rs)"),
]

# Files that may not name something, with why: a handler that took the
# broker's log manager (`b.logs`) or tiered storage (`b.remote`) would
# reach the log or the bucket without an import; the log may not name the
# crates of the bucket. Test files are left out, as above.
FIELDS = [
    ("broker", ["server/handlers/*.rs"], re.compile(r"\.(logs|remote)\b"),
     "a handler reaches partitions and the bucket through b.replicas"),
    ("broker", ["partition/*.rs"], re.compile(r"\bstrata_tiering\b"),
     "the partition layer reads the catalog through its shared ManifestView"
     " (strata_catalog) and reaches the uploader only through TieredStorage"),
    *[(c, ["**/*.rs"], re.compile(r'\.value\("[a-z0-9]+(?:\.[a-z0-9]+)+"\)'),
       "code reads a broker setting from config.settings() (typed, parsed once),"
       " not by name (config/settings.rs)") for c in ("broker", "broker/common", "broker/storage", "broker/cluster",
                                                "broker/coordinators")],
    ("broker/coordinators", ["group/coordinator.rs", "group/join.rs", "group/timers.rs", "group/offsets.rs",
                "group/txn_offsets.rs", "group/loading.rs", "group/group.rs",
                "txn/coordinator.rs", "txn/completion.rs", "txn/loading.rs"],
     re.compile(r"\b(?:Instant::now|SystemTime::now|clock::now_ms)\(\)|(?<![\w.])now_ms\(\)|\.elapsed\(\)"),
     "the coordinators read time from their injected clock (self.clock), so tests"
     " move time instead of sleeping (clock.rs)"),
    ("broker/storage", ["log/*.rs", "log_manager/*.rs"],
     re.compile(r"\b(?:SystemTime::now|clock::now_ms)\(\)|(?<![\w.])now_ms\(\)"),
     "the log reads wall time (timestamps, retention, segment.ms, compaction lag)"
     " from the log manager's clock (self.clock), never the machine's"),
    ("broker/storage", ["log/partition_log.rs"], re.compile(r"\b(?:TieredPart|CleanerState|CleanerStats)\b"),
     "the log holds no cleaner state and no handle to the bucket: the log manager keeps"
     " them beside it (log/cleaner_state.rs) and a pass is handed the bucket's part"),
    ("broker/storage", ["partition/mod.rs", "partition/replicas.rs", "partition/replica_state.rs"],
     re.compile(r"\b(?:Instant::now|SystemTime::now)\(\)|\.elapsed\(\)"),
     "follower progress and the ISR's lag are read on the log's clock (log().clock()),"
     " so tests move time instead of sleeping"),
]


def module_rel(crate: str, t: Path) -> str:
    """`t` as a path under the src of the crate it lives in (this crate or
    one whose modules it re-exports): `log/partition_log.rs`."""
    for c in [crate, *REEXPORTS.get(crate, {})]:
        src = ROOT / c / "src"
        if t.is_relative_to(src):
            return t.relative_to(src).as_posix()
    return t.as_posix()


def crate_deps() -> list[str]:
    """Crates that depend on one they must stay below (CRATE_DEPS)."""
    out = []
    for crate, allowed, why in CRATE_DEPS:
        manifest = tomllib.loads((ROOT / crate / "Cargo.toml").read_text())
        deps = {d for d in manifest.get("dependencies", {}) if d.startswith("strata-")}
        for name in sorted(deps - set(allowed)):
            out.append(f"{crate}/Cargo.toml depends on {name}: {why}")
    return out


# The workspace crates each crate may depend on (its floor); any other
# `strata-*` crate in its [dependencies] fails the check, so the graph of
# crates makes the lowest layering rules compile errors. Tests may use more.
CRATE_DEPS = [
    ("catalog/format", [], "the format does no I/O and knows no other crate"),
    ("catalog", ["strata-format"], "the catalog knows no other crate but the format"),
    ("tiering", ["strata-catalog", "strata-format"], "the uploader uses the catalog only"),
    ("prefetch", ["strata-catalog", "strata-format"],
     "the history reader's engine uses the catalog only"),
    ("broker/protocol", [],
     "what the broker and its clients share about the protocol holds no broker state"),
    ("broker/security", [],
     "principals, ACLs and the authorizer are pure: the cluster stores bindings and the"
     " server asks, both from above"),
    ("broker/cli", ["strata-protocol"],
     "the CLI is a Kafka client: the codec, strata-protocol and the admin API over HTTP,"
     " never the broker's state"),
    ("broker/common", ["strata-format", "strata-prefetch", "strata-security"],
     "settings, the clock and topic names sit below the log and the broker (the"
     " history-read settings parse into strata-prefetch's types, the listeners'"
     " into strata-security's)"),
    ("broker/storage", ["strata-common", "strata-format"],
     "the local log knows strata-format and its settings, never the bucket"
     " (the broker attaches a log::tiered_part::TieredPart)"),
    ("broker/cluster", ["strata-common", "strata-storage", "strata-security"],
     "the cluster replicates local logs; the bucket, the coordinators and the server are above it"),
    ("broker/coordinators", ["strata-common", "strata-storage", "strata-cluster", "strata-protocol",
                             "strata-format"],
     "the coordinators keep their state in the local log and follow the cluster;"
     " the server and the bucket are above them"),
]



def layering(crate: str, edges: dict[Path, set[Path]]) -> list[str]:
    src = ROOT / crate / "src"
    out = []
    for c, files, banned, why in LAYERS:
        if c != crate:
            continue
        for f in sorted(g for name in files for g in src.glob(name)):
            for t in sorted(edges.get(f, ())):
                rel = module_rel(crate, t)
                if any(rel == f"{b}.rs" or rel.startswith(f"{b}/") for b in banned):
                    out.append(f"{crate}: {f.relative_to(ROOT)} imports {t.relative_to(ROOT)}: {why}")
    for c, files, pattern, why in FIELDS:
        if c != crate:
            continue
        for f in sorted(g for name in files for g in src.glob(name)):
            if f.name.endswith("_tests.rs") or f.name == "tests.rs":
                continue
            text = strip_tests(re.sub(r"//[^\n]*", "", f.read_text()))
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                out.append(f"{crate}: {f.relative_to(ROOT)} names `{m.group(0)}` (line {line} without comments): {why}")
    return out


def main():
    dot = "--dot" in sys.argv
    found = 0
    for violation in ([] if dot else crate_deps()):
        found += 1
        print(violation)
    for crate in CRATES:
        edges = graph(crate)
        for violation in ([] if dot else layering(crate, edges)):
            found += 1
            print(violation)
        # A module's own mod.rs re-exporting its children is not a loop
        # worth reporting: drop parent -> child edges.
        pruned = {f: {t for t in ts if not is_parent_module(f, t)} for f, ts in edges.items()}
        if dot:
            print(f'digraph "{crate}" {{')
            for f, ts in sorted(pruned.items()):
                for t in sorted(ts):
                    print(f'  "{f.relative_to(ROOT)}" -> "{t.relative_to(ROOT)}";')
            print("}")
            continue
        for comp in cycles(pruned):
            found += 1
            names = sorted(str(p.relative_to(ROOT)) for p in comp)
            print(f"{crate}: import loop between {', '.join(names)}")
            for a in comp:
                for b in pruned[a]:
                    if b in comp:
                        print(f"    {a.relative_to(ROOT)} -> {b.relative_to(ROOT)}")
    if not dot:
        print(f"{found} import loop(s) or layering violation(s) in {len(CRATES)} crates")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
