"""The console page (issue 19), loaded in a real headless browser (Debian's
chromium): the broker serves it, it calls the admin API with the token
it was given, and it draws topics with local vs remote bytes per
partition, groups with per-partition lag and catch-up state, and the
tiering progress. What it draws is read back from the DOM Chromium
rendered (data-* attributes on the chart rows) and compared with the
API's answers; a screenshot is saved next to the broker's log.
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser

import pytest

import kutil
import tierutil as tu
from apiutil import AdminApi

TOKEN = "console-test-token-0123456789"


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is not installed (scripts/test.sh installs Debian's chromium)", pytrace=False)


def render(url: str, profile, screenshot=None) -> str:
    """The DOM after the page's scripts ran (its API calls answered)."""
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
            "--virtual-time-budget=8000", "--window-size=1280,1600"]
    if screenshot is not None:
        subprocess.run(base + [f"--screenshot={screenshot}", url], capture_output=True, timeout=120)
    r = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "<html" in r.stdout, r.stderr[-3000:]
    return r.stdout


class Dom(HTMLParser):
    """Elements with their attributes, and the text under chosen ids."""

    def __init__(self, html: str):
        super().__init__()
        self.elements: list[tuple[str, dict]] = []
        self.text: dict[str, str] = {}
        self._open: list[str | None] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if tag not in ("br", "input", "meta", "img", "rect", "i"):
            self._open.append(a.get("id"))
            if a.get("id"):
                self.text.setdefault(a["id"], "")

    def handle_endtag(self, tag):
        if self._open and tag not in ("br", "input", "meta", "img", "rect", "i"):
            self._open.pop()

    def handle_data(self, data):
        for i in self._open:
            if i:
                self.text[i] += data

    def with_class(self, cls: str) -> list[dict]:
        return [a for _, a in self.elements if cls in (a.get("class") or "").split()]

    def by_id(self, id_: str) -> dict | None:
        return next((a for _, a in self.elements if a.get("id") == id_), None)


def test_console_draws_topics_groups_and_tiering(broker_factory, tmp_path):
    b, bucket = tu.file_broker(broker_factory, {"group.lag.sample.interval.ms": 200,
                                                "group.lag.window.ms": 2000},
                               env={"STRATA_HTTP_TOKEN": TOKEN})
    api = AdminApi(b, token=TOKEN)
    adm = kutil.admin(b.bootstrap)
    tiered = kutil.unique("console-tiered")
    api.call("POST", "/api/v1/topics", {"name": tiered, "partitions": 1, "configs": {
        "segment.bytes": str(256 * 1024), "local.retention.ms": "1000"}}, expect=201)
    tu.produce_range(b.bootstrap, tiered, tu.DataSet(seed=5, ts0=tu.ms_ago(10)), 0, 1500)
    tu.wait_settled(b, bucket, tiered, 0, 60)

    lagging = kutil.create_topic(adm, kutil.unique("console-lag"), partitions=3)
    group = kutil.group_with_offsets(b.bootstrap, lagging, 40, {0: 40, 1: 40, 2: 5}, "console-group",
                                     value=b"x" * 100)

    def measured():
        _, d = api.get(f"/api/v1/groups/{group}", expect=200)
        states = {x["partition"]: x["catch_up"]["state"] for x in d["partitions"]}
        return d if states == {0: "caught_up", 1: "caught_up", 2: "not_catching_up"} else None
    kutil.wait_until(measured, 30, 0.3, "the group's catch-up states measured")

    url = f"http://127.0.0.1:{b.http_port}/"
    # Without the token the page asks for it and shows no data.
    dom = Dom(render(url, tmp_path / "profile-1"))
    assert "display: block" in (dom.by_id("auth").get("style") or ""), dom.by_id("auth")
    assert not dom.with_class("partition") and not dom.with_class("group-partition")

    shot = b.log_path.parent / "console.png"
    dom = Dom(render(url + "#token=" + TOKEN, tmp_path / "profile-2", screenshot=shot))
    assert shot.exists() and shot.stat().st_size > 10_000, "no screenshot"
    assert "display: block" not in (dom.by_id("auth").get("style") or "")
    assert dom.text.get("error", "").strip() == "", dom.text.get("error")
    assert dom.text["node-id"].strip() == "0"
    assert dom.text["store-state"].strip() == "available"

    # Topics: local vs remote bytes per partition, as the API says.
    _, td = api.get(f"/api/v1/topics/{tiered}", expect=200)
    rows = {(a["data-topic"], int(a["data-partition"])): a for a in dom.with_class("partition")}
    drawn = rows[(tiered, 0)]
    tier = td["partitions"][0]["local"]["tiering"]
    assert int(drawn["data-remote-bytes"]) == tier["remote_bytes"] > 0, drawn
    assert 0 < int(drawn["data-local-bytes"]) < tier["remote_bytes"], drawn
    assert {(t, p) for t, p in rows if t == lagging} == {(lagging, 0), (lagging, 1), (lagging, 2)}
    topic_rows = {a["data-topic"] for t, a in dom.elements if t == "tr" and "data-topic" in a}
    assert {tiered, lagging} <= topic_rows

    # Groups: per-partition lag and the catch-up state, the stuck one apart.
    parts = {int(a["data-partition"]): a for a in dom.with_class("group-partition")
             if a["data-group"] == group}
    assert {k: (v["data-lag"], v["data-state"]) for k, v in parts.items()} == {
        0: ("0", "caught_up"), 1: ("0", "caught_up"), 2: ("35", "not_catching_up")}, parts
    assert "NOT catching up" in dom.text["groups"]
    group_rows = [a for t, a in dom.elements if t == "tr" and a.get("data-group") == group]
    assert len(group_rows) == 1

    # Tiering progress: this broker's totals.
    bar = dom.by_id("tiering-bar")
    assert int(bar["data-remote-bytes"]) >= tier["remote_bytes"]
    assert "awaiting upload" in dom.text["tiering-text"]
