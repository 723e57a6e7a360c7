# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""bench.py - driven by run.sh: the decoder's decode and prompt speed per weight
dtype and thread count beside llama.cpp on the same weights, as tokens/s and as
bytes of weights per token x tokens/s against a STREAM-style read bandwidth
measured in the same run; N workers' host memory and aggregate tokens/s; time
to first token with and without a shared prompt prefix.

llama.cpp is run from a built source tree named by $LLAMA_CPP_DIR (default
/var/cache/npushm/bench-llama/llama.cpp): its build/bin/llama-bench and
llama-quantize and its gguf-py. The model goes to GGUF at F32 with gguf-py
(to_gguf.py), then to F16, Q8_0 and Q4_0 with llama-quantize --pure (every
tensor in that type, as npushm-llama's layouts are). Without the tree its rows
say so."""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "apps", "llama", "tools"))
import llama_serving  # noqa: E402
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
BIN = os.path.join(BUILD, "bin")
WORK = os.path.join(BUILD, "llama-bench")
LLAMA_CPP = os.environ.get("LLAMA_CPP_DIR", "/var/cache/npushm/bench-llama/llama.cpp")
# our dtype -> llama.cpp's type at the same bytes per weight (Q8_0 and Q4_0 carry one f16
# scale per 32 weights, as int8 carries one f32 per row and q4 one f16 per 32)
PEER = {"f32": "F32", "bf16": "F16", "int8": "Q8_0", "q4": "Q4_0"}
BYTES_PER_WEIGHT = {"F32": 4.0, "F16": 2.0, "Q8_0": 34 / 32, "Q4_0": 18 / 32}
SHAPE = {"hidden": 2048, "heads": 32, "kv_heads": 4, "ffn": 5632, "vocab": 32000}


def sh(args, env=None, check=True):
    r = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    if r.returncode and check:
        sys.exit("bench: %s failed: %s" % (" ".join(args), r.stderr.strip()[-2000:]))
    return r.stdout if check else r


def load_average():
    return open("/proc/loadavg").read().split()[0]


def read_bw():
    return {t: float(sh([os.path.join(WORK, "read_bw"), "2048", str(t)])) for t in (1, 2)}


def npushm(*args):
    return sh([os.path.join(BIN, "npushm")] + list(args))


def l3_bytes():
    """the L3 size lscpu reports (0 if none)"""
    m = re.search(r"L3 cache:\s+([\d.]+)\s*([KMG]i?B)", sh(["lscpu"]))
    if not m:
        return 0
    return float(m.group(1)) * {"K": 2**10, "M": 2**20, "G": 2**30}[m.group(2)[0]]


# bytes of one TinyLlama layer's seven projections per weight format (gemv_bw.c's shapes)
LAYER_WEIGHTS = 2 * 2048 * 2048 + 2 * 256 * 2048 + 3 * 5632 * 2048
KERNEL_FORMAT = {"f32": ("f32", 4.0), "bf16": ("bf16", 2.0), "int8": ("int8", 1.0),
                 "q4": ("q4", 18 / 32)}


def kernels(a):
    """The decode-step products alone against a read of the same bytes (gemv_bw.c), at
    enough layers to pass twice the L3; its table as printed."""
    out = []
    for dt in a.dtypes.split(","):
        fmt, bpw = KERNEL_FORMAT[dt]
        layers = max(2, int(2 * l3_bytes() / (LAYER_WEIGHTS * bpw)) + 1)
        r = sh([os.path.join(WORK, "gemv_bw"), fmt, str(layers), str(a.kernel_rounds), "1", "2"],
               check=False)
        out.append(r.stdout.strip() if not r.returncode else "%s: gemv_bw failed: %s" % (
            dt, r.stderr.strip()[-500:]))
    return "\n".join(out)


def timing(out):
    m = re.search(r"prefill (\d+) tokens ([\d.]+) s; decode (\d+) tokens ([\d.]+) s, "
                  r"([\d.]+) tokens/s; (\d+) weight bytes", out)
    return int(m.group(1)) / float(m.group(2)), float(m.group(5)), int(m.group(6))


def ours(a, model, prompt, dt):
    """npushm-llama's rows for one dtype: {threads: (decode t/s, bytes/token, prompt t/s)}"""
    name = "llama-bench-" + dt
    npushm("load", model, "--name", name, "--quiet", *([] if dt == "plain" else ["--dtype", dt]))
    rows = {}
    try:
        for t in (1, 2):
            out = sh([os.path.join(BIN, "npushm-llama"), name, "--ids", prompt, "--max-new",
                      str(a.new), "--out", os.path.join(WORK, "ids.npy"), "--timing",
                      "--threads", str(t)])
            pre, tps, wb = timing(out)
            rows[t] = (tps, wb, pre)
    finally:
        npushm("rm", name)
    return rows


# ------------------------------------------------------------------ llama.cpp

def llama_cpp_tools():
    """(llama-bench, llama-quantize, gguf-py, commit) or the reason there are none"""
    bench = os.path.join(LLAMA_CPP, "build", "bin", "llama-bench")
    quant = os.path.join(LLAMA_CPP, "build", "bin", "llama-quantize")
    gguf_py = os.path.join(LLAMA_CPP, "gguf-py")
    for p in (bench, quant, gguf_py):
        if not os.path.exists(p):
            return None, "no %s: a CPU-only build of llama.cpp is expected in LLAMA_CPP_DIR=%s" \
                % (p, LLAMA_CPP)
    r = sh(["git", "-C", LLAMA_CPP, "rev-parse", "--short=9", "HEAD"], check=False)
    commit = r.stdout.strip() if not r.returncode else "unknown (not a git tree)"
    return (bench, quant, gguf_py, commit), None


def gguf_files(tools, model, layers):
    """the model in GGUF at each llama.cpp type, made once per model into WORK"""
    bench, quant, gguf_py, _ = tools
    base = os.path.join(WORK, "tinyllama-L%d" % layers)
    files = {"F32": base + ".F32.gguf"}
    if not os.path.exists(files["F32"]):
        print("writing %s with llama.cpp's gguf-py..." % files["F32"], flush=True)
        sh(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "to_gguf.py"), gguf_py,
            model, files["F32"] + ".tmp"])
        os.rename(files["F32"] + ".tmp", files["F32"])
    for ty in ("F16", "Q8_0", "Q4_0"):
        files[ty] = base + "." + ty + ".gguf"
        if not os.path.exists(files[ty]):
            print("llama-quantize --pure %s..." % ty, flush=True)
            sh([quant, "--pure", files["F32"], files[ty] + ".tmp", ty, "2"])
            os.rename(files[ty] + ".tmp", files[ty])
    return files


