# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""conftest.py - pytest set-up for the BERT engine tests (test_bert.py).

make check counts TAP lines: tools/pytest_tap.py writes them (one "ok N -
name" or "not ok N - name" per test, failure details as "# " comments, the
plan last) and tools/run-pytest.sh prints them after pytest's own output.

Fixtures: `tools` (paths of the built programs), `workdir` (a directory of
generated models and outputs under $BUILD/bert-test) and `models`, the
deterministic test models written once per session by npushm-bert-gen.
"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))

sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))    # engine_tests: shared helpers
from pytest_tap import pytest_runtest_logreport, pytest_sessionfinish  # noqa: E402,F401 (the TAP report)


class Tools:
    bin = os.path.join(BUILD, "bin")
    bert = os.path.join(BUILD, "bin", "npushm-bert")
    gen = os.path.join(BUILD, "tools", "npushm-bert-gen")
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
    # the int8 accuracy test's larger model (hidden 512, FFN 2048)
    "big": ["--layers", "2", "--hidden", "512", "--heads", "8", "--ffn", "2048", "--vocab", "100",
            "--positions", "32", "--seed", "5"],
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
