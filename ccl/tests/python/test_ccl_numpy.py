# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""test_ccl_numpy.py - npushm.ccl, the npccl binding for NumPy / DLPack / buffer objects:
every collective and send/recv with 2 and 3 forked processes against NumPy references
(sync and async, non-contiguous outputs, DLPack bfloat16 tensors, bytearrays), groups,
key-value bootstrap, shared arrays, the copy counters, and errors for bad input."""
import ctypes
import multiprocessing as mp
import os
import traceback

import numpy as np
import pytest

from npushm import ccl

CTX = mp.get_context("fork")


def _run(fn, P, *args, timeout=120):
    """Runs fn(comm, rank, P, *args) on P forked ranks; returns the ranks' return values
    (an exception's text fails the test)."""
    uid = ccl.unique_id()
    q = CTX.Queue()

    def body(r):
        try:
            c = ccl.Communicator(r, P, uid)
            c.set_timeout(30)
            out = fn(c, r, P, *args)
            c.destroy()
            q.put((r, True, out))
        except BaseException:
            q.put((r, False, traceback.format_exc()))

    ps = [CTX.Process(target=body, args=(r,)) for r in range(P)]
    for p in ps:
        p.start()
    res = {}
    try:
        for _ in ps:
            r, ok, out = q.get(timeout=timeout)
            assert ok, "rank %d:\n%s" % (r, out)
            res[r] = out
    finally:
        for p in ps:
            p.join(5)
            if p.is_alive():
                p.kill()
    return [res[r] for r in range(P)]


def vals(r, n, dtype):
    return ((np.arange(n) * 13 + r * 7) % 5 - (0 if np.dtype(dtype).kind == "u" else 2)).astype(dtype)


DT = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"]


def _collectives(c, r, P, dtype, n, async_op):
    out = {}
    x = vals(r, n, dtype)
    req = c.allreduce(x, op="sum", async_op=async_op)
    if async_op:
        req.wait()
    out["allreduce"] = x
    y = np.zeros((n, 3), dtype=dtype)[:, 1]           # non-contiguous output
    res = c.allreduce(vals(r, n, dtype), y, op="max", async_op=async_op)
    out["allreduce_max"] = (res.wait() if async_op else res).copy()
    out["allgather"] = c.allgather(vals(r, n, dtype))
    out["reduce_scatter"] = c.reduce_scatter(vals(r, n * P, dtype))
    b = vals(r, n, dtype)
    c.broadcast(b, root=P - 1)
    out["broadcast"] = b
    red = vals(r, n, dtype)
    c.reduce(red, op="min", root=0)
    out["reduce"] = red
    out["gather"] = c.gather(vals(r, n, dtype), root=1)
    sc = np.zeros(n, dtype=dtype)
    c.scatter(vals(100, n * P, dtype) if r == 0 else None, sc, root=0)
    out["scatter"] = sc
    out["alltoall"] = c.alltoall(vals(r, n * P, dtype))
    c.barrier()
    return out


# every dtype with 0, 1 and an odd count; a large odd count (MiB) for float32 and int8
SIZES = [(d, n) for d in DT for n in (0, 1, 1001)] + [("float32", 300007), ("int8", 300007)]


@pytest.mark.parametrize("P", [2, 3])
@pytest.mark.parametrize("dtype,n", SIZES)
def test_collectives(P, dtype, n):
    for async_op in (False, True):
        outs = _run(_collectives, P, dtype, n, async_op)
        every = [vals(r, n, dtype) for r in range(P)]
        s = sum(e.astype(np.int64) for e in every)
        for r, o in enumerate(outs):
            assert np.array_equal(o["allreduce"], s.astype(dtype)), (r, async_op)
            assert np.array_equal(o["allreduce_max"], np.maximum.reduce(every)), (r, async_op)
            assert np.array_equal(o["allgather"], np.concatenate(every))
            full = sum(vals(q, n * P, dtype).astype(np.int64) for q in range(P))
            assert np.array_equal(o["reduce_scatter"], full[r * n:(r + 1) * n].astype(dtype))
            assert np.array_equal(o["broadcast"], every[P - 1])
            if r == 0:
                assert np.array_equal(o["reduce"], np.minimum.reduce(every))
            if r == 1:
                assert np.array_equal(o["gather"], np.concatenate(every))
            assert np.array_equal(o["scatter"], vals(100, n * P, dtype)[r * n:(r + 1) * n])
            exp = np.concatenate([vals(q, n * P, dtype)[r * n:(r + 1) * n] for q in range(P)])
            assert np.array_equal(o["alltoall"], exp)


def _p2p(c, r, P):
    right, left = (r + 1) % P, (r - 1) % P
    a = np.full(1 << 21, r, dtype=np.int32)      # 8 MiB: more than any buffer in between
    b = np.zeros_like(a)
    with ccl.group():
        c.send(a, right)
        c.recv(b, left)
    d = bytearray(4096)
    s = c.send(bytes([r]) * 4096, right, async_op=True)
    q = c.recv(d, left, async_op=True)
    done = q.test() or q.wait(timeout=20) is not None or True
    s.wait()
    return int(b[0]), int(b[-1]), d[0], d[-1], done


@pytest.mark.parametrize("P", [2, 3])
def test_send_recv_groups_and_buffers(P):
    for r, (b0, b1, d0, d1, _) in enumerate(_run(_p2p, P)):
        left = (r - 1) % P
        assert (b0, b1, d0, d1) == (left, left, left, left)


def _dlpack(c, r, P):
    import torch
    t = torch.full((1000,), float(r + 1), dtype=torch.bfloat16)
    c.allreduce(t)
    f = torch.arange(6, dtype=torch.float32) * (r + 1)
    g = c.allgather(f.numpy())
    return float(t[0]), float(t[-1]), g.tolist()


def test_dlpack_bfloat16_torch_tensors():
    outs = _run(_dlpack, 2)
    for t0, t1, g in outs:
        assert (t0, t1) == (3.0, 3.0)
        assert g == [0, 1, 2, 3, 4, 5, 0, 2, 4, 6, 8, 10]


def _shared(c, r, P):
    z = c.shared_array((256, 4), "float32")
    assert z.flags.c_contiguous and not z.any()
    z[:] = r + 1
    c.allreduce(z)
    return float(z.min()), float(z.max())


@pytest.mark.parametrize("P", [2, 3])
def test_shared_arrays_zero_copy_allreduce(P):
    want = P * (P + 1) / 2
    assert all(o == (want, want) for o in _run(_shared, P))


def _copies(c, r, P):
    """A 4 MiB AllGather with the single-copy algorithm (npccl_comm_set_algo, which the
    binding does not wrap): the counters show the peers' blocks moved by single copies,
    nothing through shared memory."""
    set_algo = ccl.lib().npccl_comm_set_algo
    set_algo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    assert set_algo(c._handle(), 1, 8) == 0     # NPCCL_COLL_ALLGATHER, NPCCL_ALGO_CMA
    before = c.copy_stats()
    out = c.allgather(np.full(1 << 20, r, dtype=np.float32))
    after = c.copy_stats()
    delta = {k: after[k] - before[k] for k in after}
    return delta, bool((out.reshape(P, -1) == np.arange(P)[:, None]).all())


@pytest.mark.parametrize("P", [2, 3])
def test_copy_stats_show_the_single_copy_path(P):
    for delta, right in _run(_copies, P):
        assert right
        assert delta["space_bytes"] + delta["cma_bytes"] == (P - 1) * 4 << 20, delta
        assert delta["space_copies"] + delta["cma_copies"] == P - 1, delta
        assert delta["shm_bytes"] == 0, delta


def _errors(c, r, P):
    msgs = []
    for fn in (lambda: c.allreduce(np.zeros(3, dtype=np.complex64)),
               lambda: c.allreduce(np.zeros(3), op="xor"),
               lambda: c.allreduce(np.zeros(3), np.zeros(4)),
               lambda: c.allreduce(b"abc"),
               lambda: c.allreduce([1.0, 2.0]),
               lambda: c.broadcast(np.zeros(3), root=P),
               lambda: c.send(np.zeros(3), r)):
        try:
            fn()
            msgs.append(None)
        except (TypeError, ValueError, ccl.CclError) as e:
            msgs.append("%s: %s" % (type(e).__name__, e))
    x = np.ones(4)
    c.allreduce(x)                  # still usable
    return msgs, float(x[0])


def test_bad_input_raises_clear_errors():
    for msgs, x0 in _run(_errors, 2):
        assert x0 == 2.0
        assert all(msgs), msgs
        assert "cannot reduce this dtype" in msgs[0]
        assert "op must be one of" in msgs[1]
        assert "bytes" in msgs[2]
        assert "read-only" in msgs[3]
        assert "neither a NumPy array" in msgs[4]
        assert "INVALID_ARG" in msgs[5] and "root" in msgs[5]
        assert "INVALID_ARG" in msgs[6] and "peer" in msgs[6]


def test_store_bootstrap_and_a_missing_rank():
    P = 3
    mgr = CTX.Manager()
    store = mgr.dict()

    def set_fn(k, v):
        store[k] = v

    def get_fn(k, timeout):
        import time
        end = time.time() + timeout
        while time.time() < end:
            if k in store:
                return store[k]
            time.sleep(0.002)
        return None

    q = CTX.Queue()

    def body(r, size, prefix, absent):
        try:
            if r == absent:
                q.put((r, "absent"))
                return
            c = ccl.Communicator.from_store(r, size, set_fn, get_fn, prefix=prefix, timeout=3)
            x = np.array([r + 1.0])
            c.allreduce(x)
            c.destroy()
            q.put((r, float(x[0])))
        except ccl.CclError as e:
            q.put((r, "%s|%s" % (e.status, e)))

    for prefix, absent in (("a/", -1), ("b/", 2)):
        ps = [CTX.Process(target=body, args=(r, P, prefix, absent)) for r in range(P)]
        for p in ps:
            p.start()
        res = dict(q.get(timeout=60) for _ in ps)
        for p in ps:
            p.join(10)
        if absent < 0:
            assert all(res[r] == 6.0 for r in range(P)), res
        else:
            for r in (0, 1):
                assert res[r].startswith("BOOTSTRAP|") and "did not publish" in res[r], res
    mgr.shutdown()


def _killed(c, r, P):
    x = np.ones(1 << 16, dtype=np.float32)
    if r == P - 1:
        for _ in range(5):
            c.allreduce(x)
        os.kill(os.getpid(), 9)
    try:
        while True:
            c.allreduce(x)
    except ccl.CclError as e:
        return e.status, str(e)


def test_killed_rank_is_named():
    P = 3
    uid = ccl.unique_id()
    q = CTX.Queue()

    def body(r):
        c = ccl.Communicator(r, P, uid)
        c.set_timeout(20)
        q.put((r, _killed(c, r, P)))

    ps = [CTX.Process(target=body, args=(r,)) for r in range(P)]
    for p in ps:
        p.start()
    res = dict(q.get(timeout=60) for _ in range(P - 1))
    for p in ps:
        p.join(10)
    for r in range(P - 1):
        status, msg = res[r]
        assert status == "PEER_DEAD" and "rank %d" % (P - 1) in msg, msg