def llama_cpp(tools, gguf, a):
    """{threads: (decode t/s, bytes/token, prompt t/s)} from llama-bench"""
    bench = tools[0]
    out = sh([bench, "-m", gguf, "-p", str(a.prompt), "-n", str(a.gen), "-t", "1,2",
              "-r", str(a.reps), "-o", "json"])
    got = {}
    for r in json.loads(out):
        got[(r["n_threads"], "tg" if r["n_gen"] else "pp")] = (r["avg_ts"], r["model_size"])
    return {t: (got[(t, "tg")][0], got[(t, "tg")][1], got[(t, "pp")][0]) for t in (1, 2)
            if (t, "tg") in got and (t, "pp") in got}


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--dtypes", default="f32,bf16,int8,q4")
    ap.add_argument("--new", type=int, default=33, help="tokens generated per decode run")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3, help="llama-bench repetitions")
    ap.add_argument("--gen", type=int, default=64, help="llama-bench's tokens generated")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--worker-requests", type=int, default=2)
    ap.add_argument("--worker-new", type=int, default=8)
    ap.add_argument("--shared", type=int, default=512, help="shared prefix tokens (TTFT)")
    ap.add_argument("--ttft-requests", type=int, default=3)
    ap.add_argument("--no-llama-cpp", action="store_true")
    ap.add_argument("--kernel-rounds", type=int, default=9,
                    help="rounds of gemv_bw per dtype (0: skip the products alone)")
    a = ap.parse_args()
    for name in ("layers", "new", "prompt", "reps", "gen", "workers", "worker_requests", "worker_new",
                 "ttft_requests"):
        if getattr(a, name) < 1:
            ap.error("--%s must be at least 1" % name.replace("_", "-"))
    if a.shared < 0 or a.kernel_rounds < 0:
        ap.error("--shared and --kernel-rounds must be 0 or more")
    print(sh(["sh", "-c", "lscpu | grep -E 'Model name|L1d|L2|L3|^CPU\\(s\\)'"]))
    print("load average at the start: %s; OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset" %
          load_average())
    model = os.path.join(WORK, "tinyllama-L%d.safetensors" % a.layers)
    if not os.path.exists(model):
        print("writing %s (TinyLlama shape, %d layers, deterministic values)..." % (model, a.layers))
        sh(["/usr/bin/python3", os.path.join(ROOT, "apps", "llama", "tools", "gen_model.py"),
            "--layers", str(a.layers), "--hidden", "2048", "--heads", "32", "--kv-heads", "4",
            "--ffn", "5632", "--vocab", "32000", "--context", "2048", model])
    prompt = os.path.join(WORK, "prompt.npy")
    np.save(prompt, np.random.default_rng(0).integers(0, 32000, a.prompt, dtype=np.int64))
    tools, why = (None, "--no-llama-cpp") if a.no_llama_cpp else llama_cpp_tools()
    files = gguf_files(tools, model, a.layers) if tools else {}
    if tools:
        print("llama.cpp: commit %s (%s), llama-bench -p %d -n %d -t 1,2 -r %d" % (
            tools[3], LLAMA_CPP, a.prompt, a.gen, a.reps))
    else:
        print("llama.cpp: not run: %s" % why)
    emb = SHAPE["vocab"] * SHAPE["hidden"]
    rows = []
    for dt in a.dtypes.split(","):
        bw = read_bw()
        mine = ours(a, model, prompt, dt)
        peer = PEER.get(dt)
        theirs = llama_cpp(tools, files[peer], a) if tools and peer else {}
        for t in (1, 2):
            tps, wb, pre = mine[t]
            row = {"dtype": dt, "threads": t, "bw": bw[t], "tps": tps, "bytes": wb, "pre": pre,
                   "load": load_average()}
            if t in theirs:
                ttg, size, tpp = theirs[t]
                # per token llama.cpp reads every weight but the embedding table (one row)
                row.update(peer=peer, ptps=ttg, pbytes=size - emb * BYTES_PER_WEIGHT[peer],
                           ppre=tpp)
            rows.append(row)
        print("measured %s (load average %s)" % (dt, load_average()), flush=True)
    print("\nread bandwidth: STREAM-style sum of 2 GiB, best of 5, measured before each dtype")
    print("%-5s %3s %9s %9s %7s %8s %9s | %-5s %9s %7s %9s | %7s %7s" % (
        "dtype", "thr", "decode/s", "MB/token", "% bw", "bw GB/s", "prompt/s", "peer",
        "decode/s", "% bw", "prompt/s", "decode", "prompt"))
    for r in rows:
        gbs = r["bytes"] * r["tps"] / 1e9
        line = "%-5s %3d %9.2f %9.1f %6.0f%% %8.1f %9.1f" % (
            r["dtype"], r["threads"], r["tps"], r["bytes"] / 1e6, 100 * gbs / r["bw"], r["bw"],
            r["pre"])
        if "peer" in r:
            pg = r["pbytes"] * r["ptps"] / 1e9
            line += " | %-5s %9.2f %6.0f%% %9.1f | %6.2fx %6.2fx" % (
                r["peer"], r["ptps"], 100 * pg / r["bw"], r["ppre"], r["tps"] / r["ptps"],
                r["pre"] / r["ppre"])
        else:
            line += " | %s" % ("llama.cpp not run" if not tools else "no peer type")
        print(line)
    if a.kernel_rounds > 0:
        print("\nthe decode-step products alone (gemv_bw.c: the seven TinyLlama projections of "
              "L layers, L past twice the L3, one input row, against a read of the same bytes "
              "before each round; wall and CPU-time rates, medians of %d rounds; load average "
              "%s)" % (a.kernel_rounds, load_average()))
        print(kernels(a))
    # N workers on the plain f32 model: memory and aggregate speed; time to first token
    name = "llama-bench-workers"
    shm = llama_serving.load(BIN, model, name)
    try:
        spec = "%d,16,32,%d,1" % (a.worker_requests, a.worker_new)
        mem, reports = llama_serving.workers(BIN, name, a.workers, spec)
        m = llama_serving.memory_summary(mem, reports, shm)
        W = os.path.getsize(model)
        print("\n%d workers, 1 thread each, plain f32 model (W = %.0f MiB), --stream %s:" % (
            a.workers, W / 2**20, spec))
        print("  host memory: the model's shared memory %.0f MiB (once) + the workers' private "
              "%.0f MiB = %.0f MiB (sum of PSS %.0f MiB); KV cache %.1f MiB per worker" % (
                  m["shared"] / 2**20, m["private"] / 2**20, m["host"] / 2**20,
                  m["pss"] / 2**20, m["kv"] / 2**20))
        print("  = %.3f W; target 1.05 W + %d x (KV + activations) = %.0f MiB: %s" % (
            m["host"] / W, a.workers, (1.05 * W + m["private"]) / 2**20,
            "met" if m["shared"] <= 1.05 * W else "not met"))
        print("  aggregate %.2f tokens/s (%d tokens in %.1f s, load average %s)" % (
            m["tokens"] / m["wall"], m["tokens"], m["wall"], load_average()))
        t_without, t_with, att = llama_serving.ttft(BIN, name, a.shared, a.ttft_requests)
        print("\ntime to first token, 2 threads, plain f32, prompt = %d shared + 16 own tokens: "
              "p50 %.3f s prefilling all, %.3f s with the %d-token prefix attached: %.3fx "
              "(target <= 0.1x: %s)" % (a.shared, t_without, t_with, att, t_with / t_without,
                                        "met" if t_with <= 0.1 * t_without else "not met"))
    finally:
        npushm("rm", name)
    print("\nload average at the end: %s" % load_average())


if __name__ == "__main__":
    main()
