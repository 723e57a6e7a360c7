# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""test_ccl_torch.py - the torch.distributed backend "npccl" (npushm.ccl_torch), with 2 and 3
processes: every op x dtype x size (0, 1, odd, MiB) sync and async, in place and not, default
group and a subgroup, compared with gloo in the same processes (torch_worker.py); three DDP
steps; DDP with the PowerSGD hook and then-callbacks that wait on collectives; a killed rank,
also while another rank is busy outside torch; clear errors for what npccl cannot do; a TCP-only
run."""
import json
import os
import socket
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_worker as tw  # noqa: E402

PY = "/usr/bin/python3"
_cache = {}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def launch(scenario, P, timeout=900):
    """Runs P ranks of torch_worker.py once per (scenario, P); returns {rank: results}."""
    key = (scenario, P)
    if key in _cache:
        return _cache[key]
    out = tempfile.mkdtemp(prefix="npccl-torch-")
    port = free_port()
    procs = []
    for r in range(P):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(P), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([PY, os.path.join(HERE, "torch_worker.py"), scenario, out],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=timeout)[0].decode(errors="replace"))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            logs.append("TIMEOUT after %d s" % timeout)
    res = {}
    for r in range(P):
        f = os.path.join(out, "%s.%d.json" % (scenario, r))
        if os.path.exists(f):
            with open(f) as fh:
                res[r] = json.load(fh)
    _cache[key] = (res, logs)
    return _cache[key]


def check(scenario, P, case, ranks=None, timeout=900):
    res, logs = launch(scenario, P, timeout)
    ranks = range(P) if ranks is None else ranks
    for r in ranks:
        assert r in res, "rank %d wrote no result; its output:\n%s" % (r, logs[r][-3000:])
        assert "worker" not in res[r], "rank %d failed: %s" % (r, res[r]["worker"])
        assert case in res[r], "rank %d did not run %s" % (r, case)
        ok, msg = res[r][case]
        assert ok, "rank %d: %s" % (r, msg)


def members(P, case):
    return [0, P - 1] if case.startswith("sub/") and P > 2 else list(range(P))


@pytest.mark.parametrize("P", [2, 3])
@pytest.mark.parametrize("case", tw.matrix_cases())
def test_matrix(P, case):
    check("matrix", P, case, members(P, case))


@pytest.mark.parametrize("case", tw.matrix_cases(tcp=True))
def test_matrix_tcp(case):
    check("matrix-tcp", 2, case)


@pytest.mark.parametrize("P", [2, 3])
def test_ddp_three_steps_identical_replicas(P):
    check("ddp", P, "ddp")


def test_killed_rank_is_named_within_the_timeout():
    check("kill", 3, "kill", ranks=[0, 1])


@pytest.mark.parametrize("P", [2, 3])
def test_ddp_powersgd_hook_finishes_like_gloo(P):
    # deadlocked when a then-callback's wait ran on npccl's completion thread
    check("powersgd", P, "powersgd", timeout=240)


@pytest.mark.parametrize("case", ["then-wait future", "then-wait work", "then-wait chained"])
def test_then_callback_waits_on_another_collective(case):
    check("then-wait", 2, case, timeout=120)


@pytest.mark.parametrize("case", ["deterministic %s n=%d" % (d, n)
                                  for d in ("float32", "float64", "float16", "bfloat16")
                                  for n in (3, 1000, 300007)] + ["deterministic control"])
def test_deterministic_reductions_bitwise_rank_order(case):
    check("deterministic", 3, case, timeout=240)


def test_killed_rank_named_while_another_is_busy_outside_torch():
    check("late-kill", 3, "late-kill", ranks=[0, 1], timeout=120)


@pytest.mark.parametrize("case", ["ReduceOp.BAND", "reduction on int16", "send with a tag",
                                  "recv from any source", "SUM on bool",
                                  "all_gather_into_tensor, wrong size", "usable after errors",
                                  "shared_tensor all_reduce", "work.is_completed after wait"])
def test_errors_and_extras(case):
    check("errors", 2, case)
