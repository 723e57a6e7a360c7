# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""bench.py - BERT-base inference, the npushm engine (npushm-bert, weights read
in place from one shared model) against what users would pick: ONNX Runtime
(onnxruntime-node, f32 and int8 models made from the PyTorch reference) and
PyTorch 1.13 eager (apps/bert/reference), on the same safetensors weights and
the same token ids, with the machine's FMA peak and the GEMM libraries
(OpenBLAS, oneDNN) measured in the same run. run.sh sets it up (npm, apt, the
FMA loop) and runs it; make bench-bert runs run.sh.

Rows: npushm f32, bf16, int8 (bf16 and int8 when `npushm load` has --dtype:
probed, else "not available in this build"), ONNX Runtime f32 and int8,
PyTorch f32. Configurations, each row in turn (interleaved), --runs rounds:
  - one instance with THREADS threads at 8 x 128 and 1 x 128 (full-length);
  - N = 2 and 4 workers with one thread each at 8 x 128 (aggregate), and, in
    the first round, one npushm worker alone (A, its private memory);
  - npushm f32 tensor parallel, TP=2 with one thread per rank (first round).
Per row: p50/p90 latency, sequences/s, GFLOP/s, % of the FMA peak and host
memory: the PSS of every process of the row (shared pages split among them)
without their shmem, plus the shared model once (posix backend). Everything
runs with the environment as it is and, when that sets OPENBLAS_CORETYPE or
OPENBLAS_L2_SIZE, again with both unset, interleaved in each round. Before
timing, every row's outputs are checked against the PyTorch reference
(agree.py). The Targets of issue 21 are printed at the end, pass/fail.

    bench.py [--runs 3] [--threads 2] [--model PATH] [--budget S] [--quick]
             [--env-coretype NAME] [--out FILE.md]
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "apps", "bert", "demo"))

import agree  # noqa: E402
import ortrun  # noqa: E402
import serving  # noqa: E402
import stream  # noqa: E402

NAME = "bench-bert"
BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
lines = []


def out(s=""):
    print(s, flush=True)
    lines.append(s)


def rng(xs, fmt="%.2f"):
    xs = [x for x in xs if x == x]
    if not xs:
        return "-"
    lo, hi = fmt % min(xs), fmt % max(xs)
    return lo if lo == hi else "%s-%s" % (lo, hi)


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def smaps_full(pid):
    """Every kB figure of /proc/PID/smaps_rollup (Rss, Pss, Pss_Anon, Pss_File, Pss_Shmem, ...)."""
    with open("/proc/%d/smaps_rollup" % pid) as f:
        fields = [line.split() for line in f]
    return {x[0].rstrip(":"): int(x[1]) for x in fields if len(x) == 3 and x[2] == "kB"}


# serving.run_row measures the row's processes with serving.smaps; the host
# memory here also needs their shmem (the shared model's pages), so use the
# fuller reading.
serving.smaps = smaps_full


def cpu_lines():
    r = subprocess.run(["lscpu"], capture_output=True, text=True)
    res, simd = [], []
    for line in r.stdout.splitlines():
        k, _, v = line.partition(":")
        k = k.strip()
        if k in ("Vendor ID", "Model name", "CPU family", "Model", "L1d cache", "L2 cache", "L3 cache"):
            res.append("%s: %s" % (k, " ".join(v.split())))
        elif k == "Flags":
            flags = set(v.split())
            simd = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "avx512_fp16",
                                "amx_tile", "amx_bf16", "amx_int8") if f in flags]
    return res, simd


