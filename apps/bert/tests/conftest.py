# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""conftest.py - pytest set-up for the BERT engine tests (test_bert.py).

make check counts TAP lines, so this plugin prints TAP on file descriptor 1
(the plan once collection is done, one "ok N - name" or "not ok N - name"
per test, failure details as "# " comments) and pytest's own terminal
output is switched off (run-tests.sh passes -p no:terminal).

Fixtures: `tools` (paths of the built programs), `workdir` (a directory of
generated models and outputs under $BUILD/bert-test) and `models`, the
deterministic test models written once per session by npushm-bert-gen.
"""
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))

_count = 0
_outcome = {}


def _out(text):
    os.write(1, (text + "\n").encode())


def pytest_collection_finish(session):
    _out("1..%d" % len(session.items))


def pytest_runtest_logreport(report):
    o = _outcome.setdefault(report.nodeid, {"failed": False, "skip": None, "text": []})
    if report.failed:
        o["failed"] = True
        o["text"].append("%s: %s" % (report.when, report.longreprtext))
    elif report.skipped:
        o["skip"] = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"


def pytest_runtest_logfinish(nodeid, location):
    global _count
    _count += 1
    o = _outcome.get(nodeid, {"failed": True, "skip": None, "text": ["no report"]})
    name = nodeid.split("::", 1)[-1]
    for block in o["text"]:
        for line in block.splitlines():
            _out("# " + line)
    if o["failed"]:
        _out("not ok %d - %s" % (_count, name))
    elif o["skip"]:
        _out("ok %d - %s # SKIP %s" % (_count, name, o["skip"]))
    else:
        _out("ok %d - %s" % (_count, name))


class Tools:
    bin = os.path.join(BUILD, "bin")
    bert = os.path.join(BUILD, "bin", "npushm-bert")
    gen = os.path.join(BUILD, "bin", "npushm-bert-gen")
    npushm = os.path.join(BUILD, "bin", "npushm")
    reference = os.path.join(ROOT, "apps", "bert", "reference")


@pytest.fixture(scope="session")
def tools():
    return Tools


@pytest.fixture(scope="session")
def workdir():
    d = os.path.join(BUILD, "bert-test")
    os.makedirs(d, exist_ok=True)
    return d


# name -> npushm-bert-gen arguments
MODELS = {
    "tiny": ["--layers", "2", "--hidden", "64", "--heads", "4", "--ffn", "256", "--vocab", "100",
             "--positions", "32"],
    # heads and FFN divide by 3 (and 2)
    "tiny3": ["--layers", "2", "--hidden", "96", "--heads", "6", "--ffn", "384", "--vocab", "120",
              "--positions", "40", "--seed", "7"],
    # a BertFor* checkpoint: names prefixed "bert.", no pooler
    "prefixed": ["--layers", "1", "--hidden", "32", "--heads", "2", "--ffn", "64", "--vocab", "50",
                 "--positions", "16", "--prefix", "bert.", "--no-pooler", "--seed", "3"],
    # heads divide by 3, FFN width does not
    "ffn256": ["--layers", "1", "--hidden", "96", "--heads", "6", "--ffn", "256", "--vocab", "50",
               "--positions", "16"],
}


@pytest.fixture(scope="session")
def models(tools, workdir):
    paths = {}
    for name, args in MODELS.items():
        path = os.path.join(workdir, name + ".safetensors")
        if not os.path.exists(path):
            subprocess.run([tools.gen] + args + [path], check=True)
        paths[name] = path
    return paths
