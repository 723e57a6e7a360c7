# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""bench.py - BERT-base inference: the npushm engine (npushm-bert) against
PyTorch 1.13 eager (the plain-PyTorch BERT of apps/bert/reference) on the same
safetensors file and the same thread count, with the dense GEMMs alone as the
machine ceiling, all in one interleaved run (run.sh sets the environment).

Measured, each --runs times in turn (ranges reported):
  A. one instance, THREADS threads, batch 8 x 128 and 1 x 128 (full-length
     sequences): npushm engine; PyTorch with torch.set_num_threads(THREADS)
     and OpenBLAS THREADS threads ("default"); PyTorch with 1 intra-op
     thread and OpenBLAS THREADS threads ("1+BLAS", often faster here); the
     GEMM ceiling.
  B. tensor parallel: TP=2 with one thread per rank vs TP=1 with two threads.
  C. N = 2 and 4 workers (one thread each) at 8 x 128: npushm engine workers
     sharing the model vs PyTorch workers with private copies: aggregate
     throughput and host memory (shared model once + private memory).
and where the engine's time goes (matmul, attention, elementwise, AllReduce).

    bench.py [--runs 3] [--threads 2] [--model PATH] [--quick] [--out FILE.md]
"""
import argparse
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "apps", "bert", "demo"))

import serving  # noqa: E402

NAME = "bench-bert"
lines = []


def out(s=""):
    print(s, flush=True)
    lines.append(s)


def rng(xs, fmt="%.2f"):
    xs = [x for x in xs if x == x]
    if not xs:
        return "-"
    lo, hi = min(xs), max(xs)
    return (fmt % lo) if fmt % lo == fmt % hi else ("%s-%s" % (fmt % lo, fmt % hi))


def lscpu_caches():
    r = subprocess.run(["lscpu"], capture_output=True, text=True)
    keep = ("Model name", "L1d", "L2", "L3", "Flags")
    res = []
    for line in r.stdout.splitlines():
        k = line.split(":")[0].strip()
        if k in keep[:-1]:
            res.append(" ".join(line.split()))
        elif k == "Flags":
            flags = set(line.split(":", 1)[1].split())
            res.append("SIMD: " + " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")
                                           if f in flags))
    return res


def blas_core():
    code = ("import ctypes; l = ctypes.CDLL('libopenblas.so.0'); "
            "l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())")
    r = subprocess.run([serving.PY, "-c", code], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def single(kind, model_name, path, spec, threads):
    """One instance serving `spec`; returns its report (+ memory)."""
    if kind == "engine":
        rep, mem = serving.run_row([serving.engine_cmd(model_name, spec, threads)])
    elif kind == "engine-tp2":
        rep, mem = serving.run_row([serving.engine_cmd(model_name, spec, 1, tp=2)])
    elif kind == "torch-default":
        rep, mem = serving.run_row([serving.torch_cmd("private", spec, threads, path=path)],
                                   {"OPENBLAS_NUM_THREADS": str(threads)})
    elif kind == "torch-1+blas":
        rep, mem = serving.run_row([serving.torch_cmd("private", spec, 1, path=path)],
                                   {"OPENBLAS_NUM_THREADS": str(threads)})
    else:
        raise ValueError(kind)
    return rep[0], mem


def ceiling(B, S, reps, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    r = subprocess.run([serving.PY, os.path.join(HERE, "gemm_ceiling.py"), str(B), str(S), str(reps)],
                       capture_output=True, text=True, env=env, check=True)
    return json.loads(r.stdout)


def seq_per_s(rep):
    return rep["sequences"] / rep["wall_s"]


def seq_per_cpu_s(rep):
    return rep["sequences"] / rep["cpu_s"] if rep.get("cpu_s") else float("nan")


def p50_ms(rep):
    return 1e3 * serving.percentile(rep["latencies_s"], 0.5)


def profile_line(rep):
    p = rep.get("profile")
    if not p or not p["total"]:
        return "-"
    t = p["total"]
    other = t - p["matmul"] - p["attention"] - p["elementwise"] - p["embed"] - p["allreduce"]
    return ("matmul %.1f%%, attention %.1f%%, elementwise+LayerNorm %.1f%%, embeddings %.1f%%, AllReduce "
            "%.1f%%, other %.1f%%" % (100 * p["matmul"] / t, 100 * p["attention"] / t,
                                      100 * p["elementwise"] / t, 100 * p["embed"] / t,
                                      100 * p["allreduce"] / t, 100 * other / t))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=os.path.join(serving.BUILD, "bert", "bert-base.safetensors"))
    ap.add_argument("--quick", action="store_true", help="fewer batches (a smoke test, not a measurement)")
    ap.add_argument("--out", default=os.path.join(serving.BUILD, "bench", "bert.md"))
    a = ap.parse_args()
    T = a.threads
    k8, k1, kn = (1, 3, 1) if a.quick else (4, 20, 2)

    if not os.path.exists(a.model):
        os.makedirs(os.path.dirname(a.model), exist_ok=True)
        subprocess.run([os.path.join(serving.BUILD, "bin", "npushm-bert-gen"), a.model], check=True)
    serving.npushm_cli("rm", NAME)
    r = serving.npushm_cli("load", a.model, "--name", NAME, "--quiet")
    if r.returncode:
        raise SystemExit("bench: npushm load failed: " + r.stderr)
    weights_kb = os.path.getsize(a.model) // 1024
    shared = serving.region_kb(NAME)

    out("# BERT-base inference: npushm engine vs PyTorch %s" % subprocess.run(
        [serving.PY, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True).stdout.strip())
    out()
    out("Machine: %s; %d CPUs; %s; OpenBLAS core %s (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset)"
        % (platform.machine(), os.cpu_count(), "; ".join(lscpu_caches()), blas_core()))
    out("Model: BERT-base shape, f32, %.1f MiB of weights; backend %s; %d runs interleaved%s; load "
        "average at start %s" % (weights_kb / 1024, os.environ.get("NPUSHM_BACKEND", "auto"), a.runs,
                                " (QUICK: not a measurement)" if a.quick else "", " ".join(serving.loadavg())))
    out()

    res = {}

    def put(key, val):
        res.setdefault(key, []).append(val)

    try:
        for run in range(a.runs):
            print("-- run %d of %d (load %s)" % (run + 1, a.runs, " ".join(serving.loadavg())), flush=True)
            put("load", float(serving.loadavg()[0]))
            for B, K in ((8, k8), (1, k1)):
                spec = "%d,%d,128,128,%d" % (K, B, 7 + run)
                for kind in ("engine", "torch-default", "torch-1+blas"):
                    rep, mem = single(kind, NAME, a.model, spec, T)
                    put((kind, B, "seq"), seq_per_s(rep))
                    put((kind, B, "best"), B / min(rep["latencies_s"]))
                    put((kind, B, "cpu"), seq_per_cpu_s(rep))
                    put((kind, B, "p50"), p50_ms(rep))
                    put((kind, B, "min"), 1e3 * min(rep["latencies_s"]))
                    if kind == "engine":
                        put((kind, B, "profile"), rep)
                c = ceiling(B, 128, max(K, 2), T)
                put(("ceiling", B, "seq"), c["seq_per_s_median"])
                put(("ceiling", B, "gflops"), c["gflops_best"])
            # tensor parallel, 8 x 128
            spec = "%d,8,128,128,%d" % (k8, 7 + run)
            rep, mem = single("engine-tp2", NAME, a.model, spec, T)
            put(("tp2", "seq"), seq_per_s(rep))
            put(("tp2", "cpu"), seq_per_cpu_s(rep))
            put(("tp2", "profile"), rep)
            put(("tp2", "ratio"), seq_per_s(rep) / res[("engine", 8, "seq")][-1])
            # N workers, one thread each, 8 x 128
            for n in (1, 2, 4):
                specs = ["%d,8,128,128,%d" % (kn, 100 * n + w + run) for w in range(n)]
                rep, mem = serving.run_row([serving.engine_cmd(NAME, s, 1) for s in specs])
                row = serving.summarize("engine", rep, mem, shared)
                if n == 1:
                    # A: what one worker adds to the host alone (activations + runtime)
                    put(("workers", 1, "engine", "private"), row["private_kb"])
                    continue
                put(("workers", n, "engine", "seq"), row["seq_per_s"])
                put(("workers", n, "engine", "cpu"), sum(r["sequences"] for r in rep) / sum(r["cpu_s"] for r in rep))
                put(("workers", n, "engine", "host"), row["host_kb"])
                put(("workers", n, "engine", "private"), row["private_kb"] / n)
                put(("workers", n, "engine", "workspace"), rep[0]["memory"]["workspace_bytes"] / 1024)
                rep, mem = serving.run_row([serving.torch_cmd("private", s, 1, path=a.model) for s in specs],
                                           {"OPENBLAS_NUM_THREADS": "1"})
                row = serving.summarize("torch", rep, mem)
                put(("workers", n, "torch", "seq"), row["seq_per_s"])
                put(("workers", n, "torch", "cpu"), sum(r["sequences"] for r in rep) / sum(r["cpu_s"] for r in rep))
                put(("workers", n, "torch", "host"), row["host_kb"])
                put(("workers", n, "torch", "private"), row["private_kb"] / n)
    except serving.RowError as e:
        raise SystemExit("bench: %s" % e)
    finally:
        serving.npushm_cli("rm", NAME)

    out("## One instance, %d threads, full-length sequences (sequences/s; ranges over runs)" % T)
    out()
    out("| batch | npushm engine | PyTorch default (%d intra-op, %d BLAS) | PyTorch (1 intra-op, %d BLAS) "
        "| engine / best PyTorch | GEMM ceiling | engine / ceiling |" % (T, T, T))
    out("|---|---|---|---|---|---|---|")
    for B in (8, 1):
        e, d, t1, c = (res[(k, B, "seq")] for k in ("engine", "torch-default", "torch-1+blas", "ceiling"))
        ratio = [x / max(y, z) for x, y, z in zip(e, d, t1)]
        out("| %d x 128 | %s | %s | %s | %s | %s | %s |" % (B, rng(e), rng(d), rng(t1), rng(ratio),
                                                           rng(c), rng([x / y for x, y in zip(e, c)])))
    out()
    out("Best batch (the fastest batch of each measurement, the least disturbed by other work; sequences/s): "
        + "; ".join("%d x 128: engine %s, PyTorch default %s, PyTorch 1+BLAS %s, engine / best PyTorch %s" % (
            B, rng(res[("engine", B, "best")]), rng(res[("torch-default", B, "best")]),
            rng(res[("torch-1+blas", B, "best")]),
            rng([x / max(y, z) for x, y, z in zip(res[("engine", B, "best")], res[("torch-default", B, "best")],
                                                  res[("torch-1+blas", B, "best")])])) for B in (8, 1)) + ".")
    out()
    out("Load-independent view, sequences per CPU-second of the serving process (threads that spin count): "
        + "; ".join("%d x 128: engine %s, PyTorch default %s, PyTorch 1+BLAS %s" % ((B,) + tuple(
            rng(res[(k, B, "cpu")]) for k in ("engine", "torch-default", "torch-1+blas"))) for B in (8, 1)) + ".")
    out()
    out("Latency p50 (ms) at 1 x 128: engine %s, PyTorch default %s, PyTorch 1+BLAS %s; at 8 x 128: engine %s, "
        "PyTorch default %s, PyTorch 1+BLAS %s." % tuple(
            rng(res[(k, B, "p50")], "%.0f") for B in (1, 8) for k in ("engine", "torch-default", "torch-1+blas")))
    out("Latency min (ms) at 1 x 128: engine %s, PyTorch default %s, PyTorch 1+BLAS %s." % tuple(
        rng(res[(k, 1, "min")], "%.0f") for k in ("engine", "torch-default", "torch-1+blas")))
    out("Dense-GEMM ceiling: %s GFLOPS (8 x 128), %s GFLOPS (1 x 128)."
        % (rng(res[("ceiling", 8, "gflops")], "%.0f"), rng(res[("ceiling", 1, "gflops")], "%.0f")))
    out()
    out("## Tensor parallel, 8 x 128")
    out()
    out("| TP=1, %d threads | TP=2, 1 thread per rank | TP=2 / TP=1 |" % T)
    out("|---|---|---|")
    out("| %s | %s | %s |" % (rng(res[("engine", 8, "seq")]), rng(res[("tp2", "seq")]), rng(res[("tp2", "ratio")])))
    out()
    out("Sequences per CPU-second (rank 0's process for TP=2): TP=1 %s, TP=2 %s." % (
        rng(res[("engine", 8, "cpu")]), rng(res[("tp2", "cpu")])))
    out()
    out("## N workers, one thread each, 8 x 128 (aggregate sequences/s; host memory = shared model once + "
        "private memory of every process)")
    out()
    out("| N | engine seq/s | PyTorch private seq/s | engine / PyTorch | engine host memory | limit 1.05 W + N x A "
        "| PyTorch host memory | engine private per worker (workspace) |")
    out("|---|---|---|---|---|---|---|---|")
    for n in (2, 4):
        es, ts = res[("workers", n, "engine", "seq")], res[("workers", n, "torch", "seq")]
        eh, th = res[("workers", n, "engine", "host")], res[("workers", n, "torch", "host")]
        ep, ew = res[("workers", n, "engine", "private")], res[("workers", n, "engine", "workspace")]
        limit = [1.05 * weights_kb + n * p for p in res[("workers", 1, "engine", "private")]]
        out("| %d | %s | %s | %s | %s MiB | %s MiB | %s MiB | %s MiB (%s MiB) |" % (
            n, rng(es), rng(ts), rng([x / y for x, y in zip(es, ts)]), rng([x / 1024 for x in eh], "%.0f"),
            rng([x / 1024 for x in limit], "%.0f"), rng([x / 1024 for x in th], "%.0f"),
            rng([x / 1024 for x in ep], "%.0f"), rng([x / 1024 for x in ew], "%.0f")))
    out()
    out("Sequences per CPU-second (all workers): " + "; ".join("N=%d engine %s, PyTorch %s" % (
        n, rng(res[("workers", n, "engine", "cpu")]), rng(res[("workers", n, "torch", "cpu")])) for n in (2, 4)) + ".")
    out()
    out("W = %.1f MiB of weights; the shared region holds %.1f MiB (%.3f W). A = the private memory of one "
        "engine worker serving 8 x 128 alone, %s MiB: its activations (the workspace, %s MiB) plus the runtime "
        "(code, OpenBLAS buffers, thread stacks, the output arrays)." % (
            weights_kb / 1024, shared / 1024, shared / weights_kb,
            rng([x / 1024 for x in res[("workers", 1, "engine", "private")]], "%.0f"),
            rng([x / 1024 for x in res[("workers", 2, "engine", "workspace")]], "%.0f")))
    out()
    out("## Where the engine's time goes")
    out()
    out("- 8 x 128, TP=1, %d threads: %s" % (T, profile_line(res[("engine", 8, "profile")][-1])))
    out("- 1 x 128, TP=1, %d threads: %s" % (T, profile_line(res[("engine", 1, "profile")][-1])))
    out("- 8 x 128, TP=2, 1 thread per rank (rank 0): %s" % profile_line(res[("tp2", "profile")][-1]))
    out()
    out("## Per run")
    out()
    out("| run | load | 8x128 engine | 8x128 best PyTorch | ratio | 1x128 p50 engine ms | 1x128 p50 best PyTorch ms "
        "| 1x128 min engine / best PyTorch ms | TP=2/TP=1 | N=2 engine/PyTorch | N=4 engine/PyTorch |")
    out("|---|---|---|---|---|---|---|---|---|---|---|")
    for i in range(len(res["load"])):
        e8 = res[("engine", 8, "seq")][i]
        t8 = max(res[("torch-default", 8, "seq")][i], res[("torch-1+blas", 8, "seq")][i])
        e1 = res[("engine", 1, "p50")][i]
        t1 = min(res[("torch-default", 1, "p50")][i], res[("torch-1+blas", 1, "p50")][i])
        m1 = "%.0f / %.0f" % (res[("engine", 1, "min")][i],
                              min(res[("torch-default", 1, "min")][i], res[("torch-1+blas", 1, "min")][i]))
        out("| %d | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %s | %.2f | %.2f | %.2f |" % (
            i + 1, res["load"][i], e8, t8, e8 / t8, e1, t1, m1, res[("tp2", "ratio")][i],
            res[("workers", 2, "engine", "seq")][i] / res[("workers", 2, "torch", "seq")][i],
            res[("workers", 4, "engine", "seq")][i] / res[("workers", 4, "torch", "seq")][i]))
    out()
    out("Load average at the start of each run: %s (other work on the machine slows every column of a run; "
        "the ratios within a run and the runs at low load are the figures to read)."
        % ", ".join("%.2f" % x for x in res["load"]))
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n(written to %s)" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
