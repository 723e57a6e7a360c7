# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""npushm.ccl: npccl collectives for NumPy arrays and any buffer-protocol or DLPack object.

    from npushm import ccl
    uid = ccl.unique_id()                      # one process; hand the string to the others
    comm = ccl.Communicator(rank, size, uid)   # or Communicator.from_env() under mpirun/torchrun,
                                               # or Communicator.from_store(rank, size, set, get)
    comm.allreduce(x)                          # in place; allreduce(x, out) out of place
    req = comm.allreduce(x, async_op=True)     # Request: test(), wait(timeout=None)
    with ccl.group():                          # pairwise exchange without deadlock
        comm.send(a, peer); comm.recv(b, peer)
    z = comm.shared_array((1 << 20,), "float32")   # npccl_mem_alloc: zero-copy AllReduce

Buffers: NumPy arrays, objects with __dlpack__ (torch tensors, bfloat16
included) or the buffer protocol (bytearray, memoryview, array.array).
Outputs must be writable; non-contiguous outputs are filled through a copy
that lands when the call (or Request.wait) returns. Reductions need a dtype
npccl reduces (int8, uint8, int32, uint32, int64, uint64, float16, bfloat16,
float32, float64); data movement takes any dtype as bytes. Reduction ops:
"sum", "prod", "min", "max", "avg". Failures raise CclError with npccl's
message (a dead or mismatched peer is named). Calls release the GIL.

The library (libnpccl.so.1) is looked up in $NPUSHM_LIBDIR, else $BUILD/lib
and the build tree next to this package, else (installed) by the dynamic linker.
"""
import contextlib
import ctypes
import os
import threading

import numpy as np

STATUS = ["OK", "INVALID_ARG", "NOMEM", "SYSTEM", "BOOTSTRAP", "TIMEOUT", "PEER_DEAD", "MISMATCH",
          "PROTOCOL", "ABORTED", "UNSUPPORTED", "IN_PROGRESS"]
IN_PROGRESS = STATUS.index("IN_PROGRESS")
DTYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32",
          "float64"]
OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "avg": 4}
UINT8 = DTYPES.index("uint8")


class CclError(RuntimeError):
    """An npccl call failed: .status is the status name ("PEER_DEAD"...), the
    message is npccl's (what happened, who, what to do)."""

    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message))
        self.status = status


_lib = None
_lib_lock = threading.Lock()


SONAME = "libnpccl.so.1"


