# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""llama_serving.py - drive npushm-llama serving workers from Python, for the
benchmark (bench/llama/bench.py) and the demo (apps/llama/demo/demo.py):
N --stream workers on one loaded model with their memory measured while
they hold and their aggregate tokens/s from a simultaneous start, and the
time to first token with and without an attached shared prompt prefix.

Memory: per-process figures from /proc/PID/smaps_rollup (Pss, and Private
for what a worker holds alone), the model's shared memory from the rise of
/proc/meminfo's Shmem when it was loaded (counted once, however many map
it)."""
import json
import os
import subprocess

import numpy as np


def smaps(pid):
    """/proc/PID/smaps_rollup in bytes"""
    v = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            p = line.split()
            if len(p) >= 2 and p[1].isdigit():
                v[p[0].rstrip(":")] = int(p[1]) * 1024
    return v


def meminfo(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def npushm(bindir, *args):
    r = subprocess.run([os.path.join(bindir, "npushm")] + list(args), capture_output=True,
                       text=True)
    if r.returncode:
        raise RuntimeError("npushm %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def load(bindir, path, name, dtype=None):
    """load @path as @name; the bytes of shared memory the load added"""
    before = meminfo("Shmem")
    npushm(bindir, "load", path, "--name", name, "--quiet", *(["--dtype", dtype] if dtype else []))
    return meminfo("Shmem") - before


def workers(bindir, name, n, spec, threads=1):
    """n workers `npushm-llama NAME --stream SPEC --hold --json`: their smaps while they hold
    (warmed up), then their JSON reports after a simultaneous start"""
    procs = [subprocess.Popen([os.path.join(bindir, "npushm-llama"), name, "--stream", spec,
                               "--threads", str(threads), "--hold", "--json"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    try:
        for p in procs:
            line = p.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError("a worker did not start: %r %s" % (line, p.stderr.read()))
        mem = [smaps(p.pid) for p in procs]
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        reports = [json.loads(p.stdout.readline()) for p in procs]
        for p in procs:
            p.stdin.close()
            p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return mem, reports


def memory_summary(mem, reports, shm):
    """host memory of N workers: the model's shared memory once + what each holds alone"""
    private = sum(m.get("Private_Clean", 0) + m.get("Private_Dirty", 0) for m in mem)
    return {"shared": shm, "private": private, "host": shm + private,
            "pss": sum(m["Pss"] for m in mem),
            "kv": max(r["kv_bytes"] for r in reports),
            "tokens": sum(r["tokens"] for r in reports),
            "wall": max(r["wall_s"] for r in reports)}


def p50(v):
    return float(np.percentile(np.asarray(v), 50))


def ttft(bindir, name, shared, requests, threads=2):
    """time to first token p50 (s) prefilling everything, and with the shared prefix of
    @shared tokens attached (published first by a one-request run), and its length"""
    base = [os.path.join(bindir, "npushm-llama"), name, "--threads", str(threads), "--json",
            "--stream-prefix", str(shared)]

    def run(spec, extra):
        r = subprocess.run(base + ["--stream", spec] + extra, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError("npushm-llama: %s" % r.stderr.strip())
        return json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("{")][0])

    without = run("%d,16,16,2,5" % requests, [])
    run("1,16,16,1,5", ["--publish-prefix"])
    with_ = run("%d,16,16,2,5" % requests, ["--attach-prefix"])
    for line in npushm(bindir, "ls").splitlines()[1:]:
        if line.startswith("npllama-kv."):
            npushm(bindir, "rm", line.split()[0])
    return p50(without["ttft_s"]), p50(with_["ttft_s"]), min(with_["attached"])
