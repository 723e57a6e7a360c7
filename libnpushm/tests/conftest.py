# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""conftest.py - pytest setup of the libnpushm Python tests (test_cli.py,
test_python.py): this directory and the npushm package on sys.path, and a TAP
report (one "ok N - test" line per test, failures with the end of their
traceback as comments, then the plan) written to $NPUSHM_TAP_OUT, which
run-pytest.sh prints for run-tests.sh to fold into the suite's stream."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "python")))

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
            text = str(report.longrepr).splitlines()[-12:]
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