def _find_lib():
    """Where libnpccl is taken from: a path, or the soname for the dynamic linker
    (installed). libnpccl needs libnpushm.so.1, which is loaded first from the
    same place so that a build tree works without LD_LIBRARY_PATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    if os.environ.get("NPUSHM_LIBDIR"):
        d = os.environ["NPUSHM_LIBDIR"]
        if not os.path.exists(os.path.join(d, SONAME)):
            raise ImportError("NPUSHM_LIBDIR is %s but it has no %s; point it at the directory "
                              "holding the library, or unset it to use the installed one"
                              % (d, SONAME))
        dirs = [d]
    else:
        dirs = [os.path.join(os.environ["BUILD"], "lib")] if os.environ.get("BUILD") else []
        dirs.append(os.path.normpath(os.path.join(here, "..", "..", "build", "lib")))
    for d in dirs:
        p = os.path.join(d, SONAME)
        if os.path.exists(p):
            dep = os.path.join(d, "libnpushm.so.1")
            if os.path.exists(dep):
                ctypes.CDLL(dep, mode=ctypes.RTLD_GLOBAL)
            return p
    return SONAME


class _KV(ctypes.Structure):
    pass


_SET_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p,
                           ctypes.c_size_t)
_GET_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p,
                           ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t), ctypes.c_int)
_KV._fields_ = [("set", _SET_FN), ("get", _GET_FN), ("user", ctypes.c_void_p)]


class _ModelLoadResult(ctypes.Structure):
    # npccl_model_load_result_t
    _fields_ = [("hash", ctypes.c_uint8 * 16), ("hash_hex", ctypes.c_char * 33),
                ("source_size", ctypes.c_uint64), ("nhosts", ctypes.c_int),
                ("published", ctypes.c_int), ("deduplicated", ctypes.c_int),
                ("report", ctypes.c_char * 1024)]


class _CopyStats(ctypes.Structure):
    # npccl_copy_stats_t
    _fields_ = [("space_bytes", ctypes.c_uint64), ("space_copies", ctypes.c_uint64),
                ("cma_bytes", ctypes.c_uint64), ("cma_copies", ctypes.c_uint64),
                ("shm_bytes", ctypes.c_uint64), ("reserved", ctypes.c_uint64 * 3)]


def lib():
    """The loaded libnpccl with its prototypes (loaded on first use)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            try:
                L = ctypes.CDLL(_find_lib())
            except OSError as e:
                raise ImportError("cannot load %s (%s): install the libnpccl1 package (or run "
                                  "make install), or set NPUSHM_LIBDIR to a directory holding it"
                                  % (SONAME, e)) from None
            vp, sz, i, cp = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p
            for name, args in {
                "npccl_strerror": [i], "npccl_comm_last_error": [vp],
                "npccl_get_unique_id": [vp], "npccl_unique_id_to_string": [vp, cp],
                "npccl_unique_id_from_string": [cp, vp],
                "npccl_comm_init_rank_err": [vp, i, vp, i, cp, sz],
                "npccl_comm_init_env": [vp, cp, sz],
                "npccl_comm_init_kv": [vp, i, i, ctypes.POINTER(_KV), cp, i, cp, sz],
                "npccl_comm_destroy": [vp], "npccl_comm_abort": [vp],
                "npccl_comm_rank": [vp, ctypes.POINTER(i)], "npccl_comm_size": [vp, ctypes.POINTER(i)],
                "npccl_comm_hosts": [vp, ctypes.POINTER(i), ctypes.POINTER(i)],
                "npccl_comm_set_timeout": [vp, i],
                "npccl_allreduce_async": [vp, vp, sz, i, i, vp, vp],
                "npccl_allgather_async": [vp, vp, sz, i, vp, vp],
                "npccl_reduce_scatter_async": [vp, vp, sz, i, i, vp, vp],
                "npccl_broadcast_async": [vp, vp, sz, i, i, vp, vp],
                "npccl_reduce_async": [vp, vp, sz, i, i, i, vp, vp],
                "npccl_gather_async": [vp, vp, sz, i, i, vp, vp],
                "npccl_scatter_async": [vp, vp, sz, i, i, vp, vp],
                "npccl_alltoall_async": [vp, vp, sz, i, vp, vp],
                "npccl_barrier_async": [vp, vp],
                "npccl_send_async": [vp, sz, i, i, vp, vp], "npccl_recv_async": [vp, sz, i, i, vp, vp],
                "npccl_send": [vp, sz, i, i, vp], "npccl_recv": [vp, sz, i, i, vp],
                "npccl_request_test": [vp], "npccl_request_wait": [vp, i],
                "npccl_request_error": [vp], "npccl_request_free": [vp],
                "npccl_group_start": [], "npccl_group_end": [],
                "npccl_mem_alloc": [vp, sz, ctypes.POINTER(vp)],
                "npccl_model_load": [vp, i, cp, cp, ctypes.c_uint32, ctypes.POINTER(_ModelLoadResult)],
                "npccl_comm_copy_stats": [vp, ctypes.POINTER(_CopyStats)],
            }.items():
                f = getattr(L, name)
                f.argtypes = args
                f.restype = cp if name in ("npccl_strerror", "npccl_comm_last_error",
                                           "npccl_request_error") else ctypes.c_int
            _lib = L
    return _lib


def _raise(st, msg):
    name = STATUS[st] if 0 <= st < len(STATUS) else str(st)
    raise CclError(name, msg)


