# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""demo.py - make demo-llama: a Llama-style decoder served from one shared copy.

A deterministic Llama-shaped model (default 6 layers, hidden 1024, 16 heads,
4 KV heads, FFN 2816, vocab 32000: 133 M parameters, 530 MB of f32) is loaded
once with `npushm load`; N serving workers (npushm-llama --stream, one
thread each) attach it and serve requests at the same time: the table shows
their host memory (the model once plus what each holds alone) beside N
private copies, and their aggregate tokens/s. Then the time to first token of
a prompt that starts with a shared prefix of 512 tokens, prefilling all of
it against attaching the prefix another process published. Posix backend,
natively; about 35 s on 2 cores (make demo runs it after the BERT demo).

    demo.py [--workers 4] [--layers 6] [--shared 512]
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
BIN = os.path.join(BUILD, "bin")
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import llama_serving  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--shared", type=int, default=512)
    a = ap.parse_args()
    os.makedirs(os.path.join(BUILD, "llama"), exist_ok=True)
    model = os.path.join(BUILD, "llama", "demo-L%d.safetensors" % a.layers)
    if not os.path.exists(model):
        print("writing %s (deterministic values)..." % model, flush=True)
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "..", "tools", "gen_model.py"),
                        "--layers", str(a.layers), "--hidden", "1024", "--heads", "16",
                        "--kv-heads", "4", "--ffn", "2816", "--vocab", "32000", "--context",
                        str(a.shared + 64), model], check=True)
    shm = tempfile.mkdtemp(prefix="npllama-demo.", dir="/dev/shm")
    os.environ.update(NPUSHM_BACKEND="posix", NPUSHM_SHM_DIR=shm)
    W = os.path.getsize(model)
    try:
        shared = llama_serving.load(BIN, model, "llama-demo")
        mem, reports = llama_serving.workers(BIN, "llama-demo", a.workers, "2,16,32,12,1")
        m = llama_serving.memory_summary(mem, reports, shared)
        t_without, t_with, att = llama_serving.ttft(BIN, "llama-demo", a.shared, 2)
    finally:
        subprocess.run(["rm", "-rf", shm])
    mib = 2 ** 20
    print("\n%d serving workers on one %d-layer model (%.0f MiB of f32 weights), 1 thread each"
          % (a.workers, a.layers, W / mib))
    print("%-44s %10s" % ("", "MiB"))
    print("%-44s %10.0f" % ("the model in shared memory, counted once", m["shared"] / mib))
    print("%-44s %10.0f" % ("what the %d workers hold alone (KV %.1f MiB each)" % (
        a.workers, m["kv"] / mib), m["private"] / mib))
    print("%-44s %10.0f" % ("host memory", m["host"] / mib))
    print("%-44s %10.0f" % ("%d private copies of the weights would take" % a.workers,
                            a.workers * W / mib + m["private"] / mib))
    print("aggregate: %d tokens in %.1f s = %.1f tokens/s" % (m["tokens"], m["wall"],
                                                              m["tokens"] / m["wall"]))
    print("\ntime to first token of a prompt of %d shared + 16 own tokens (2 threads):" % a.shared)
    print("  prefilling all of it       %8.3f s" % t_without)
    print("  attaching the %d-token prefix another process published %8.3f s (%.2fx)" % (
        att, t_with, t_with / t_without))


if __name__ == "__main__":
    main()
