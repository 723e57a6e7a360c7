# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""torch_worker.py - one rank of the torch.distributed backend tests (run by test_ccl_torch.py).

    RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p \
        python3 torch_worker.py SCENARIO OUTDIR

Scenarios: matrix (every op x dtype x sizes, sync and async, contiguous and not, in place
where torch allows, default group and a subgroup, each call also made on gloo with the same
inputs and compared: integers equal, floats within tolerance; a local reference where gloo
lacks the dtype or op), matrix-tcp (a float32/int64 subset with NPCCL_DISABLE_SHM=1),
ddp (three DistributedDataParallel steps: replicas identical and equal to full-batch
training), kill (the last rank kills itself mid-collective; the others must raise naming it),
errors (what npccl cannot do raises RuntimeError naming the op and the reason),
powersgd (DDP with torch's PowerSGD hook, whose Future.then callbacks issue collectives and
wait for them, beside the same run on gloo), then-wait (a minimal then-callback that waits on
a second collective, through the future and through the Work), late-kill (3 ranks: rank 0
busy outside torch, rank 1 in a barrier, rank 2 killed: rank 1 must raise naming rank 2
before rank 0 comes back), deterministic (npushm.ccl_torch.set_deterministic: reductions of
float32/float64/float16/bfloat16 bitwise equal to the rank-order reference).
Each rank writes OUTDIR/SCENARIO.RANK.json: {case: [ok, message]}.
"""
import functools
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))

DTYPES = ["int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
REDUCE_OPS = ["sum", "product", "min", "max", "avg"]
OPS = (["all_reduce_" + o for o in REDUCE_OPS] +
       ["broadcast", "reduce", "all_gather", "all_gather_into_tensor", "gather", "scatter",
        "reduce_scatter", "reduce_scatter_tensor", "all_to_all_single", "all_to_all_single_uneven",
        "all_to_all", "send_recv", "all_reduce_coalesced"])
GROUPS = ["world", "sub"]
FULL = os.environ.get("NPCCL_PY_FULL") == "1"


def matrix_cases(tcp=False):
    """(group, op, dtype) names; the same list in the test and the worker."""
    cases = []
    dts = ["float32", "int64", "bfloat16"] if tcp else DTYPES
    groups = ["world"] if tcp else GROUPS
    for g in groups:
        for op in OPS:
            for dt in dts:
                cases.append("%s/%s/%s" % (g, op, dt))
        cases.append("%s/barrier/-" % g)
        if not tcp:
            for dt in ("int16", "complex64", "bool"):
                for op in ("broadcast", "all_gather_into_tensor", "all_to_all_single"):
                    cases.append("%s/%s/%s" % (g, op, dt))
    return cases


def sizes_for(dt, op, group):
    """0, 1 and an odd count always; several MiB (3 MiB + 3 elements) for float32, and for
    one more dtype per op (rotating, so every dtype gets it on some ops) in the default
    group; every dtype with NPCCL_PY_FULL=1 (make check-ccl-python-full)."""
    esize = torch.empty((), dtype=dt).element_size()
    big = (3 << 20) // esize + 3
    name = str(dt).replace("torch.", "")
    rot = DTYPES[OPS.index(op) % len(DTYPES)] if op in OPS else None
    if FULL or name == "float32" or (group == "world" and name == rot):
        return [0, 1, 1001, big]
    return [0, 1, 1001]


@functools.lru_cache(maxsize=512)
def values(dt, op, rank, n, salt=0):
    """Rank `rank`'s input: small integers, exact in every dtype and order. Cached: read
    only (inputs of in-place calls use fresh(), a copy)."""
    i = torch.arange(n, dtype=torch.int64) + salt
    if op == "product":
        v = torch.where((i + rank) % 3 == 0, 2, 1)
        if not (dt == torch.uint8 or dt == torch.bool):
            v = torch.where((i * 3 + rank) % 5 == 0, -v, v)
    elif op in ("min", "max"):
        v = (i * 17 + rank * 31) % 11
        if dt not in (torch.uint8, torch.bool):
            v = v - 5
    else:
        v = (i * 13 + rank * 7 + (i >> 7)) % 5
        if dt not in (torch.uint8, torch.bool):
            v = v - 2
    if dt == torch.bool:
        return (v % 2).to(torch.bool)
    if dt.is_complex:
        return torch.complex(v.float(), (v + 1).float()).to(dt)
    return v.to(dt)


def fresh(*args):
    return values(*args).clone()


def as_layout(t, noncontig):
    """A copy of t, contiguous or not."""
    if not noncontig or t.numel() == 0:
        return t.clone()
    base = torch.empty(t.numel() * 2, dtype=t.dtype)
    v = base[::2]
    v.copy_(t)
    return v


def close(a, b, dt):
    if a.shape != b.shape:
        return False
    if dt.is_floating_point or dt.is_complex:
        return bool(torch.allclose(a.to(torch.complex128 if dt.is_complex else torch.float64),
                                   b.to(torch.complex128 if dt.is_complex else torch.float64),
                                   rtol=1e-2 if dt in (torch.float16, torch.bfloat16) else 1e-5,
                                   atol=1e-3))
    return bool(torch.equal(a, b))


REDOP = {"sum": "SUM", "product": "PRODUCT", "min": "MIN", "max": "MAX", "avg": "AVG"}


def local_reduce(op, ts, dt, P):
    acc = ts[0].to(torch.float64 if dt.is_floating_point else torch.int64).clone()
    for t in ts[1:]:
        x = t.to(acc.dtype)
        if op in ("sum", "avg"):
            acc = acc + x
        elif op == "product":
            acc = acc * x
        elif op == "min":
            acc = torch.minimum(acc, x)
        else:
            acc = torch.maximum(acc, x)
    if op == "avg":
        acc = acc / P if dt.is_floating_point else torch.div(acc, P, rounding_mode="trunc")
    if dt.is_floating_point:
        return acc.to(dt)
    # integer wrap-around as the library does
    bits = torch.iinfo(dt).bits
    if dt == torch.uint8:
        return (acc % 256).to(dt)
    return ((acc + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))).to(dt) if bits < 64 else acc


def run_op(op, dt, n, g, gr, P, ranks, noncontig, async_op):
    """One call on group g (npccl) and the same on gr (gloo); returns (npccl result, gloo result
    or None, local reference). Results are lists of tensors."""
    me = dist.get_rank(g)
    red = None
    if op.startswith("all_reduce_") and op != "all_reduce_coalesced":
        red = op[len("all_reduce_"):]

    def one(group, check_gloo):
        wk = []
        if red:
            t = as_layout(values(dt, red, me, n), noncontig)
            wk.append(dist.all_reduce(t, op=getattr(dist.ReduceOp, REDOP[red]), group=group,
                                      async_op=async_op))
            out = [t]
        elif op == "all_reduce_coalesced":
            ts = [as_layout(values(dt, "sum", me, n), noncontig), fresh(dt, "sum", me, 7, 3)]
            wk.append(dist.all_reduce_coalesced(ts, group=group, async_op=async_op))
            out = ts
        elif op == "broadcast":
            t = as_layout(values(dt, "sum", me, n), noncontig)
            wk.append(dist.broadcast(t, src=ranks[-1], group=group, async_op=async_op))
            out = [t]
        elif op == "reduce":
            t = as_layout(values(dt, "sum", me, n), noncontig)
            wk.append(dist.reduce(t, dst=ranks[1 % P], group=group, async_op=async_op))
            out = [t] if me == 1 % P else []
        elif op == "all_gather":
            outs = [as_layout(torch.zeros(n, dtype=dt), noncontig) for _ in range(P)]
            wk.append(dist.all_gather(outs, as_layout(values(dt, "sum", me, n), noncontig),
                                      group=group, async_op=async_op))
            out = outs
        elif op == "all_gather_into_tensor":
            o = torch.zeros(n * P, dtype=dt)
            inp = fresh(dt, "sum", me, n)
            if noncontig:   # in place: the input is this rank's chunk of the output
                o.narrow(0, me * n, n).copy_(inp)
                inp = o.narrow(0, me * n, n)
            wk.append(dist.all_gather_into_tensor(o, inp, group=group, async_op=async_op))
            out = [o]
        elif op == "gather":
            root = ranks[0]
            outs = [torch.zeros(n, dtype=dt) for _ in range(P)] if dist.get_rank() == root else None
            wk.append(dist.gather(as_layout(values(dt, "sum", me, n), noncontig), outs, dst=root,
                                  group=group, async_op=async_op))
            out = outs or []
        elif op == "scatter":
            root = ranks[-1]
            o = as_layout(torch.zeros(n, dtype=dt), noncontig)
            ins = [fresh(dt, "sum", j, n, 100) for j in range(P)] if dist.get_rank() == root else None
            wk.append(dist.scatter(o, ins, src=root, group=group, async_op=async_op))
            out = [o]
        elif op == "reduce_scatter":
            o = as_layout(torch.zeros(n, dtype=dt), noncontig)
            ins = [as_layout(values(dt, "sum", me, n, 1000 * j), noncontig) for j in range(P)]
            wk.append(dist.reduce_scatter(o, ins, group=group, async_op=async_op))
            out = [o]
        elif op == "reduce_scatter_tensor":
            o = torch.zeros(n, dtype=dt)
            inp = as_layout(values(dt, "max", me, n * P), noncontig)
            wk.append(dist.reduce_scatter_tensor(o, inp, op=dist.ReduceOp.MAX, group=group,
                                                 async_op=async_op))
            out = [o]
        elif op == "all_to_all_single":
            o = torch.zeros(n * P, dtype=dt)
            wk.append(dist.all_to_all_single(o, as_layout(values(dt, "sum", me, n * P), noncontig),
                                             group=group, async_op=async_op))
            out = [o]
        elif op == "all_to_all_single_uneven":
            # rank i sends (i + j) % 3 * n rows... to rank j (rows of 2 elements)
            ins_split = [((me + j) % 3) * n for j in range(P)]
            outs_split = [((j + me) % 3) * n for j in range(P)]
            inp = as_layout(values(dt, "sum", me, 2 * sum(ins_split)), noncontig).reshape(-1, 2) \
                if sum(ins_split) else torch.zeros(0, 2, dtype=dt)
            o = torch.zeros(sum(outs_split), 2, dtype=dt)
            wk.append(dist.all_to_all_single(o, inp, outs_split, ins_split, group=group,
                                             async_op=async_op))
            out = [o]
        elif op == "all_to_all":
            outs = [torch.zeros(n + j, dtype=dt) for j in range(P)]
            ins = [as_layout(values(dt, "sum", me, n + me, 10 * j), noncontig) for j in range(P)]
            wk.append(dist.all_to_all(outs, ins, group=group, async_op=async_op))
            out = outs
        elif op == "send_recv":
            right, left = ranks[(me + 1) % P], ranks[(me - 1) % P]
            # gloo refuses non-contiguous receive buffers after posting the send, which
            # leaves its send pending and the next exchange hanging: contiguous for gloo
            o = as_layout(torch.zeros(n, dtype=dt), noncontig and not check_gloo)
            s = fresh(dt, "sum", me, n, 5)
            if P == 1:
                out = []
            else:
                a = dist.isend(s, right, group=group)
                if async_op:
                    b = dist.irecv(o, left, group=group)
                    b.wait()
                else:
                    dist.recv(o, left, group=group)
                a.wait()
            out = [o]
        for w in wk:
            if async_op and w is not None:
                if len(out) % 2:
                    w.get_future().wait()
                    w.wait()
                else:
                    w.wait()
        return [x.clone() for x in out]

    npc = one(g, False)
    if n == 0:
        return npc, None    # gloo divides by zero on empty all_gathers (SIGFPE): reference only
    try:
        glo = one(gr, True)
    except RuntimeError as e:
        glo = None   # gloo lacks this dtype or op: the local reference decides
        if os.environ.get("NPCCL_PY_VERBOSE"):
            print("gloo:", op, dt, n, str(e).splitlines()[0], file=sys.stderr, flush=True)
    return npc, glo


def reference(op, dt, n, me, P, ranks):
    grank = dist.get_rank()
    red = op[len("all_reduce_"):] if op.startswith("all_reduce_") and op != "all_reduce_coalesced" else None
    if red:
        return [local_reduce(red, [values(dt, red, r, n) for r in range(P)], dt, P)]
    if op == "all_reduce_coalesced":
        return [local_reduce("sum", [values(dt, "sum", r, n) for r in range(P)], dt, P),
                local_reduce("sum", [values(dt, "sum", r, 7, 3) for r in range(P)], dt, P)]
    if op == "broadcast":
        return [values(dt, "sum", P - 1, n)]
    if op == "reduce":
        return [local_reduce("sum", [values(dt, "sum", r, n) for r in range(P)], dt, P)] if me == 1 % P else []
    if op == "all_gather":
        return [values(dt, "sum", r, n) for r in range(P)]
    if op == "all_gather_into_tensor":
        return [torch.cat([values(dt, "sum", r, n) for r in range(P)])]
    if op == "gather":
        return [values(dt, "sum", r, n) for r in range(P)] if grank == ranks[0] else []
    if op == "scatter":
        return [values(dt, "sum", me, n, 100)]
    if op == "reduce_scatter":
        return [local_reduce("sum", [values(dt, "sum", r, n, 1000 * me) for r in range(P)], dt, P)]
    if op == "reduce_scatter_tensor":
        return [local_reduce("max", [values(dt, "max", r, n * P)[me * n:(me + 1) * n]
                                     for r in range(P)], dt, P)]
    if op == "all_to_all_single":
        return [torch.cat([values(dt, "sum", r, n * P)[me * n:(me + 1) * n] for r in range(P)])]
    if op == "all_to_all_single_uneven":
        parts = []
        for r in range(P):
            split = [((r + j) % 3) * n for j in range(P)]
            rows = values(dt, "sum", r, 2 * sum(split)).view(-1, 2) if sum(split) else torch.zeros(0, 2, dtype=dt)
            off = sum(split[:me])
            parts.append(rows[off:off + split[me]])
        return [torch.cat(parts)]
    if op == "all_to_all":
        return [values(dt, "sum", r, n + r, 10 * me) for r in range(P)]
    if op == "send_recv":
        return [values(dt, "sum", (me - 1) % P, n, 5)]
    raise ValueError(op)


def scenario_matrix(res, tcp=False):
    P = dist.get_world_size()
    world_g = None
    gloo_world = dist.new_group(backend="gloo")
    sub_ranks = [0, P - 1]
    sub = dist.new_group(sub_ranks, backend="npccl")
    gloo_sub = dist.new_group(sub_ranks, backend="gloo")
    rank = dist.get_rank()
    for case in matrix_cases(tcp):
        gname, op, dtn = case.split("/")
        if gname == "sub" and rank not in sub_ranks:
            continue
        g, gr, ranks = (world_g, gloo_world, list(range(P))) if gname == "world" else (sub, gloo_sub, sub_ranks)
        gp = len(ranks)
        me = dist.get_rank(g) if g is not None else rank
        t0 = time.perf_counter()
        try:
            if op == "barrier":
                for a in (False, True):
                    w = dist.barrier(group=g, async_op=a)
                    if a:
                        w.wait()
                res[case] = [True, ""]
                continue
            dt = getattr(torch, dtn)
            msgs = []
            k = gloo_same = gloo_wrong = 0
            for n in sizes_for(dt, op, gname):
                for async_op in (False, True):
                    k += 1
                    noncontig = (k % 2 == 0)
                    npc, glo = run_op(op, dt, n, g, gr, gp, ranks, noncontig, async_op)
                    ref = reference(op, dt, n, me, gp, ranks)
                    tag = "n=%d %s %s" % (n, "async" if async_op else "sync",
                                          "non-contiguous/in place" if noncontig else "contiguous")
                    if len(npc) != len(ref) or not all(close(a, b, dt) for a, b in zip(npc, ref)):
                        msgs.append("%s: npccl differs from the reference" % tag)
                    # gloo is the peer, but not always right: its async calls on
                    # non-contiguous tensors return stale data. Where gloo itself differs
                    # from the reference, the reference alone decides (counted in the message).
                    if glo is not None:
                        gloo_ok = len(glo) == len(ref) and all(close(a, b, dt) for a, b in zip(glo, ref))
                        if not gloo_ok:
                            gloo_wrong += 1
                        elif len(glo) != len(npc) or not all(close(a, b, dt) for a, b in zip(npc, glo)):
                            msgs.append("%s: npccl differs from gloo" % tag)
                        else:
                            gloo_same += 1
            res[case] = [not msgs, "; ".join(msgs[:3]) or
                         "(%.0f ms; equal to gloo in %d calls, gloo differed from the reference in %d)"
                         % ((time.perf_counter() - t0) * 1e3, gloo_same, gloo_wrong)]
            if os.environ.get("NPCCL_PY_VERBOSE"):
                print(case, res[case], file=sys.stderr, flush=True)
        except Exception as e:
            res[case] = [False, "%s: %s" % (type(e).__name__, e)]


def scenario_ddp(res):
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    rank, P = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)     # different initial weights: DDP must broadcast rank 0's
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = DDP(model)
    with torch.no_grad():       # the reference starts from rank 0's weights
        for pr, pm in zip(ref.parameters(), ddp.module.parameters()):
            pr.copy_(pm)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
    ok, msgs = True, []
    for step in range(3):
        gen = torch.Generator().manual_seed(1000 + step)
        xs = [torch.randn(8, 16, generator=gen) for _ in range(P)]
        ys = [torch.randn(8, 4, generator=gen) for _ in range(P)]
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(xs[rank]), ys[rank])
        loss.backward()
        opt.step()
        ropt.zero_grad()
        nn.functional.mse_loss(ref(torch.cat(xs)), torch.cat(ys)).backward()
        ropt.step()
        flat = torch.cat([p.detach().reshape(-1) for p in ddp.module.parameters()])
        allp = [torch.zeros_like(flat) for _ in range(P)]
        dist.all_gather(allp, flat)
        if not all(torch.equal(allp[0], a) for a in allp):
            ok = False
            msgs.append("step %d: replicas differ" % step)
        rflat = torch.cat([p.detach().reshape(-1) for p in ref.parameters()])
        if not torch.allclose(flat, rflat, atol=1e-5):
            ok = False
            msgs.append("step %d: differs from full-batch training by %.2e" %
                        (step, (flat - rflat).abs().max()))
    res["ddp"] = [ok, "; ".join(msgs)]


def scenario_kill(res):
    rank, P = dist.get_rank(), dist.get_world_size()
    t = torch.ones(1 << 18)
    t_last = time.perf_counter()
    try:
        for it in range(100000):
            if rank == P - 1 and it == 20:
                os.kill(os.getpid(), 9)
            if it % 2:
                dist.all_reduce(t)
            else:
                dist.all_reduce(t, async_op=True).wait()
            t_last = time.perf_counter()
        res["kill"] = [False, "no error after 100000 calls"]
    except RuntimeError as e:
        dt = time.perf_counter() - t_last
        msg = str(e)
        good = ("rank %d" % (P - 1)) in msg and dt < 20
        res["kill"] = [good, "raised after %.3f s: %s" % (dt, msg.splitlines()[0][:400])]


def _ddp_model(seed):
    import torch.nn as nn
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 8))


def scenario_powersgd(res):
    import torch.nn as nn
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
    from torch.nn.parallel import DistributedDataParallel as DDP
    rank, P = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    runs = {}
    for name, pg in (("npccl", None), ("gloo", gloo)):
        ddp = DDP(_ddp_model(0), process_group=pg)
        # compress from the third step on, every layer (rank-1 approximations)
        state = powerSGD.PowerSGDState(process_group=pg, matrix_approximation_rank=1,
                                       start_powerSGD_iter=2, min_compression_rate=0.5)
        ddp.register_comm_hook(state, powerSGD.powerSGD_hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        for step in range(6):
            gen = torch.Generator().manual_seed(2000 + 10 * step + rank)
            x, y = torch.randn(16, 64, generator=gen), torch.randn(16, 8, generator=gen)
            opt.zero_grad()
            nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
        runs[name] = torch.cat([p.detach().reshape(-1) for p in ddp.module.parameters()])
    flat = runs["npccl"]
    allp = [torch.zeros_like(flat) for _ in range(P)]
    dist.all_gather(allp, flat)
    same = all(torch.equal(allp[0], a) for a in allp)
    diff = (flat - runs["gloo"]).abs().max().item()
    res["powersgd"] = [same and diff < 1e-4,
                       "replicas %s, max difference to gloo's run %.2e" %
                       ("identical" if same else "differ", diff)]


def scenario_then_wait(res):
    P = dist.get_world_size()
    a = torch.ones(1000)

    def via_future(fut):
        b = torch.full((1000,), 2.0)
        dist.all_reduce(b, async_op=True).get_future().wait()
        return fut.value()[0] + b

    def via_work(fut):
        b = torch.full((1000,), 3.0)
        dist.all_reduce(b, async_op=True).wait()
        return fut.value()[0] + b

    for name, cb, extra in (("then-wait future", via_future, 2), ("then-wait work", via_work, 3)):
        a.fill_(1)
        out = dist.all_reduce(a, async_op=True).get_future().then(cb).wait()
        want = torch.full((1000,), float(P + extra * P))
        res[name] = [bool(torch.equal(out, want)), str(out[:3].tolist())]
    # chained: a callback's collective completes while the first callback still runs
    c = torch.ones(10)
    f = dist.all_reduce(c, async_op=True).get_future()
    f2 = f.then(lambda fu: dist.all_reduce(fu.value()[0], async_op=True).get_future().wait()[0])
    out = f2.then(lambda fu: dist.all_reduce(fu.value(), async_op=True).get_future().wait()[0]).wait()
    res["then-wait chained"] = [bool(torch.equal(out, torch.full((10,), float(P ** 3)))),
                                str(out[:3].tolist())]


def scenario_late_kill(res, outdir):
    rank = dist.get_rank()
    back, named = os.path.join(outdir, "late-back"), os.path.join(outdir, "late-named")
    t = torch.ones(1000)
    dist.all_reduce(t)
    if rank == 2:
        dist.barrier(async_op=True)
        time.sleep(0.3)
        os.kill(os.getpid(), 9)
    if rank == 0:
        end = time.perf_counter() + 15
        while not os.path.exists(named) and time.perf_counter() < end:
            time.sleep(0.01)            # busy outside npccl
        open(back, "w").close()
    t0 = time.perf_counter()
    try:
        dist.barrier()
        dist.barrier()
        res["late-kill"] = [False, "no error"]
    except RuntimeError as e:
        late = os.path.exists(back)
        if rank == 1:
            open(named, "w").close()
        msg = str(e).splitlines()[0][:400]
        good = "rank 2" in msg and not (rank == 1 and late)
        res["late-kill"] = [good, "raised after %.3f s%s: %s" % (
            time.perf_counter() - t0, " (after rank 0 came back)" if late else "", msg)]


def _det_inputs(rank, n, dt, salt):
    g = torch.Generator().manual_seed(7919 * salt + rank)
    x = (torch.rand(n, generator=g, dtype=torch.float64) - 0.5) * \
        torch.pow(2.0, torch.randint(-8, 9, (n,), generator=g).double())
    return x.to(dt)


def _det_reference(P, n, dt, salt):
    # the canonical order: ((x0 + x1) + x2) ..., each step rounded to the dtype
    # (float16/bfloat16 added in float32), as docs/ccl.md states
    acc = _det_inputs(0, n, dt, salt)
    for r in range(1, P):
        x = _det_inputs(r, n, dt, salt)
        acc = (acc.float() + x.float()).to(dt) if dt in (torch.float16, torch.bfloat16) else acc + x
    return acc


def scenario_deterministic(res):
    import npushm.ccl_torch as ct
    rank, P = dist.get_rank(), dist.get_world_size()
    ct.set_deterministic(True)
    salt = 0
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        for n in (3, 1000, 300007):
            salt += 1
            want = _det_reference(P, n, dt, salt)
            bits = lambda t: t.view(torch.int16 if t.element_size() == 2 else
                                    torch.int32 if t.element_size() == 4 else torch.int64)
            t = _det_inputs(rank, n, dt, salt)
            dist.all_reduce(t)
            ok = torch.equal(bits(t), bits(want))
            t = _det_inputs(rank, n, dt, salt)
            dist.all_reduce(t, async_op=True).wait()
            ok = ok and torch.equal(bits(t), bits(want))
            m = n - n % P
            out = torch.empty(m // P, dtype=dt)
            dist.reduce_scatter_tensor(out, _det_inputs(rank, n, dt, salt)[:m].contiguous())
            ok = ok and torch.equal(bits(out), bits(want[rank * (m // P):(rank + 1) * (m // P)]))
            t = _det_inputs(rank, n, dt, salt)
            dist.reduce(t, dst=salt % P)
            if rank == salt % P:
                ok = ok and torch.equal(bits(t), bits(want))
            res["deterministic %s n=%d" % (str(dt).split(".")[1], n)] = [
                bool(ok), "all_reduce (sync, async), reduce_scatter_tensor, reduce: %s" %
                ("bits equal the rank-order reference" if ok else "bits differ")]
    # control: without the mode some result differs (inputs order-sensitive)
    ct.set_deterministic(False)
    differ = 0
    for n in (1000, 300007):
        salt += 1
        t = _det_inputs(rank, n, torch.float32, salt)
        dist.all_reduce(t)
        differ += not torch.equal(t, _det_reference(P, n, torch.float32, salt))
    res["deterministic control"] = [differ > 0, "%d of 2 default-mode results differ" % differ]


def scenario_errors(res):
    rank, P = dist.get_rank(), dist.get_world_size()
    t = torch.ones(4)

    def expect(name, fn, *words):
        try:
            fn()
            res[name] = [False, "did not raise"]
        except (RuntimeError, ValueError) as e:
            m = str(e)
            res[name] = [all(w in m for w in words), m.splitlines()[0][:300]]

    expect("ReduceOp.BAND", lambda: dist.all_reduce(t.int(), op=dist.ReduceOp.BAND), "all_reduce", "BAND")
    expect("reduction on int16", lambda: dist.all_reduce(t.short()), "all_reduce", "Short")
    expect("send with a tag", lambda: dist.send(t, (rank + 1) % P, tag=3), "send", "tag")
    expect("recv from any source", lambda: dist.recv(t), "recv", "any source")
    expect("SUM on bool", lambda: dist.all_reduce(t.bool()), "all_reduce", "bool")
    expect("all_gather_into_tensor, wrong size",
           lambda: dist.all_gather_into_tensor(torch.zeros(3), t), "all_gather_into_tensor", "world_size")
    # the group still works after the errors
    x = torch.ones(3)
    dist.all_reduce(x)
    res["usable after errors"] = [bool(torch.equal(x, torch.full((3,), float(P)))), str(x.tolist())]
    import npushm.ccl_torch as ct
    s = ct.shared_tensor((1 << 16,), torch.float32)
    s.fill_(rank + 1)
    dist.all_reduce(s)
    res["shared_tensor all_reduce"] = [bool((s == P * (P + 1) / 2).all()), ct.describe()]
    w = dist.all_reduce(torch.ones(8), async_op=True)
    w.wait()
    res["work.is_completed after wait"] = [bool(w.is_completed() and w.is_success()), ""]


def main():
    scenario, outdir = sys.argv[1], sys.argv[2]
    if os.environ.get("NPCCL_PY_TRACEBACK_AFTER"):   # debugging a hang: dump the stacks
        import faulthandler
        faulthandler.dump_traceback_later(float(os.environ["NPCCL_PY_TRACEBACK_AFTER"]))
    if scenario == "matrix-tcp":
        os.environ["NPCCL_DISABLE_SHM"] = "1"
    if scenario == "deterministic":
        # forced algorithms whose order is not the rank order: the mode must
        # override them, and the control (mode off) must then differ
        os.environ["NPCCL_ALGO"] = "allreduce=ring,reduce_scatter=ring,reduce=ring"
    import npushm.ccl_torch  # noqa: F401  registers "npccl"
    from datetime import timedelta
    rank = int(os.environ["RANK"])
    res = {}
    timeout = timedelta(seconds=20 if scenario in ("kill", "late-kill") else 120)
    try:
        dist.init_process_group("npccl", timeout=timeout)
        {"matrix": scenario_matrix, "matrix-tcp": lambda r: scenario_matrix(r, tcp=True),
         "ddp": scenario_ddp, "kill": scenario_kill, "errors": scenario_errors,
         "deterministic": scenario_deterministic, "powersgd": scenario_powersgd, "then-wait": scenario_then_wait,
         "late-kill": lambda r: scenario_late_kill(r, outdir)}[scenario](res)
    except Exception:
        res["worker"] = [False, traceback.format_exc()[-1500:]]
    with open(os.path.join(outdir, "%s.%d.json" % (scenario, rank)), "w") as f:
        json.dump(res, f)
    sys.stdout.flush()
    os._exit(0)   # skip teardown: a killed peer must not hang the destructors


if __name__ == "__main__":
    main()
