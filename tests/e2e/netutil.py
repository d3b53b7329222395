"""A host that can be cut off the network, for partition tests: a Linux
network namespace joined to the root namespace by a veth pair (Debian's
iproute2; needs root, as the test command runs). Processes started with
`prefix()` live inside it at `inner_ip`; everything that must stay
reachable from inside listens on `outer_ip` (the root side of the pair,
a local address of the root namespace, so root-side processes reach it
too). `cut()` takes the root side down: packets between the namespace
and everything else are dropped, TCP connections stall as in a real
partition; `heal()` brings it back. Failing to build the namespace is a
test failure, never a skip.
"""

from __future__ import annotations

import os
import subprocess


def _ip(*args: str, ns: str | None = None) -> None:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ip", *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed ({r.returncode}): {r.stderr.strip()} "
                           "(network namespaces need root and iproute2)")


class IsolatedHost:
    def __init__(self, tag: str):
        idx = 1 + (os.getpid() + hash(tag)) % 250
        self.ns = f"strata-{tag}-{os.getpid()}"[:40]
        self.outer_if = f"sto{idx}"
        self.inner_if = f"sti{idx}"
        self.outer_ip = f"10.213.{idx}.1"
        self.inner_ip = f"10.213.{idx}.2"
        # Leftovers of an earlier run with the same names.
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.outer_if], capture_output=True)
        _ip("netns", "add", self.ns)
        try:
            _ip("link", "add", self.outer_if, "type", "veth", "peer", "name", self.inner_if)
            _ip("link", "set", self.inner_if, "netns", self.ns)
            _ip("addr", "add", f"{self.outer_ip}/24", "dev", self.outer_if)
            _ip("link", "set", self.outer_if, "up")
            _ip("addr", "add", f"{self.inner_ip}/24", "dev", self.inner_if, ns=self.ns)
            _ip("link", "set", self.inner_if, "up", ns=self.ns)
            _ip("link", "set", "lo", "up", ns=self.ns)
        except Exception:
            self.close()
            raise

    def prefix(self) -> list[str]:
        """Run a command inside the namespace (ip execs it: the pid is the
        command's own)."""
        return ["ip", "netns", "exec", self.ns]

    def cut(self) -> None:
        _ip("link", "set", self.outer_if, "down")

    def heal(self) -> None:
        _ip("link", "set", self.outer_if, "up")

    def close(self) -> None:
        subprocess.run(["ip", "link", "del", self.outer_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
