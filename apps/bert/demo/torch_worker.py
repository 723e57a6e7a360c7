# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""torch_worker.py - a PyTorch serving worker for the demo and the benchmark:
the plain-PyTorch BERT (apps/bert/reference/bert_ref.py) serving the same
deterministic stream as npushm-bert --stream, with the weights either read
into private memory (what users do today) or taken zero-copy from an npushm
model through DLPack.

    torch_worker.py --weights private --file bert.safetensors --stream C,B,MIN,MAX,SEED
    torch_worker.py --weights npushm --model NAME --stream ... [--threads N] [--hold]

Prints one JSON line (the fields of npushm-bert --json). With --hold it
prints "ready" after the warm-up batch, waits for a line on stdin, serves,
reports, then waits for the end of stdin (so a driver can measure it).
OpenBLAS's thread count is OPENBLAS_NUM_THREADS's (the driver sets it).
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "libnpushm", "python"))

import torch  # noqa: E402

import bert_ref  # noqa: E402
import stream  # noqa: E402


def load(a):
    if a.weights == "private":
        return bert_ref.read_safetensors(a.file)
    import npushm
    m = npushm.attach(a.model)
    w = {t.name: t.torch() for t in m.tensors()}
    return w, m.metadata


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weights", choices=["private", "npushm"], required=True)
    ap.add_argument("--file")
    ap.add_argument("--model")
    ap.add_argument("--stream", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--hold", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    w, meta = load(a)
    bert = bert_ref.Bert(w, bert_ref.bert_heads(meta, w))
    vocab = w["embeddings.word_embeddings.weight"].shape[0]
    types = w["embeddings.token_type_embeddings.weight"].shape[0]
    spec = stream.parse(a.stream)

    def run(k):
        ids, tt, mask = stream.batch(spec, k, vocab, types)
        bert(torch.from_numpy(ids), torch.from_numpy(tt), torch.from_numpy(mask))
        return int(mask.shape[0]), int(mask.size)

    run(0)  # warm-up: page in the weights, size the allocator
    if a.hold:
        print("ready", flush=True)
        sys.stdin.readline()
    lat, seqs, tokens = [], 0, 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    for k in range(spec[0]):
        s0 = time.perf_counter()
        b, t = run(k)
        lat.append(time.perf_counter() - s0)
        seqs += b
        tokens += t
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    print(json.dumps({"engine": "pytorch-" + a.weights, "tp": 1, "threads": torch.get_num_threads(),
                      "pids": [os.getpid()], "batches": spec[0], "sequences": seqs, "tokens": tokens,
                      "wall_s": wall, "cpu_s": cpu, "latencies_s": lat}), flush=True)
    if a.hold:
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
