"""conftest.py - pytest setup of the ccl Python tests: the npushm package on sys.path, and
a TAP report (one "ok N - test" line per test, then the plan) written to $NPCCL_TAP_OUT,
which run-python-tests.sh prints for the suite runner."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..", "python")))

_tap = {"n": 0, "lines": []}


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed") or \
            (report.when == "teardown" and report.outcome == "failed"):
        _tap["n"] += 1
        name = report.nodeid.split("::", 1)[-1]
        if report.outcome == "skipped":
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
            line = "ok %d - %s # SKIP %s" % (_tap["n"], name, reason)
        elif report.outcome == "passed":
            line = "ok %d - %s" % (_tap["n"], name)
        else:
            line = "not ok %d - %s" % (_tap["n"], name)
            text = str(report.longrepr).splitlines()[-6:]
            line += "".join("\n# " + t for t in text)
        _tap["lines"].append(line)


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("NPCCL_TAP_OUT")
    if out:
        with open(out, "w") as f:
            f.write("\n".join(_tap["lines"] + ["1..%d" % _tap["n"]]) + "\n")
