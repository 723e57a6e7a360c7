# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""npushm.ccl_torch: npccl as a torch.distributed backend named "npccl".

Importing this module registers the backend (PyTorch 1.13, CPU tensors):

    import torch.distributed as dist
    import npushm.ccl_torch
    dist.init_process_group("npccl", rank=r, world_size=n)   # or init_method=..., store=...
    dist.all_reduce(t)                                        # every op, async_op=True too
    g = dist.new_group([0, 2], backend="npccl")
    buf = npushm.ccl_torch.shared_tensor((1 << 20,), torch.float32)   # zero-copy AllReduce
    npushm.ccl_torch.set_deterministic(True)   # bitwise reproducible reductions

Each process group bootstraps through the Store torch hands it (no other
rendezvous) and owns two npccl communicators: collectives, and send/recv.
Supported: all_reduce (SUM, AVG, PRODUCT, MIN, MAX), all_reduce_coalesced,
broadcast, reduce, all_gather, all_gather_into_tensor, gather, scatter,
reduce_scatter, reduce_scatter_tensor, all_to_all_single (even and uneven
splits), all_to_all, barrier, send/recv/isend/irecv/batch_isend_irecv; every
dtype for data movement, int8/uint8/int32/int64/float16/bfloat16/float32/
float64 (and bool with MIN/MAX/PRODUCT) for reductions; contiguous or not.
Work objects support wait (with timeout), is_completed and get_future (so
DistributedDataParallel works, communication hooks such as PowerSGD included:
futures complete off npccl's threads, so a Future.then callback may issue a
collective and wait for it). Anything else raises RuntimeError naming the
operation and the reason (other ReduceOps, tags, receive from any source,
GPU tensors). A process's failure (a killed rank) makes the others' calls
raise with the culprit's rank in the message, within milliseconds.

The extension _npccl_torch.so is built by `make ccl-torch` (needs Debian's
libtorch-dev, python3-pybind11, python3-dev) into build/lib; it is looked up
in $NPUSHM_LIBDIR, then $BUILD/lib, then the build tree next to this package.
"""
import importlib.machinery
import importlib.util
import os

import torch
import torch.distributed as dist

BACKEND = "npccl"
_EXT_NAME = "_npccl_torch"


def _find_extension():
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = []
    if os.environ.get("NPUSHM_LIBDIR"):
        dirs.append(os.environ["NPUSHM_LIBDIR"])
    if os.environ.get("BUILD"):
        dirs.append(os.path.join(os.environ["BUILD"], "lib"))
    dirs.append(os.path.join(here, "..", "..", "build", "lib"))
    for d in dirs:
        p = os.path.join(d, _EXT_NAME + ".so")
        if os.path.exists(p):
            return os.path.abspath(p)
    raise ImportError("npushm.ccl_torch: %s.so not found in %s; build it with `make ccl-torch` "
                      "(needs the Debian packages libtorch-dev python3-pybind11 python3-dev)"
                      % (_EXT_NAME, ", ".join(os.path.abspath(d) for d in dirs)))


def _load_extension():
    path = _find_extension()
    loader = importlib.machinery.ExtensionFileLoader("npushm." + _EXT_NAME, path)
    spec = importlib.util.spec_from_file_location("npushm." + _EXT_NAME, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


_ext = _load_extension()
ProcessGroupNpccl = _ext.ProcessGroupNpccl


def _create_process_group(store, rank, size, timeout):
    return ProcessGroupNpccl(store, rank, size, timeout)


if BACKEND.upper() not in getattr(dist.Backend, "_plugins", {}):
    dist.Backend.register_backend(BACKEND, _create_process_group)


def _npccl_group(group, what):
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupNpccl):
        raise RuntimeError("npushm.ccl_torch.%s: the group is not an npccl process group "
                           "(backend %r)" % (what, dist.get_backend(pg)))
    return pg


def shared_tensor(shape, dtype=torch.float32, group=None):
    """A tensor in npccl shared memory: all_reduce with such tensors on every
    rank of a one-host group reduces straight between the ranks' buffers
    (zero-copy). Collective: every rank of `group` calls it with the same
    shape and dtype, in the same order relative to its other calls. The
    memory lives until the group is destroyed."""
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("shared_tensor: negative dimension in %r" % (shape,))
    numel = 1
    for s in shape:
        numel *= s
    esize = torch.empty((), dtype=dtype).element_size()
    pg = _npccl_group(group, "shared_tensor")
    raw = pg._alloc_shared(max(numel * esize, 1))
    return raw[:numel * esize].view(dtype).view(shape)


def set_deterministic(on=True, group=None):
    """Deterministic reductions for `group` (default: the default group):
    all_reduce, reduce_scatter and reduce of floating-point tensors give the
    same bits whatever the size, algorithm, transport, arrival order and
    placement of ranks on hosts, on every rank (each element summed in rank
    order; see docs/ccl.md). Every rank of the group calls it with the same
    value, between collectives. NPCCL_DETERMINISTIC=1 in the environment
    turns it on for every group from the start."""
    _npccl_group(group, "set_deterministic")._set_deterministic(bool(on))


def describe(group=None):
    """One line: rank, size, hosts, and what npccl does for a 1 MiB all_reduce."""
    return _npccl_group(group, "describe")._describe()
