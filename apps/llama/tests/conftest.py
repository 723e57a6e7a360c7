# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""conftest.py - pytest set-up for the Llama engine tests (test_llama.py).

make check counts TAP lines: tools/pytest_tap.py writes them and
tools/run-pytest.sh prints them after pytest's own output.

Fixtures: `tools` (paths of the built programs and scripts), `workdir` (a
directory of generated models and outputs under $BUILD/llama-test),
`models`, the deterministic test models written once per session by
apps/llama/tools/gen_model.py, and `no_prefixes` (no published prompt prefix
before and after a test; npushm_ls() lists the published names).
"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
PY = "/usr/bin/python3"

sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "common"))    # engine_tests: shared helpers
from pytest_tap import pytest_runtest_logreport, pytest_sessionfinish  # noqa: E402,F401 (the TAP report)


class Tools:
    llama = os.path.join(BUILD, "bin", "npushm-llama")
    npushm = os.path.join(BUILD, "bin", "npushm")
    gen = os.path.join(ROOT, "apps", "llama", "tools", "gen_model.py")


@pytest.fixture(scope="session")
def tools():
    return Tools


@pytest.fixture(scope="session")
def workdir():
    d = os.path.join(BUILD, "llama-test")
    os.makedirs(d, exist_ok=True)
    return d


# name -> gen_model.py arguments
MODELS = {
    # the small configuration: 2 layers, hidden 64, 4 heads, 2 KV heads
    "tiny": ["--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--ffn", "128",
             "--vocab", "96", "--context", "64"],
    "tied": ["--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--ffn", "128",
             "--vocab", "80", "--context", "64", "--tied", "--seed", "2"],
    # multi-head (KV heads = heads), another theta, linear RoPE scaling
    "mha-scaled": ["--layers", "1", "--hidden", "64", "--heads", "4", "--kv-heads", "4",
                   "--ffn", "96", "--vocab", "64", "--context", "48", "--theta", "500000",
                   "--scaling", "4", "--eps", "1e-5", "--seed", "3"],
    # multi-query (one KV head), 3 layers, head_dim 8
    "mqa": ["--layers", "3", "--hidden", "48", "--heads", "6", "--kv-heads", "1", "--ffn", "80",
            "--vocab", "70", "--context", "64", "--seed", "4"],
    # tiny's shapes and metadata, other values: a different model for the prefix tests
    "tiny-other": ["--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--ffn",
                   "128", "--vocab", "96", "--context", "64", "--seed", "9"],
    # wider: several GEMM blocks per projection (hidden 256, FFN 704, vocab 512)
    "wide": ["--layers", "2", "--hidden", "256", "--heads", "8", "--kv-heads", "2", "--ffn",
             "704", "--vocab", "512", "--context", "128", "--seed", "5"],
}


def gen(path, args):
    subprocess.run([PY, Tools.gen] + list(args) + [path], check=True)


@pytest.fixture(scope="session")
def models(workdir):
    paths = {}
    for name, args in MODELS.items():
        path = os.path.join(workdir, name + ".safetensors")
        if not os.path.exists(path):
            gen(path, args)
        paths[name] = path
    return paths


def npushm_ls(tools):
    r = subprocess.run([tools.npushm, "ls"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [line.split()[0] for line in r.stdout.splitlines()[1:] if line.strip()]


@pytest.fixture
def no_prefixes(tools):
    """Remove every published prefix before and after the test."""
    def clean():
        for name in npushm_ls(tools):
            if name.startswith("npllama-kv."):
                subprocess.run([tools.npushm, "rm", name], capture_output=True)
    clean()
    yield
    clean()
