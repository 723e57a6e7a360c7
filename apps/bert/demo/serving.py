# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""serving.py - run rows of serving workers side by side and measure them, for
the demo (demo.py) and the benchmark (bench/bert/bench.py).

A row is N worker processes started together: npushm-bert --stream --hold
--json (the npushm engine, optionally tensor parallel) or torch_worker.py
(PyTorch with private or DLPack weights). Each worker warms up and prints
"ready"; once all are ready the driver releases them at once, collects their
JSON reports, measures every process of the row (RSS, PSS and private
memory from /proc/PID/smaps_rollup) while they all still hold their memory,
then lets them exit.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
BERT = os.path.join(BUILD, "bin", "npushm-bert")
PY = "/usr/bin/python3"


def smaps(pid):
    """kB of Rss, Pss, Pss_Anon (private anonymous memory) of a process."""
    out = {"Rss": 0, "Pss": 0, "Pss_Anon": 0}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in out:
                out[k] = int(v.split()[0])
    return out


def engine_cmd(model, spec, threads, tp=1):
    return [BERT, "--stream", spec, "--json", "--hold", "--threads", str(threads), "--tp", str(tp), model]


def torch_cmd(weights, spec, threads, model=None, path=None):
    cmd = [PY, os.path.join(HERE, "torch_worker.py"), "--weights", weights, "--stream", spec,
           "--threads", str(threads), "--hold"]
    return cmd + (["--model", model] if weights == "npushm" else ["--file", path])


class RowError(RuntimeError):
    pass


def run_row(cmds, env=None, timeout=3600):
    """Start every command, release them together, return (reports, memory by pid)."""
    e = dict(os.environ)
    e.update(env or {})
    procs = [subprocess.Popen(c, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=e) for c in cmds]
    try:
        for p in procs:
            line = p.stdout.readline()
            if line.strip() != "ready":
                raise RowError("a worker did not start (%s): %s%s" % (" ".join(p.args[:3]), line,
                                                                      p.stderr.read()))
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        reports = []
        for p in procs:
            line = p.stdout.readline()
            try:
                reports.append(json.loads(line))
            except ValueError:
                raise RowError("a worker failed (%s): %s%s" % (" ".join(p.args[:3]), line, p.stderr.read()))
        pids = set()
        for p, r in zip(procs, reports):
            pids.add(p.pid)
            pids.update(r["pids"])
        mem = {pid: smaps(pid) for pid in sorted(pids)}
        for p in procs:
            p.stdin.close()
        for p in procs:
            if p.wait(timeout=timeout):
                raise RowError("a worker exited with status %d: %s" % (p.returncode, p.stderr.read()))
        return reports, mem
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (pos - lo) * (xs[hi] - xs[lo])


def summarize(name, reports, mem, shared_kb=0):
    """One row of figures: throughput, latency, memory (kB)."""
    seqs = sum(r["sequences"] for r in reports)
    wall = max(r["wall_s"] for r in reports)
    lat = [x for r in reports for x in r["latencies_s"]]
    private = sum(m["Pss_Anon"] for m in mem.values())
    return {
        "row": name, "workers": len(reports), "seq_per_s": seqs / wall,
        "seq_per_s_worker": [r["sequences"] / r["wall_s"] for r in reports],
        "p50_ms": 1e3 * percentile(lat, 0.5), "p99_ms": 1e3 * percentile(lat, 0.99),
        "rss_kb": sum(m["Rss"] for m in mem.values()), "pss_kb": sum(m["Pss"] for m in mem.values()),
        "private_kb": private, "shared_kb": shared_kb, "host_kb": private + shared_kb,
        "reports": reports,
    }


def mib(kb):
    return "%.0f MiB" % (kb / 1024.0)


def npushm_cli(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([os.path.join(BUILD, "bin", "npushm")] + list(args), capture_output=True, text=True,
                          env=e)


def region_kb(name):
    """Bytes the published model's region holds (every page is written by the load)."""
    sys.path.insert(0, os.path.join(ROOT, "libnpushm", "python"))
    import npushm
    with npushm.attach(name) as m:
        return m.region_size // 1024


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def now():
    return time.perf_counter()
