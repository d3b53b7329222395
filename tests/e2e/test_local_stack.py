"""strata-s3 (local-stack/, docs/local-stack.md) with clients this project
did not write: boto3 for the S3 API (aws-chunked uploads with trailing
checksums, ranges, URL-encoded listings, pagination, multipart, conditional
writes, batch delete), and the broker tiering to it, then rebuilt from it
with an empty data dir, read back byte for byte with librdkafka."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from botocore.exceptions import ClientError

import kutil
import tierutil as tu
from strata_broker import REPO_ROOT, free_port, port_accepts
from tierutil import KiB, MiB

BUCKET = "strata"


def _bin() -> Path:
    p = Path(os.environ.get("STRATA_S3_BIN") or REPO_ROOT / "target" / "release" / "strata-s3")
    if not p.is_file():
        pytest.fail(f"strata-s3 not found at {p}: build it with `cargo build --release -p strata-local-stack` "
                    "(scripts/test.sh does) or set STRATA_S3_BIN", pytrace=False)
    return p


@pytest.fixture(scope="module")
def strata_s3(tmp_path_factory):
    work = tmp_path_factory.mktemp("strata-s3")
    port = free_port()
    log = open(work / "strata-s3.log", "ab")
    proc = subprocess.Popen([str(_bin()), "--listen", f"127.0.0.1:{port}", "--root", str(work / "root"),
                             "--bucket", BUCKET], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not port_accepts("127.0.0.1", port):
        assert proc.poll() is None and time.monotonic() < deadline, \
            f"strata-s3 did not start: {(work / 'strata-s3.log').read_text(errors='replace')[-2000:]}"
        time.sleep(0.05)
    endpoint = f"http://127.0.0.1:{port}"
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_ACCESS_KEY_ID": "dev",
           "AWS_SECRET_ACCESS_KEY": "dev-secret", "AWS_REGION": "us-east-1"}
    yield SimpleNamespace(endpoint=endpoint, root=work / "root", client=tu.s3_client(endpoint), env=env)
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


def _code(e: ClientError) -> str:
    return e.response["Error"]["Code"]


def test_boto3_objects_ranges_listings_and_deletes(strata_s3):
    s3 = strata_s3.client
    base = kutil.unique("api")
    body = bytes(range(256)) * 40
    put = s3.put_object(Bucket=BUCKET, Key=f"{base}/plain.bin", Body=body)
    # The object is a plain file under the root, byte for byte.
    assert (strata_s3.root / BUCKET / base / "plain.bin").read_bytes() == body
    head = s3.head_object(Bucket=BUCKET, Key=f"{base}/plain.bin")
    assert head["ContentLength"] == len(body) and head["ETag"] == put["ETag"]
    got = s3.get_object(Bucket=BUCKET, Key=f"{base}/plain.bin", Range="bytes=1000-1999")
    assert got["ContentRange"] == f"bytes 1000-1999/{len(body)}"
    assert got["Body"].read() == body[1000:2000]
    assert s3.get_object(Bucket=BUCKET, Key=f"{base}/plain.bin", Range="bytes=-10")["Body"].read() == body[-10:]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=BUCKET, Key=f"{base}/plain.bin", Range=f"bytes={len(body)}-")
    assert _code(e.value) == "InvalidRange"

    # Keys that need escaping in URLs and XML survive listing (boto3 asks
    # for encoding-type=url and decodes).
    odd = [f"{base}/dir/a b+c.txt", f"{base}/dir/ü&<x>.txt", f"{base}/dir/sub/deep.txt", f"{base}/top.txt"]
    for k in odd:
        s3.put_object(Bucket=BUCKET, Key=k, Body=k.encode())
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{base}/", Delimiter="/")
    assert sorted(c["Key"] for c in listed["Contents"]) == [f"{base}/plain.bin", f"{base}/top.txt"]
    assert [p["Prefix"] for p in listed["CommonPrefixes"]] == [f"{base}/dir/"]
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{base}/dir/",
                                                             PaginationConfig={"PageSize": 1}):
        assert page["KeyCount"] <= 1
        keys += [c["Key"] for c in page.get("Contents", [])]
    assert keys == sorted(odd[:3]), keys
    for k in odd:
        assert s3.get_object(Bucket=BUCKET, Key=k)["Body"].read() == k.encode()

    s3.copy_object(Bucket=BUCKET, Key=f"{base}/copy.bin", CopySource={"Bucket": BUCKET, "Key": f"{base}/plain.bin"})
    assert s3.get_object(Bucket=BUCKET, Key=f"{base}/copy.bin")["Body"].read() == body

    gone = [f"{base}/plain.bin", f"{base}/copy.bin", *odd]
    r = s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in gone]})
    assert sorted(d["Key"] for d in r["Deleted"]) == sorted(gone) and not r.get("Errors")
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{base}/")["KeyCount"] == 0
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=BUCKET, Key=f"{base}/plain.bin")
    assert _code(e.value) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket="no-such-bucket")
    assert _code(e.value) == "NoSuchBucket"


def test_boto3_multipart_and_conditional_writes(strata_s3):
    from boto3.s3.transfer import TransferConfig
    s3 = strata_s3.client
    base = kutil.unique("mp")
    data = os.urandom(13 * MiB)
    s3.upload_fileobj(io.BytesIO(data), BUCKET, f"{base}/big.bin",
                      Config=TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB))
    got = s3.get_object(Bucket=BUCKET, Key=f"{base}/big.bin")["Body"].read()
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    assert list((strata_s3.root / ".strata-s3" / "uploads").iterdir()) == [], \
        "a completed upload left its parts behind"

    # S3 refuses parts under 5 MiB other than the last; so does strata-s3.
    up = s3.create_multipart_upload(Bucket=BUCKET, Key=f"{base}/small-parts.bin")["UploadId"]
    parts = [{"PartNumber": n, "ETag": s3.upload_part(Bucket=BUCKET, Key=f"{base}/small-parts.bin", UploadId=up,
                                                      PartNumber=n, Body=b"x" * KiB)["ETag"]} for n in (1, 2)]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=BUCKET, Key=f"{base}/small-parts.bin", UploadId=up,
                                     MultipartUpload={"Parts": parts})
    assert _code(e.value) == "EntityTooSmall"
    s3.abort_multipart_upload(Bucket=BUCKET, Key=f"{base}/small-parts.bin", UploadId=up)
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=BUCKET, Key=f"{base}/small-parts.bin", UploadId=up, PartNumber=3, Body=b"y")
    assert _code(e.value) == "NoSuchUpload"

    # Create-if-absent and compare-and-swap, as the catalog uses them.
    key = f"{base}/manifest.json"
    first = s3.put_object(Bucket=BUCKET, Key=key, Body=b"v1", IfNoneMatch="*")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"v1-again", IfNoneMatch="*")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    second = s3.put_object(Bucket=BUCKET, Key=key, Body=b"v2", IfMatch=first["ETag"])
    assert second["ETag"] != first["ETag"]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"stale", IfMatch=first["ETag"])
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"v2"


def test_broker_tiers_to_strata_s3_and_rebuilds_from_it(broker_factory, strata_s3, tmp_path):
    """The developer's loop: a broker on strata-s3 tiers a topic, a reader
    from offset 0 gets every record from the bucket, and a broker started
    with an empty data dir rebuilds the topic from the bucket alone."""
    bucket = tu.S3Bucket(strata_s3.client, kutil.unique("dev"))
    bucket.env = strata_s3.env
    b = tu.s3_broker(broker_factory, bucket)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("local-stack")
    seg = 256 * KiB
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(seg), "local.retention.ms": "1000"})
    ds = tu.DataSet(seed=11, ts0=tu.ms_ago(10))
    n = 6000
    tu.produce_range(b.bootstrap, topic, ds, 0, n)
    start = tu.wait_hot_tail(b, bucket, topic, 0, 2 * seg, 60)
    assert start > 0
    m = tu.wait_settled(b, bucket, topic, 0, 60)
    tu.check_segment_objects(bucket, m)
    assert tu.verify_range(b.bootstrap, topic, ds, 0, n) == n
    assert b.stop() == 0

    fresh = tu.s3_broker(broker_factory, bucket, data_dir=tmp_path / "empty-data-dir")
    kutil.wait_topic_ready(kutil.admin(fresh.bootstrap), topic, 1)
    remote_end = tu.check_manifest(m)
    assert tu.verify_range(fresh.bootstrap, topic, ds, 0, remote_end) == remote_end
