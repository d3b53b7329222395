#!/usr/bin/env python3
"""Print the failed and errored tests of pytest JUnit XML reports.

scripts/test.sh calls it last, on exit, so the final lines of a failed
run name what failed even when a client left running in a test process
has printed its log over pytest's own summary (CI shows only a run's
tail). Usage: failures.py REPORT.xml...; prints nothing when every test
passed, and a line for a report that is missing or unreadable.
"""

import sys
import xml.etree.ElementTree as ET


def first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def main(paths: list[str]) -> int:
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            print(f"==> {path}: no test report ({e})")
            continue
        for case in root.iter("testcase"):
            for kind in ("failure", "error"):
                for item in case.findall(kind):
                    name = f"{case.get('classname', '')}::{case.get('name', '')}"
                    why = first_line(item.get("message")) or first_line(item.text)
                    print(f"==> {kind.upper()}: {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