def blas_core():
    code = ("import ctypes; l = ctypes.CDLL('libopenblas.so.0'); "
            "l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())")
    r = subprocess.run([serving.PY, "-c", code], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def model_dims(path):
    """(layers, hidden, ffn, vocab, type vocab, positions) from a safetensors header."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        h = json.loads(f.read(n))
    pre = next((p for p in ("", "bert.") if p + "embeddings.word_embeddings.weight" in h), "")
    L = 0
    while (pre + "encoder.layer.%d.attention.self.query.weight" % L) in h:
        L += 1
    vocab, H = h[pre + "embeddings.word_embeddings.weight"]["shape"]
    F = h[pre + "encoder.layer.0.intermediate.dense.weight"]["shape"][0]
    types = h[pre + "embeddings.token_type_embeddings.weight"]["shape"][0]
    pos = h[pre + "embeddings.position_embeddings.weight"]["shape"][0]
    return L, H, F, vocab, types, pos


def flops_per_seq(L, H, F, S):
    """Multiply-adds x 2 of one sequence: the linear layers, attention's two products, the pooler."""
    return L * (2.0 * S * (4 * H * H + 2 * H * F) + 4.0 * S * S * H) + 2.0 * H * H


class Row:
    """One engine at one precision: how to start its workers, whether it can run."""

    def __init__(self, key, engine, precision, blas, why=None, model=None, shared_kb=0, variant=""):
        self.key, self.engine, self.precision, self.variant = key, engine, precision, variant
        self.blas = blas  # uses OpenBLAS, so OPENBLAS_* can change it
        self.why = why  # None, or why the row is not measured
        self.model = model
        self.shared_kb = shared_kb

    @property
    def label(self):
        return " ".join(x for x in (self.engine, self.precision, self.variant) if x)


class Bench:
    def __init__(self, a):
        self.a = a
        self.res = {}
        self.est = {}
        self.tmp = tempfile.mkdtemp(prefix="npushm-bench-bert.")
        self.batch_files = {}

    def put(self, key, val):
        self.res.setdefault(key, []).append(val)

    def get(self, *key):
        return self.res.get(key, [])

    # --- the rows' commands ---------------------------------------------------
    def ort_batches(self, spec):
        if spec not in self.batch_files:
            c = stream.parse(spec)
            path = os.path.join(self.tmp, "batches.%s.bin" % spec.replace(",", "_"))
            ortrun.write_batches(path, [stream.batch(c, k, self.vocab, self.types) for k in range(c[0])])
            self.batch_files[spec] = path
        return self.batch_files[spec]

    def cmd(self, row, spec, threads):
        if row.engine == "npushm":
            return serving.engine_cmd(row.model, spec, threads)
        if row.engine == "ONNX Runtime":
            return ortrun.cmd(row.model, self.ort_batches(spec), threads)
        return serving.torch_cmd("private", spec, threads, path=self.a.model)

    def env(self, row, threads):
        if row.engine == "ONNX Runtime":
            return ortrun.env()
        return {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}

    def count(self, key, lo, hi, budget):
        """Batches for a measurement: about `budget` seconds from the last round's p50, within [lo, hi]."""
        e = self.est.get(key)
        if self.a.quick or not e:
            return lo
        return max(lo, min(hi, int(budget / e)))

    # --- one measurement --------------------------------------------------------
    def run(self, env_name, row, cfg, n, threads, B, seed):
        key = (env_name, row.key, cfg)
        if cfg == "tp2":
            k = self.count(key, 2, 8, self.a.budget)
            specs = ["%d,%d,128,128,%d" % (k, B, seed)]
            cmds = [serving.engine_cmd(row.model, specs[0], 1, tp=2)]
        elif cfg.startswith("N"):
            k = self.count(key, 1, 6, 2 * self.a.budget)
            specs = ["%d,%d,128,128,%d" % (k, B, seed + w) for w in range(n)]
            cmds = [self.cmd(row, s, threads) for s in specs]
        else:
            k = self.count(key, 2 if B > 1 else 5, 10 if B > 1 else 40, self.a.budget)
            specs = ["%d,%d,128,128,%d" % (k, B, seed)]
            cmds = [self.cmd(row, specs[0], threads)]
        reps, mem = serving.run_row(cmds, self.env(row, threads))
        lat = [x for r in reps for x in r["latencies_s"]]
        p50 = serving.percentile(lat, 0.5)
        self.est[key] = p50
        seqs = sum(r["sequences"] for r in reps)
        wall = max(r["wall_s"] for r in reps)
        host = sum(m["Pss"] - m["Pss_Shmem"] for m in mem.values()) + row.shared_kb
        gflops = self.fps * seqs / wall / 1e9
        for metric, v in (("p50", 1e3 * p50), ("p90", 1e3 * serving.percentile(lat, 0.9)), ("seq", seqs / wall),
                          ("gflops", gflops),
                          ("host", host / 1024.0), ("private", (host - row.shared_kb) / 1024.0 / n),
                          ("batches", len(lat))):
            self.put(key + (metric,), v)
        if row.engine == "npushm" and reps[0].get("profile"):
            self.profile[(env_name, row.key, cfg)] = reps[0]

    # --- the machine --------------------------------------------------------------
    def fma_peak(self):
        exe = os.environ.get("FMA_PEAK") or os.path.join(serving.BUILD, "bench", "fma-peak")
        if not os.access(exe, os.X_OK):
            raise SystemExit("bench: %s is missing: run the benchmark through bench/bert/run.sh (it builds the "
                             "FMA loop)" % exe)
        r = subprocess.run([exe, str(self.a.threads)], capture_output=True, text=True)
        if r.returncode:
            raise SystemExit("bench: %s failed: %s" % (exe, r.stderr.strip()))
        return json.loads(r.stdout)

    def gemm(self, tokens, threads):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        L, H, F = self.dims[:3]
        r = subprocess.run([serving.PY, os.path.join(HERE, "gemm_peers.py"), str(tokens), "2", str(min(L, 2)),
                            str(H), str(F)], capture_output=True, text=True, env=env)
        if r.returncode:
            raise SystemExit("bench: gemm_peers.py failed: %s" % r.stderr.strip())
        return json.loads(r.stdout)


def setup_npushm(b, a):
    """Rows of the npushm engine: f32 from the plain model always; f32 packed (--dtype f32), f32 as bf16x3
    (AMX), bf16 and int8 when this build's loader takes --dtype and the load of that dtype packs weights,
    stored packed only (one copy of the weights) when it takes --packed-only."""
    serving.npushm_cli("rm", NAME)
    r = serving.npushm_cli("load", a.model, "--name", NAME, "--quiet")
    if r.returncode:
        raise SystemExit("bench: npushm load failed: " + r.stderr)
    rows = [Row("npushm-f32", "npushm", "f32", True, model=NAME, shared_kb=serving.region_kb(NAME))]
    h = serving.npushm_cli("load", "--help")
    has_dtype = "--dtype" in h.stdout + h.stderr
    # the packed rows hold one copy of the weights where the loader can (--packed-only)
    only = ["--packed-only"] if "--packed-only" in h.stdout + h.stderr else []
    for load, dt, variant in (("f32", "f32", "packed"), ("bf16x3", "f32", "bf16x3"), ("bf16", "bf16", ""),
                              ("int8", "int8", "")):
        key, name = "npushm-%s%s" % (dt, "-" + variant if variant else ""), "%s-%s" % (NAME, load)
        if not has_dtype:
            rows.append(Row(key, "npushm", dt, True, variant=variant, why="not available in this build "
                            "(`npushm load` has no --dtype)"))
            continue
        serving.npushm_cli("rm", name)
        r = serving.npushm_cli("load", a.model, "--name", name, "--dtype", load, *only, "--quiet")
        if r.returncode or "no weight was packed" in r.stderr:
            serving.npushm_cli("rm", name)
            rows.append(Row(key, "npushm", dt, True, variant=variant, why="not available: `npushm load --dtype %s` "
                            "says: %s" % (load, ((r.stderr or r.stdout).strip().splitlines() or ["?"])[0])))
            continue
        rows.append(Row(key, "npushm", dt, True, variant=variant, model=name, shared_kb=serving.region_kb(name)))
    return rows


X3 = "npushm-f32-bf16x3"   # float32 through three bf16 products on AMX (npushm load --dtype bf16x3)


def f32_row(rows):
    """The npushm f32 row the Targets use: the packed model when this build has it, else the plain one."""
    by = {r.key: r for r in rows}
    return by["npushm-f32-packed"] if not by["npushm-f32-packed"].why else by["npushm-f32"]


def setup_ort(b, a):
    why = ortrun.unavailable()
    if why:
        return [Row("ort-f32", "ONNX Runtime", "f32", False, why=why),
                Row("ort-int8", "ONNX Runtime", "int8", False, why=why)]
    f32, int8, n = ortrun.models(a.model, os.path.join(os.path.dirname(a.model), "onnx"),
                                 log=lambda s: print(s, flush=True))
    b.ort_int8_matmuls = n
    return [Row("ort-f32", "ONNX Runtime", "f32", False, model=f32),
            Row("ort-int8", "ONNX Runtime", "int8", False, model=int8)]


def check_agreement(b, rows, a):
    """Every row's outputs against the PyTorch reference on one batch; rows that disagree are not timed."""
    batch = stream.batch((1, 2, 128, 128, 3), 0, b.vocab, b.types)
    ref = agree.reference(a.model, batch, a.threads)
    pooled_shape = None if ref[1] is None else ref[1].shape
    out("## Outputs checked against the PyTorch reference before timing (one 2 x 128 batch)")
    out()
    out("| row | hidden state: max error / max magnitude | pooled output: smallest cosine | verdict |")
    out("|---|--:|--:|---|")
    for row in rows:
        if row.why:
            out("| %s | - | - | %s |" % (row.label, row.why))
            continue
        if row.engine == "PyTorch":
            out("| %s | 0 | 1 | the reference itself |" % row.label)
            continue
        try:
            if row.engine == "npushm":
                got = agree.engine(serving.BERT, row.model, batch, b.tmp, a.threads)
            else:
                prefix = os.path.join(b.tmp, "agree.%s" % row.key)
                bf = os.path.join(b.tmp, "agree.batch.bin")
                ortrun.write_batches(bf, [batch])
                got = agree.ort(ortrun.cmd(row.model, bf, a.threads, out=prefix), ref[0].shape, pooled_shape,
                                prefix, ortrun.env())
            m = agree.compare(ref, got)
        except RuntimeError as e:
            row.why = "failed on the check batch: %s" % str(e).splitlines()[0]
            out("| %s | - | - | %s |" % (row.label, row.why))
            continue
        bad = agree.verdict(row.precision, m)
        note = "agrees"
        if bad:
            row.why = "outputs disagree with the reference: " + bad
            note = row.why + "; not timed"
        elif row.precision != "f32" and m["err"] < 1e-5:
            note = "agrees to f32 precision: is the engine using %s at all?" % row.precision
        out("| %s | %.2g | %.6f | %s |" % (row.label, m["err"], m["cos"], note))
        if bad and row.precision == "f32":
            raise SystemExit("bench: %s does not compute what the reference computes; nothing timed" % row.label)
    out()
    out("Tolerances: f32 %g of the largest magnitude (the engine's test tolerance); bf16 and int8 pooled cosine >= "
        "%g and hidden-state error <= %g." % (agree.F32_TOL, agree.LOW_COS, agree.LOW_ERR))
    out()


def environments(a):
    """[(name, {var: value or None})]: as it is, and with OPENBLAS_CORETYPE/L2_SIZE unset when that differs."""
    asis = {k: os.environ.get(k) for k in BLAS_ENV}
    if a.env_coretype:
        asis["OPENBLAS_CORETYPE"] = a.env_coretype
    if not any(asis.values()):
        return [("as it is (no OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE set: the same as unset)", asis)]
    desc = ", ".join("%s=%s" % (k, v) for k, v in asis.items() if v)
    return [("as it is (%s)" % desc, asis), ("OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset", dict.fromkeys(BLAS_ENV))]


def apply_env(vals):
    for k, v in vals.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="interleaved rounds (at least 3 for a measurement)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=os.path.join(serving.BUILD, "bert", "bert-base.safetensors"))
    ap.add_argument("--budget", type=float, default=3.0, help="seconds of timed batches per measurement (about)")
    ap.add_argument("--env-coretype", help="the 'as it is' environment with OPENBLAS_CORETYPE=NAME (what some "
                    "machines set), for a machine whose environment does not set it")
    ap.add_argument("--tp-every-round", action="store_true", help="measure TP=2 in every round (default: "
                    "the first)")
    ap.add_argument("--quick", action="store_true", help="fewest batches (a smoke test, not a measurement)")
    ap.add_argument("--out", default=os.path.join(serving.BUILD, "bench", "bert.md"))
    a = ap.parse_args()
    T = a.threads
    b = Bench(a)
    b.profile = {}
    b.ort_int8_matmuls = 0

    if not os.path.exists(a.model):
        os.makedirs(os.path.dirname(a.model), exist_ok=True)
        subprocess.run([os.path.join(serving.BUILD, "tools", "npushm-bert-gen"), a.model], check=True)
    b.dims = model_dims(a.model)
    L, H, F, b.vocab, b.types, P = b.dims
    if P < 128:
        raise SystemExit("bench: %s has %d positions; the benchmark serves 128-token sequences" % (a.model, P))
    b.fps = flops_per_seq(L, H, F, 128)
    weights_mib = os.path.getsize(a.model) / 1048576.0
    envs = environments(a)

    cpu, simd = cpu_lines()
    out("# BERT inference: npushm engine vs ONNX Runtime %s and PyTorch %s" % (ortrun.version() or "(absent)",
        subprocess.run([serving.PY, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                       text=True).stdout.strip()))
    out()
    out("CPU: %s; %d CPUs; %s; SIMD flags: %s; %s." % (platform.machine(), os.cpu_count(), "; ".join(cpu),
                                                       " ".join(simd), platform.node()))
    for name, vals in envs:
        saved = {k: os.environ.get(k) for k in BLAS_ENV}
        apply_env(vals)
        out("OpenBLAS picks its %s kernels with the environment %s." % (blas_core(), name))
        apply_env(saved)
    out("Model: %s, %d layers, hidden %d, FFN %d, f32 file %.1f MiB (%.1f GFLOP per 128-token sequence); %d rounds "
        "interleaved%s; load average at start %s; backend %s." % (
            os.path.basename(a.model), L, H, F, weights_mib, b.fps / 1e9, a.runs,
            " (QUICK: not a measurement)" if a.quick else "", " ".join(serving.loadavg()),
            os.environ.get("NPUSHM_BACKEND", "auto")))
    out()

    try:
        rows = setup_npushm(b, a) + setup_ort(b, a) + [Row("torch-f32", "PyTorch", "f32", True)]
        check_agreement(b, rows, a)
        live = [r for r in rows if not r.why]
        for run in range(a.runs):
            print("-- round %d of %d (load %s)" % (run + 1, a.runs, " ".join(serving.loadavg())), flush=True)
            b.put(("load",), float(serving.loadavg()[0]))
            pk = b.fma_peak()
            for kind in ("fp32", "fp32_256", "bf16", "int8"):
                if pk.get(kind):
                    for t, g in pk[kind]["gflops"].items():
                        b.put(("peak", kind, int(t)), g)
                    b.res[("peak-isa", kind)] = [pk[kind]["isa"]]
            for ei, (env_name, vals) in enumerate(envs):
                saved = {k: os.environ.get(k) for k in BLAS_ENV}
                apply_env(vals)
                for tokens in (1024, 128):
                    for t in sorted({1, T}):
                        g = b.gemm(tokens, t)
                        for r in g["rows"]:
                            b.put((env_name, "gemm", r["name"], tokens, t), r["gflops_best"])
                            b.res[(env_name, "gemm-version", r["name"])] = [r["version"]]
                        b.gemm_skipped = g["skipped"]
                todo = [r for r in live if r.blas or ei == 0]
                for B in (8, 1):
                    for row in todo:
                        b.run(env_name, row, "1x%d" % B, 1, T, B, 7 + run)
                for n in (1, 2, 4):
                    for row in todo:
                        # A (one worker alone) is a memory figure: the first round's
                        if n == 1 and (row.engine != "npushm" or run):
                            continue
                        b.run(env_name, row, "N%d" % n, n, 1, 8, 100 * n + 10 * run)
                if run == 0 or a.tp_every_round:
                    b.run(env_name, f32_row(rows), "tp2", 1, 1, 8, 7 + run)
                apply_env(saved)
    except serving.RowError as e:
        raise SystemExit("bench: %s" % e)
    finally:
        for r in rows if "rows" in locals() else []:
            if r.engine == "npushm" and r.model:
                serving.npushm_cli("rm", r.model)
        shutil.rmtree(b.tmp, ignore_errors=True)

    report(b, a, rows, envs, weights_mib)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n(written to %s)" % a.out)
    return 0


def peak_pct(b, T, cfg, gflops):
    """% of the best f32 FMA peak for the threads a configuration uses."""
    t = {"1x8": T, "1x1": T, "tp2": 2, "N1": 1}.get(cfg, T)
    pk = b.get("peak", "fp32", t) or b.get("peak", "fp32", T)
    return [100 * g / max(pk) for g in gflops] if pk else []


def row_env(row, envs, env_name):
    """The environment a row's figures come from (rows without OpenBLAS run in the first only)."""
    return env_name if row.blas else envs[0][0]


def report(b, a, rows, envs, weights_mib):
    T = a.threads
    out("## The machine's FMA peak (fma_peak.c, same run; GFLOP/s, ranges over rounds)")
    out()
    out("| kind | instructions | 1 thread | %d threads |" % T)
    out("|---|---|--:|--:|")
    for kind, what in (("fp32", "f32 FMA (the peak)"), ("fp32_256", "f32 FMA, 256-bit"), ("bf16", "bf16 dot"),
                       ("int8", "int8 dot (GOP/s)")):
        if ("peak-isa", kind) in b.res:
            out("| %s | %s | %s | %s |" % (what, b.res[("peak-isa", kind)][0], rng(b.get("peak", kind, 1), "%.0f"),
                                           rng(b.get("peak", kind, T), "%.0f")))
        else:
            out("| %s | not on this CPU | - | - |" % what)
    out()
    out("%% of peak below: against the f32 FMA peak at the threads the row uses (N workers on %d CPUs: the "
        "%d-thread peak), for every precision; the best of the rounds, since other work on the machine can only "
        "lower a measured peak." % (os.cpu_count(), T))
    out()
    for env_name, _ in envs:
        out("## Environment: %s" % env_name)
        out()
        out("### GEMM libraries on BERT's linear shapes (f32, GFLOP/s best of 2, % of the FMA peak)")
        out()
        out("| library | 1024 tokens, 1 thread | 1024 tokens, %d threads | 128 tokens, 1 thread | 128 tokens, %d "
            "threads |" % (T, T))
        out("|---|---|---|---|---|")
        for lib in ("OpenBLAS sgemm", "oneDNN sgemm"):
            if (env_name, "gemm", lib, 1024, 1) not in b.res:
                why = getattr(b, "gemm_skipped", {}).get(lib, "not measured")
                out("| %s | %s | | | |" % (lib, why))
                continue
            cells = []
            for tokens in (1024, 128):
                for t in (1, T):
                    g = b.get(env_name, "gemm", lib, tokens, t)
                    pk = max(b.get("peak", "fp32", t))
                    cells.append("%s (%s %%)" % (rng(g, "%.0f"), rng([100 * x / pk for x in g], "%.0f")))
            out("| %s %s | %s |" % (lib, b.res[(env_name, "gemm-version", lib)][0], " | ".join(cells)))
        out()
        out("### One instance, %d threads, full-length sequences (ranges over rounds)" % T)
        out()
        out("| row | shape | p50 ms | p90 ms | sequences/s | GFLOP/s | % of FMA peak | host memory MiB |")
        out("|---|---|--:|--:|--:|--:|--:|--:|")
        for row in rows:
            if row.why:
                out("| %s | | %s | | | | | |" % (row.label, row.why))
                continue
            e = row_env(row, envs, env_name)
            for B in (8, 1):
                k = (e, row.key, "1x%d" % B)
                out("| %s | %d x 128 | %s | %s | %s | %s | %s | %s |" % (
                    row.label, B, rng(b.get(*k, "p50"), "%.0f"), rng(b.get(*k, "p90"), "%.0f"),
                    rng(b.get(*k, "seq")), rng(b.get(*k, "gflops"), "%.0f"),
                    rng(peak_pct(b, T, "1x%d" % B, b.get(*k, "gflops")), "%.0f"),
                    rng(b.get(*k, "host"), "%.0f")))
        out()
        out("### N workers, one thread each, 8 x 128 (aggregate; host memory = PSS of every worker without shmem, "
            "plus the shared model once)")
        out()
        out("| row | N | sequences/s | p50 ms | p90 ms | GFLOP/s | % of FMA peak | host memory MiB | private per "
            "worker MiB | limit 1.05 W + N A |")
        out("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
        for row in rows:
            if row.why:
                continue
            e = row_env(row, envs, env_name)
            for n in (2, 4):
                k = (e, row.key, "N%d" % n)
                limit = "-"
                if row.engine == "npushm":
                    A = b.get(e, row.key, "N1", "private")[:1] * len(b.get(*k, "host"))
                    lim = [1.05 * weights_mib + n * x for x in A]
                    ok = all(h <= x for h, x in zip(b.get(*k, "host"), lim))
                    limit = "%s MiB: %s" % (rng(lim, "%.0f"), "met" if ok else "**not met**")
                out("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    row.label, n, rng(b.get(*k, "seq")), rng(b.get(*k, "p50"), "%.0f"), rng(b.get(*k, "p90"), "%.0f"),
                    rng(b.get(*k, "gflops"), "%.0f"), rng(peak_pct(b, T, "N%d" % n, b.get(*k, "gflops")), "%.0f"),
                    rng(b.get(*k, "host"), "%.0f"),
                    rng(b.get(*k, "private"), "%.0f"), limit))
        out()
        shared = ["%s %.1f MiB" % (r.label, r.shared_kb / 1024) for r in rows if r.engine == "npushm" and r.model]
        out("W = the model's f32 weights, %.1f MiB (the file); the shared models as published hold %s. A = the host "
            "memory of one npushm worker serving 8 x 128 alone, without the shared model: %s MiB." % (
                weights_mib, ", ".join(shared), ", ".join("%s %s" % (r.label, rng(b.get(row_env(r, envs, env_name),
                                                                                      r.key, "N1", "private"), "%.0f"))
                                                          for r in rows if r.engine == "npushm" and r.model)))
        f32 = f32_row(rows)
        tp = b.get(env_name, f32.key, "tp2", "seq")
        if tp:
            one = b.get(env_name, f32.key, "1x8", "seq")
            out()
            out("Tensor parallel, " + f32.label + " at 8 x 128: TP=2 with one thread per rank %s sequences/s, %s x TP=1 "
                "with %d threads." % (rng(tp), rng([x / y for x, y in zip(tp, one)]), T))
        prof = b.profile.get((env_name, f32.key, "1x8"))
        if prof:
            p = prof["profile"]
            t = p["total"] or float("nan")
            out()
            out("Where " + f32.label + "'s time goes at 8 x 128 (last round): matmul %.0f %%, attention %.0f %%, elementwise "
                "and LayerNorm %.0f %%, embeddings %.0f %%." % tuple(100 * p[k] / t for k in (
                    "matmul", "attention", "elementwise", "embed")))
        out()
    targets(b, rows, envs, weights_mib)
    out()
    out("Batches timed per measurement: %s (each about --budget %.0f s from the previous round's p50; the first "
        "round uses the fewest). Load average at the start of each round: %s." % (
            rng([x for k, v in b.res.items() if k[-1] == "batches" for x in v], "%.0f"), a.budget,
            ", ".join("%.2f" % x for x in b.get("load"))))


def targets(b, rows, envs, weights_mib):
    """The Targets of issue 21 as ratios per round, median and range, pass/fail on the median."""
    by = {r.key: r for r in rows}
    out("## Targets (issue 21): ratios per round in this run; verdict on the median")
    out()
    out("| environment | target | ratio per round | median | verdict |")
    out("|---|---|---|--:|---|")

    def ratio(env, num, den, cfg, metric, invert=False):
        for k in (num, den):
            if by[k].why:
                return None, "%s: %s" % (by[k].label, by[k].why)
        a = b.get(row_env(by[num], envs, env), num, cfg, metric)
        d = b.get(row_env(by[den], envs, env), den, cfg, metric)
        return [(y / x if invert else x / y) for x, y in zip(a, d)], None

    f32 = f32_row(rows).key
    for env, _ in envs:
        short = env.split(" (")[0]
        checks = [
            ("%s / ORT f32 throughput, 8 x 128 >= 1.2", f32, "ort-f32", "1x8", "seq", False, ">=", 1.2),
            ("%s / ORT f32 p50 latency, 1 x 128 <= 0.85", f32, "ort-f32", "1x1", "p50", False, "<=", 0.85),
            ("%s / ORT f32 throughput, 8 x 128 >= 1.2", X3, "ort-f32", "1x8", "seq", False, ">=", 1.2),
            ("%s / ORT f32 p50 latency, 1 x 128 <= 0.85", X3, "ort-f32", "1x1", "p50", False, "<=", 0.85),
            ("%s / ORT int8 throughput, 8 x 128 >= 1.0", "npushm-int8", "ort-int8", "1x8", "seq", False, ">=", 1.0),
            ("%s / ORT int8 speed (1/p50), 1 x 128 >= 1.0", "npushm-int8", "ort-int8", "1x1", "p50", True, ">=", 1.0),
            ("N=4: %s / 4 ORT f32 workers, aggregate throughput >= 1.2", f32, "ort-f32", "N4", "seq", False, ">=",
             1.2),
            ("N=4: %s / 4 ORT f32 workers, aggregate throughput >= 1.2", X3, "ort-f32", "N4", "seq", False, ">=",
             1.2),
        ]
        for text, num, den, cfg, metric, inv, op, goal in checks:
            text = text % by[num].label
            xs, why = ratio(env, num, den, cfg, metric, inv)
            if xs is None:
                out("| %s | %s | - | - | **not measured** (%s) |" % (short, text, why))
                continue
            m = med(xs)
            ok = m >= goal if op == ">=" else m <= goal
            out("| %s | %s | %s | %.2f | %s |" % (short, text, ", ".join("%.2f" % x for x in xs), m,
                                                  "pass" if ok else "**fail**"))
        for r in (by[f32], by[X3]):
            if r.why:
                continue
            e = row_env(r, envs, env)
            host = b.get(e, r.key, "N4", "host")
            A = b.get(e, r.key, "N1", "private")[:1] * len(host)
            lim = [1.05 * weights_mib + 4 * x for x in A]
            ort_host = b.get(envs[0][0], "ort-f32", "N4", "host")
            xs = [h / x for h, x in zip(host, lim)]
            out("| %s | N=4: %s host memory <= 1.05 W + N A (W the f32 weights; ORT's 4 workers: %s MiB) | %s | %s | "
                "%s |" % (short, r.label, rng(ort_host, "%.0f"), ", ".join("%.0f / %.0f MiB" % (h, x)
                                                                           for h, x in zip(host, lim)),
                          "%.2f" % med(xs) if xs else "-", "pass" if xs and max(xs) <= 1.0 else "**fail**"))
    out()
    out("Ratios are taken round by round (both rows measured in the same round, interleaved); ONNX Runtime does not "
        "use OpenBLAS, so its rows run once per round and serve both environments. The memory target must hold in "
        "every round.")


if __name__ == "__main__":
    sys.exit(main())
