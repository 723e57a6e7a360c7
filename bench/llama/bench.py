# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""bench.py - driven by run.sh: the decoder's decode and prompt speed per weight
dtype and thread count, as tokens/s and as bytes of weights per token x
tokens/s against the STREAM-style read bandwidth of the same run."""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
BIN = os.path.join(BUILD, "bin")
WORK = os.path.join(BUILD, "llama-bench")


def sh(args, env=None):
    r = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    if r.returncode:
        sys.exit("bench: %s failed: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=22)
    ap.add_argument("--dtypes", default="f32,bf16,int8,q4")
    ap.add_argument("--new", type=int, default=33, help="tokens generated per run")
    ap.add_argument("--prompt", type=int, default=128)
    a = ap.parse_args()
    print(sh(["sh", "-c", "lscpu | grep -E 'Model name|L1d|L2|L3|^CPU\\(s\\)'"]))
    model = os.path.join(WORK, "tinyllama-L%d.safetensors" % a.layers)
    if not os.path.exists(model):
        print("writing %s (TinyLlama shape, %d layers, deterministic values)..." % (model, a.layers))
        sh(["/usr/bin/python3", os.path.join(ROOT, "apps", "llama", "tools", "gen_model.py"),
            "--layers", str(a.layers), "--hidden", "2048", "--heads", "32", "--kv-heads", "4",
            "--ffn", "5632", "--vocab", "32000", "--context", "2048", model])
    prompt = os.path.join(WORK, "prompt.npy")
    np.save(prompt, np.random.default_rng(0).integers(0, 32000, a.prompt, dtype=np.int64))
    bw = {t: float(sh([os.path.join(WORK, "read_bw"), "2048", str(t)])) for t in (1, 2)}
    print("read bandwidth (2 GiB, best of 5): 1 thread %.1f GB/s, 2 threads %.1f GB/s" % (
        bw[1], bw[2]))
    print("%-5s %3s %10s %12s %10s %8s %12s" % ("dtype", "thr", "decode t/s", "MB/token",
                                                "GB/s", "% of bw", "prompt t/s"))
    for dt in a.dtypes.split(","):
        name = "llama-bench-" + dt
        sh([os.path.join(BIN, "npushm"), "load", model, "--name", name, "--quiet"] +
           ([] if dt == "plain" else ["--dtype", dt]))
        try:
            for t in (1, 2):
                out = sh([os.path.join(BIN, "npushm-llama"), name, "--ids", prompt, "--max-new",
                          str(a.new), "--out", os.path.join(WORK, "ids.npy"), "--timing",
                          "--threads", str(t)])
                m = re.search(r"prefill (\d+) tokens ([\d.]+) s; decode (\d+) tokens ([\d.]+) s, "
                              r"([\d.]+) tokens/s; (\d+) weight bytes", out)
                pre = int(m.group(1)) / float(m.group(2))
                tps, wb = float(m.group(5)), int(m.group(6))
                gbs = wb * tps / 1e9
                print("%-5s %3d %10.2f %12.1f %10.2f %7.0f%% %12.1f" % (
                    dt, t, tps, wb / 1e6, gbs, 100 * gbs / bw[t], pre))
        finally:
            sh([os.path.join(BIN, "npushm"), "rm", name])


if __name__ == "__main__":
    main()
