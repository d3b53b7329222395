"""fsync failure: the broker stops (exit code 70) rather than acknowledge a
write the disk may not hold, and after a restart every acknowledged record
is there. The failure is injected by a small LD_PRELOAD shim, built here
with the machine's C compiler, that makes fsync and fdatasync fail with EIO
while a flag file exists (tests only; the broker has no switch for it)."""

import os
import subprocess
import time

import pytest

import kutil
import wire

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static int failing(void) {
    const char *flag = getenv("STRATA_TEST_FAIL_FSYNC_FLAG");
    return flag && access(flag, F_OK) == 0;
}
int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (failing()) { errno = EIO; return -1; }
    return real(fd);
}
int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    if (failing()) { errno = EIO; return -1; }
    return real(fd);
}
"""


@pytest.fixture(scope="module")
def fsync_shim(tmp_path_factory):
    d = tmp_path_factory.mktemp("shim")
    (d / "failfsync.c").write_text(SHIM)
    cc = os.environ.get("CC", "cc")
    r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(d / "failfsync.so"), str(d / "failfsync.c"),
                        "-ldl"], capture_output=True, text=True)
    assert r.returncode == 0, f"could not build the fsync shim with {cc}: {r.stderr}"
    return d / "failfsync.so"


def test_fsync_failure_stops_the_broker_and_loses_nothing_acknowledged(broker_factory, fsync_shim, tmp_path):
    flag = tmp_path / "fail-fsync"
    b = broker_factory({"num.partitions": 1, "remote.log.storage.system.enable": "false"},
                       env={"LD_PRELOAD": str(fsync_shim), "STRATA_TEST_FAIL_FSYNC_FLAG": str(flag)})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("fsync"), 1)
    acked = [b"before-%03d" % i for i in range(50)]
    kutil.produce(b.bootstrap, topic, [{"value": v} for v in acked])
    mark = b.log_size()
    flag.touch()
    with wire.KafkaConn.to(b.bootstrap) as c:
        batch = wire.encode_batch([wire.Rec(None, b"never-acknowledged", int(time.time() * 1000))])
        c.send_request(wire.API_PRODUCE, 3, wire.produce_v3_body(-1, 30000, {topic: {0: batch}}))
        closed = c.wait_closed(timeout=30)
    assert closed is None, f"the broker answered an acks=all produce whose fsync failed: {closed}"
    deadline = time.monotonic() + 30
    while b.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not b.alive(), "the broker kept running after an fsync failure"
    assert b.proc.returncode == 70, f"exit code {b.proc.returncode}, expected 70"
    log = b.log_text(start=mark)
    assert "fsync failed; stopping the broker" in log, log[-2000:]
    flag.unlink()
    b.start()
    res = kutil.consume(b.bootstrap, topic, [0], expected=len(acked))
    assert not res.errors
    values = [m.value for m in res.messages]
    assert values[:len(acked)] == acked, "an acknowledged record is missing after the restart"
    # The unacknowledged one may or may not be there (it reached the page
    # cache); nothing else may.
    assert values[len(acked):] in ([], [b"never-acknowledged"]), values[len(acked):]
