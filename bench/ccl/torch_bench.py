# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""torch_bench.py - torch.distributed with backend npccl against gloo, in the same processes.

One rank (run-torch-bench.sh starts 2, pinned to cores 0 and 1):
    RANK=r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=p python3 torch_bench.py OUT.json

For each size (float32, 8 B to 256 MiB by factor 2), in turn: dist.all_reduce on the npccl
default group, on a gloo group of the same ranks, and the same buffer reduced by a direct
npccl call (npushm.ccl on its own communicator, no torch layer); then all_gather and
broadcast at 1 MiB and 16 MiB on both backends. Per case: warm-up, then calls until
>= MIN_TIME s (at least 3); the time is the median per call, agreed as the max over ranks;
every result is checked. Rank 0 writes OUT.json.
"""
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import npushm.ccl as ccl            # noqa: E402
import npushm.ccl_torch             # noqa: E402,F401  registers "npccl"

MIN_TIME = float(os.environ.get("BENCH_MIN_TIME", "0.3"))
MAX_BYTES = int(os.environ.get("BENCH_MAX_BYTES", str(256 << 20)))


def timed(fn, nbytes):
    """Median seconds per call (max over ranks). The number of calls is agreed first (every
    rank must make the same calls)."""
    warm = 3 if nbytes < (16 << 20) else 1
    t0 = time.perf_counter()
    for _ in range(warm):
        fn()
    est = torch.tensor([(time.perf_counter() - t0) / warm], dtype=torch.float64)
    dist.all_reduce(est, op=dist.ReduceOp.MAX, group=GLOO)
    iters = int(max(3, min(200000, MIN_TIME / max(float(est[0]), 1e-7))))
    dist.barrier(group=GLOO)
    lat = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        lat.append(time.perf_counter() - t0)
    med = torch.tensor([statistics.median(lat)], dtype=torch.float64)
    dist.all_reduce(med, op=dist.ReduceOp.MAX, group=GLOO)
    return float(med[0])


def main():
    global GLOO
    out = sys.argv[1]
    dist.init_process_group("npccl")
    rank, P = dist.get_rank(), dist.get_world_size()
    GLOO = dist.new_group(backend="gloo")
    store = dist.distributed_c10d._get_default_store()

    def kv_set(k, v):
        store.set("direct/" + k, v)

    def kv_get(k, timeout):
        store.wait(["direct/" + k])
        return store.get("direct/" + k)

    direct = ccl.Communicator.from_store(rank, P, kv_set, kv_get)
    rows, wrong = [], 0
    size = 8
    while size <= MAX_BYTES:
        n = size // 4
        t = torch.full((n,), float(rank + 1))
        a = t.numpy()
        res = {"bytes": size}
        for name, fn in (("npccl", lambda: dist.all_reduce(t)),
                         ("gloo", lambda: dist.all_reduce(t, group=GLOO)),
                         ("direct", lambda: direct.allreduce(a))):
            t.fill_(rank + 1)
            res[name] = timed(fn, size)
            t.fill_(rank + 1)
            fn()
            wrong += int((t != P * (P + 1) / 2).sum())
        rows.append(res)
        if rank == 0:
            print("all_reduce %10d B: npccl %10.1f us, gloo %10.1f us, direct npccl %10.1f us"
                  % (size, res["npccl"] * 1e6, res["gloo"] * 1e6, res["direct"] * 1e6), flush=True)
        size *= 2
    extra = []
    for size in (1 << 20, 16 << 20):
        n = size // 4
        inp = torch.full((n,), float(rank))
        outs = [torch.empty(n) for _ in range(P)]
        b = torch.empty(n)
        res = {"bytes": size}
        for name, g in (("npccl", None), ("gloo", GLOO)):
            res["all_gather_" + name] = timed(lambda: dist.all_gather(outs, inp, group=g), size)
            wrong += sum(int((o != r).sum()) for r, o in enumerate(outs))
            b.fill_(rank)
            res["broadcast_" + name] = timed(lambda: dist.broadcast(b, 0, group=g), size)
            wrong += int((b != 0).sum())
        extra.append(res)
        if rank == 0:
            print("%d B: all_gather npccl %.1f us gloo %.1f us; broadcast npccl %.1f us gloo %.1f us"
                  % (size, res["all_gather_npccl"] * 1e6, res["all_gather_gloo"] * 1e6,
                     res["broadcast_npccl"] * 1e6, res["broadcast_gloo"] * 1e6), flush=True)
    w = torch.tensor([wrong])
    dist.all_reduce(w, group=GLOO)
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"all_reduce": rows, "extra": extra, "wrong": int(w[0]), "ranks": P,
                       "describe": npushm.ccl_torch.describe()}, f)
    direct.destroy()
    dist.barrier(group=GLOO)
    os._exit(0)


if __name__ == "__main__":
    main()
