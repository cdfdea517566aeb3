"""Stale expectations in the JUnit report, so that the report and certify's exit code agree.

pytest writes the JUnit XML (``-- --junitxml=FILE``) before certify has judged the run; a listed
failure that no longer happens is only known once the certificate is built. certify then adds
one failed test case per stale entry, named for it, to the report pytest wrote.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

from conformance._certificate import Certificate, stale

__all__ = ["STALE_CLASSNAME", "add_stale_expectations"]

#: The classname of the test cases that stand for stale expectations.
STALE_CLASSNAME: Final = "mcp-conformance.expectations"


def add_stale_expectations(report: Path, cert: Certificate) -> int:
    """Add a failed test case to ``report`` for each stale expectation of ``cert``; how many were added.

    A report pytest did not write (the run was stopped first) or cannot be parsed is left alone.
    """
    entries = stale(cert["expectations"]["entries"])
    if not entries or not report.is_file():
        return 0
    try:
        tree = ET.parse(report)
    except (ET.ParseError, OSError):
        return 0
    root = tree.getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return 0
    source = cert["expectations"]["file"] or "the expectations file"
    for entry in entries:
        scope = f" ({entry['test']})" if entry["test"] else ""
        case = ET.SubElement(
            suite, "testcase", classname=STALE_CLASSNAME, name=f"stale expectation {entry['clause']}{scope}", time="0"
        )
        failure = ET.SubElement(
            case, "failure", message=f"{entry['clause']}: the listed failure no longer happens; remove it from {source}"
        )
        failure.text = f"{source}: clause = {entry['clause']!r}, reason = {entry['reason']!r}: {entry['status']}"
    for element in {suite, root}:
        for name in ("tests", "failures"):
            if element.get(name) is not None:
                element.set(name, str(int(element.get(name, "0")) + len(entries)))
    tree.write(report, encoding="utf-8", xml_declaration=True)
    return len(entries)
