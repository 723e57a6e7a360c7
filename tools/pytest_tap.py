# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""pytest_tap.py - the TAP report of every pytest suite of the tree, which make
check counts: one "ok N - test" or "not ok N - test" line per test (a failed
set-up or teardown counts as a test of its own; a skip says its reason),
failures with the end of their traceback and the test's captured stdout as
"# " comments, and the plan "1..N" last.

The report is written to the file $NPUSHM_TAP_OUT names when the session ends
(tools/run-pytest.sh and ccl's runner print it after pytest's own output).

A conftest.py takes the hooks by importing them, after putting tools/ on
sys.path:  from pytest_tap import pytest_runtest_logreport, pytest_sessionfinish
"""
import os

_tap = {"n": 0, "lines": []}


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed") or \
            (report.when == "teardown" and report.outcome == "failed"):
        _tap["n"] += 1
        name = report.nodeid.split("::", 1)[-1]
        if report.when == "teardown":
            name += " (teardown)"
        if report.outcome == "skipped":
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
            line = "ok %d - %s # SKIP %s" % (_tap["n"], name, reason.replace("Skipped: ", "", 1))
        elif report.outcome == "passed":
            line = "ok %d - %s" % (_tap["n"], name)
        else:
            line = "not ok %d - %s" % (_tap["n"], name)
            text = report.longreprtext.splitlines()[-12:]
            line += "".join("\n# " + t for t in text)
        for section, content in report.sections:
            if "stdout" in section and report.when == "call":
                line += "".join("\n# " + t for t in content.splitlines())
        _tap["lines"].append(line)


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("NPUSHM_TAP_OUT")
    if out:
        with open(out, "w") as f:
            f.write("\n".join(_tap["lines"] + ["1..%d" % _tap["n"]]) + "\n")