def unique_id():
    """Starts the rendezvous in this process; returns the id (text) every rank passes to
    Communicator(rank, size, uid)."""
    L = lib()
    raw = ctypes.create_string_buffer(128)
    st = L.npccl_get_unique_id(raw)
    if st:
        _raise(st, "npccl_get_unique_id failed (see NPCCL_LOG=error)")
    txt = ctypes.create_string_buffer(2 * 128 + 1)
    L.npccl_unique_id_to_string(raw, txt)
    return txt.value.decode()


@contextlib.contextmanager
def group():
    """Sends and receives made inside (not async) are posted together when the block ends
    (npccl_group_start/end) and waited for: pairwise exchanges cannot deadlock."""
    L = lib()
    L.npccl_group_start()
    _tls.depth = getattr(_tls, "depth", 0) + 1
    failed = True
    try:
        yield
        failed = False
    finally:
        _tls.depth -= 1
        st = L.npccl_group_end()
        if _tls.depth == 0:
            _tls.keep = []    # the recorded buffers were in use until here
        if st and not failed:
            _raise(st, "a grouped send or receive failed: %s"
                   % (_tls.last_comm.last_error() if getattr(_tls, "last_comm", None) else ""))


# ---- buffers -----------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.restype = ctypes.c_void_p
_capsule_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DL_CODES = {(0, 8): "int8", (0, 32): "int32", (0, 64): "int64", (1, 8): "uint8", (1, 32): "uint32",
             (1, 64): "uint64", (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
             (4, 16): "bfloat16"}


class _Buf:
    """A caller's buffer as (address, element count, npccl dtype name or None, byte size),
    contiguous; `finish()` copies a temporary back into a non-contiguous output."""

    def __init__(self, obj, what, writable):
        self.obj, self.keep, self.back = obj, [obj], None
        if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
            self._from_dlpack(obj, what, writable)
            return
        arr = obj if isinstance(obj, np.ndarray) else None
        if arr is None:
            try:
                mv = memoryview(obj)
            except TypeError:
                raise TypeError("%s: %s is neither a NumPy array, a DLPack object nor a buffer"
                                % (what, type(obj).__name__)) from None
            if writable and mv.readonly:
                raise ValueError("%s: the buffer is read-only" % what)
            arr = np.asarray(mv)
        if writable and not arr.flags.writeable:
            raise ValueError("%s: the array is read-only" % what)
        if not arr.flags.c_contiguous:
            tmp = np.ascontiguousarray(arr)
            if writable:
                self.back = (arr, tmp)
            arr = tmp
        self.keep.append(arr)
        self.addr = arr.ctypes.data if arr.size else 0
        self.count = arr.size
        self.nbytes = arr.nbytes
        self.dtype = arr.dtype.name if arr.dtype.name in DTYPES else None
        self.arr = arr

    def _from_dlpack(self, obj, what, writable):
        dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        if int(dev[0]) not in (1, 3):   # kDLCPU, kDLCUDAHost
            raise ValueError("%s: DLPack device %r is not host memory" % (what, tuple(dev)))
        cap = obj.__dlpack__()
        p = _capsule_ptr(cap, b"dltensor")
        t = _DLTensor.from_address(p)   # DLManagedTensor starts with its DLTensor
        shape = [t.shape[i] for i in range(t.ndim)]
        count = 1
        for s in shape:
            count *= s
        esize = (t.dtype.bits * t.dtype.lanes + 7) // 8
        if t.strides and count > 1:
            expect = 1
            for i in reversed(range(t.ndim)):
                if shape[i] != 1 and t.strides[i] != expect:
                    raise ValueError("%s: the DLPack tensor is not contiguous: pass .contiguous()"
                                     % what)
                expect *= shape[i]
        self.keep.append(cap)   # the producer's deleter runs when the capsule goes
        self.addr = (t.data + t.byte_offset) if count else 0
        self.count = count
        self.nbytes = count * esize
        self.dtype = _DL_CODES.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
        self.arr = None

    def finish(self):
        if self.back is not None:
            np.copyto(self.back[0], self.back[1])
            self.back = None


class Request:
    """A non-blocking call in flight. The buffers stay in use until wait() (or a test()
    that returned True) finished; dropping the Request waits for the call."""

    def __init__(self, comm, handle, bufs, result):
        self._comm, self._h, self._bufs, self._result = comm, handle, bufs, result
        self._done = False

    def _finish(self, st):
        L = lib()
        msg = L.npccl_request_error(self._h).decode(errors="replace")
        L.npccl_request_free(self._h)
        self._h = None
        self._done = True
        if st:
            self._bufs = None
            _raise(st, msg)
        for b in self._bufs:
            b.finish()
        self._bufs = None

    def test(self):
        """True once the call completed (raises CclError if it failed)."""
        if self._done:
            return True
        st = lib().npccl_request_test(self._h)
        if st == IN_PROGRESS:
            return False
        self._finish(st)
        return True

    def wait(self, timeout=None):
        """Waits (at most `timeout` seconds); returns the call's result (the output
        buffer), raises TimeoutError if the timeout passed (the call goes on) or CclError."""
        if not self._done:
            ms = -1 if timeout is None else max(0, int(timeout * 1000))
            st = lib().npccl_request_wait(self._h, ms)
            if st == IN_PROGRESS:
                raise TimeoutError("npccl call not complete after %.3f s (it goes on)" % timeout)
            self._finish(st)
        return self._result

    def __del__(self):
        if getattr(self, "_h", None) and lib is not None:
            try:
                lib().npccl_request_wait(self._h, -1)
                lib().npccl_request_free(self._h)
            except Exception:
                pass


class Communicator:
    """One rank of an npccl communicator. Thread-safe; calls run in call order."""

    def __init__(self, rank, size, uid, _handle=None):
        L = lib()
        self._h = ctypes.c_void_p()
        if _handle is not None:
            self._h = _handle
        else:
            raw = ctypes.create_string_buffer(128)
            if L.npccl_unique_id_from_string(str(uid).encode(), raw):
                raise ValueError("Communicator: %r is not an id from npushm.ccl.unique_id()" % (uid,))
            err = ctypes.create_string_buffer(700)
            st = L.npccl_comm_init_rank_err(ctypes.byref(self._h), int(size), raw, int(rank),
                                            err, len(err))
            if st:
                _raise(st, err.value.decode(errors="replace"))
        r, n = ctypes.c_int(), ctypes.c_int()
        L.npccl_comm_rank(self._h, ctypes.byref(r))
        L.npccl_comm_size(self._h, ctypes.byref(n))
        self.rank, self.size = r.value, n.value

    @classmethod
    def from_env(cls):
        """Rank, size and rendezvous from the launcher's variables (mpirun, torchrun-style
        RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, NPCCL_RANK/NPCCL_NRANKS/NPCCL_ROOT_ADDR)."""
        L = lib()
        h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(700)
        st = L.npccl_comm_init_env(ctypes.byref(h), err, len(err))
        if st:
            _raise(st, err.value.decode(errors="replace"))
        return cls(None, None, None, _handle=h)

    @classmethod
    def from_store(cls, rank, size, set_fn, get_fn, prefix="", timeout=None):
        """Bootstrap through a key-value store the caller has: set_fn(key: str, value: bytes)
        and get_fn(key: str, timeout_s: float) -> bytes (waits for the key; raises or
        returns None if it did not appear)."""
        L = lib()

        def c_set(user, key, val, n):
            try:
                set_fn(key.decode(), ctypes.string_at(val, n))
                return 0
            except Exception:
                return -1

        def c_get(user, key, val, cap, plen, ms):
            try:
                v = get_fn(key.decode(), ms / 1000.0)
                if v is None:
                    return -1
                v = bytes(v)
                ctypes.memmove(val, v, min(cap, len(v)))
                plen[0] = len(v)
                return 0
            except Exception:
                return -1

        kv = _KV(_SET_FN(c_set), _GET_FN(c_get), None)
        h = ctypes.c_void_p()
        err = ctypes.create_string_buffer(700)
        st = L.npccl_comm_init_kv(ctypes.byref(h), int(size), int(rank), ctypes.byref(kv),
                                  prefix.encode(), int((timeout or 0) * 1000), err, len(err))
        if st:
            _raise(st, err.value.decode(errors="replace"))
        return cls(None, None, None, _handle=h)

    # ---- lifetime ----
    def destroy(self):
        """Lets the calls already issued finish, then releases everything."""
        if self._h:
            lib().npccl_comm_destroy(self._h)
            self._h = None

    def abort(self):
        """Gives up at once: the peers fail naming this rank; pending requests fail."""
        if self._h:
            lib().npccl_comm_abort(self._h)
            self._h = None

    close = destroy

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __del__(self):
        if getattr(self, "_h", None):
            try:
                lib().npccl_comm_destroy(self._h)
            except Exception:
                pass

    def _handle(self):
        if not self._h:
            raise ValueError("the communicator was destroyed")
        return self._h

    @property
    def hosts(self):
        """Number of hosts the communicator's ranks run on."""
        nh, h = ctypes.c_int(), ctypes.c_int()
        lib().npccl_comm_hosts(self._handle(), ctypes.byref(nh), ctypes.byref(h))
        return nh.value

    def copy_stats(self):
        """How this rank's data moved between private buffers of ranks on its host so far
        (npccl_comm_copy_stats): a dict of bytes and copies through peers' npushm spaces
        (single copy, no ptrace access), by cross-memory attach (single copy), and bytes
        copied into shared memory (the two-copy path)."""
        s = _CopyStats()
        lib().npccl_comm_copy_stats(self._handle(), ctypes.byref(s))
        return {k: int(getattr(s, k)) for k in
                ("space_bytes", "space_copies", "cma_bytes", "cma_copies", "shm_bytes")}

    def last_error(self):
        """The communicator's last error message ("" if none)."""
        return lib().npccl_comm_last_error(self._handle()).decode(errors="replace")

    def set_timeout(self, seconds):
        """Deadline of each later call (a dead or stopped peer is reported by then)."""
        if lib().npccl_comm_set_timeout(self._handle(), int(seconds * 1000)):
            raise ValueError("set_timeout: the timeout must be > 0")

    # ---- calls ----
    def _go(self, name, fn, args, bufs, result, async_op):
        h = ctypes.c_void_p()
        st = fn(*args, self._handle(), ctypes.byref(h))
        if st:
            _raise(st, "%s: %s" % (name, self.last_error()))
        req = Request(self, h, bufs, result)
        return req if async_op else req.wait()

    @staticmethod
    def _redop(name, op):
        if op not in OPS:
            raise ValueError("%s: op must be one of %s (got %r)" % (name, ", ".join(OPS), op))
        return OPS[op]

    @staticmethod
    def _rdtype(name, b):
        if b.dtype is None:
            raise TypeError("%s: npccl cannot reduce this dtype; it reduces %s"
                            % (name, ", ".join(DTYPES)))
        return DTYPES.index(b.dtype)

    def _out(self, name, send, recv, factor=1):
        """The output buffer: recv, or a new array shaped like send (times factor)."""
        if recv is not None:
            return recv
        if not isinstance(send, np.ndarray):
            raise TypeError("%s: pass an output buffer for a non-NumPy input" % name)
        shape = (send.size * factor,) if factor != 1 else send.shape
        return np.empty(shape, dtype=send.dtype)

    def _same(self, name, s, r, ratio_in=1, ratio_out=1):
        if s.nbytes * ratio_out != r.nbytes * ratio_in:
            raise ValueError("%s: the buffers hold %d and %d bytes; expected a ratio of %d:%d"
                             % (name, s.nbytes, r.nbytes, ratio_in, ratio_out))
        if s.dtype != r.dtype:
            raise TypeError("%s: input and output dtypes differ (%s, %s)" % (name, s.dtype, r.dtype))

    def allreduce(self, send, recv=None, op="sum", async_op=False):
        """recv = op over ranks of send (in place when recv is None or send itself)."""
        L = lib()
        recv = send if recv is None else recv
        s = _Buf(send, "allreduce", recv is send)
        r = s if recv is send else _Buf(recv, "allreduce", True)
        self._same("allreduce", s, r)
        return self._go("allreduce", L.npccl_allreduce_async,
                        (s.addr, r.addr, s.count, self._rdtype("allreduce", s),
                         self._redop("allreduce", op)), [s, r], recv, async_op)

    def allgather(self, send, recv=None, async_op=False):
        """recv (size x send) = every rank's send, in rank order."""
        L = lib()
        recv = self._out("allgather", send, recv, self.size)
        s, r = _Buf(send, "allgather", False), _Buf(recv, "allgather", True)
        if r.nbytes != s.nbytes * self.size:
            raise ValueError("allgather: the output holds %d bytes; expected size x %d"
                             % (r.nbytes, s.nbytes))
        return self._go("allgather", L.npccl_allgather_async, (s.addr, r.addr, s.nbytes, UINT8),
                        [s, r], recv, async_op)

    def reduce_scatter(self, send, recv=None, op="sum", async_op=False):
        """recv = block `rank` of op over ranks of send (send holds size blocks)."""
        L = lib()
        if recv is None:
            if not isinstance(send, np.ndarray) or send.size % self.size:
                raise ValueError("reduce_scatter: the input's size must divide by the number "
                                 "of ranks")
            recv = np.empty(send.size // self.size, dtype=send.dtype)
        s, r = _Buf(send, "reduce_scatter", False), _Buf(recv, "reduce_scatter", True)
        self._same("reduce_scatter", s, r, self.size, 1)
        return self._go("reduce_scatter", L.npccl_reduce_scatter_async,
                        (s.addr, r.addr, r.count, self._rdtype("reduce_scatter", s),
                         self._redop("reduce_scatter", op)), [s, r], recv, async_op)

    def broadcast(self, buf, root=0, async_op=False):
        """buf = root's buf on every rank (in place)."""
        L = lib()
        b = _Buf(buf, "broadcast", True)
        return self._go("broadcast", L.npccl_broadcast_async, (b.addr, b.addr, b.nbytes, UINT8,
                                                               int(root)), [b], buf, async_op)

    def reduce(self, send, recv=None, op="sum", root=0, async_op=False):
        """recv on root = op over ranks of send (in place on root when recv is None)."""
        L = lib()
        me_root = self.rank == root
        recv = send if (recv is None and me_root) else recv
        s = _Buf(send, "reduce", me_root and recv is send)
        r = (s if recv is send else _Buf(recv, "reduce", True)) if me_root else None
        if r is not None:
            self._same("reduce", s, r)
        return self._go("reduce", L.npccl_reduce_async,
                        (s.addr, r.addr if r else None, s.count, self._rdtype("reduce", s),
                         self._redop("reduce", op), int(root)), [s] + ([r] if r else []),
                        recv, async_op)

    def gather(self, send, recv=None, root=0, async_op=False):
        """recv on root = every rank's send in rank order."""
        L = lib()
        me_root = self.rank == root
        if me_root:
            recv = self._out("gather", send, recv, self.size)
        s = _Buf(send, "gather", False)
        r = _Buf(recv, "gather", True) if me_root else None
        if r is not None and r.nbytes != s.nbytes * self.size:
            raise ValueError("gather: the root's output must hold size x the input")
        return self._go("gather", L.npccl_gather_async,
                        (s.addr, r.addr if r else None, s.nbytes, UINT8, int(root)),
                        [s] + ([r] if r else []), recv, async_op)

    def scatter(self, send, recv, root=0, async_op=False):
        """recv = block `rank` of root's send."""
        L = lib()
        r = _Buf(recv, "scatter", True)
        s = _Buf(send, "scatter", False) if self.rank == root else None
        if s is not None and s.nbytes != r.nbytes * self.size:
            raise ValueError("scatter: the root's input must hold size x the output")
        return self._go("scatter", L.npccl_scatter_async,
                        (s.addr if s else None, r.addr, r.nbytes, UINT8, int(root)),
                        [r] + ([s] if s else []), recv, async_op)

    def alltoall(self, send, recv=None, async_op=False):
        """Block j of send goes to rank j's block `rank` of recv."""
        L = lib()
        recv = self._out("alltoall", send, recv)
        s, r = _Buf(send, "alltoall", False), _Buf(recv, "alltoall", True)
        if s.nbytes != r.nbytes or s.nbytes % self.size:
            raise ValueError("alltoall: input and output must have the same size, a multiple "
                             "of the number of ranks")
        return self._go("alltoall", L.npccl_alltoall_async,
                        (s.addr, r.addr, s.nbytes // self.size, UINT8), [s, r], recv, async_op)

    def barrier(self, async_op=False):
        """Wait until every rank has called barrier (a Request with async_op=True)."""
        return self._go("barrier", lib().npccl_barrier_async, (), [], None, async_op)

    def _p2p(self, name, buf, peer, async_op, send):
        L = lib()
        b = _Buf(buf, name, not send)
        if getattr(_tls, "depth", 0) > 0 and not async_op:
            if b.back is not None:
                raise ValueError("%s inside group(): the buffer must be contiguous" % name)
            fn = L.npccl_send if send else L.npccl_recv
            st = fn(b.addr, b.nbytes, UINT8, int(peer), self._handle())
            if st:
                _raise(st, "%s: %s" % (name, self.last_error()))
            _tls.keep = getattr(_tls, "keep", []) + [b]
            _tls.last_comm = self
            return None
        fn = L.npccl_send_async if send else L.npccl_recv_async
        return self._go(name, fn, (b.addr, b.nbytes, UINT8, int(peer)), [b],
                        None if send else buf, async_op)

    def send(self, buf, peer, async_op=False):
        """Messages between two ranks match in call order. Inside `group()` the call is
        recorded and posted when the group ends."""
        return self._p2p("send", buf, peer, async_op, True)

    def recv(self, buf, peer, async_op=False):
        """Receive into `buf` what rank `peer` sends with send() (a Request with async_op=True)."""
        return self._p2p("recv", buf, peer, async_op, False)

    def shared_array(self, shape, dtype="float32"):
        """A NumPy array in npccl shared memory (collective: every rank, same shape and dtype,
        same order). allreduce between such arrays on one host is zero-copy. It lives as
        long as the communicator."""
        dt = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = int(np.prod(shape)) * dt.itemsize
        p = ctypes.c_void_p()
        st = lib().npccl_mem_alloc(self._handle(), max(n, 1), ctypes.byref(p))
        if st:
            _raise(st, "shared_array: %s" % self.last_error())
        raw = (ctypes.c_char * max(n, 1)).from_address(p.value)
        arr = np.frombuffer(raw, dtype=np.uint8)[:n].view(dt).reshape(shape)
        return arr


    def load_model(self, name, path=None, root=0, mode=0):
        """One model load for the cluster (collective): the safetensors file `path` (read on
        rank `root` only) is broadcast and published as model `name` on every host of the
        communicator, with the same content hash, all or none. Returns a dict (hash,
        source_size, hosts, published, deduplicated, report); raises CclError naming the
        failing host and rank, with nothing published."""
        res = _ModelLoadResult()
        st = lib().npccl_model_load(self._handle(), int(root),
                                    None if path is None else os.fsencode(path),
                                    None if name is None else name.encode(), int(mode),
                                    ctypes.byref(res))
        if st:
            _raise(st, "load_model: %s" % self.last_error())
        return {"hash": res.hash_hex.decode(), "source_size": res.source_size,
                "hosts": res.nhosts, "published": res.published,
                "deduplicated": bool(res.deduplicated),
                "report": res.report.decode(errors="replace")}


# Buffers of blocking sends/receives recorded inside group() live until the group ends.
_tls = threading.local()
