# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""ctypes declarations for libnptensor (private to npushm.tensor).

The library is taken from $NPUSHM_LIBDIR when it is set, else from the build
tree next to this package (<repo>/build/lib), else (installed) through the
dynamic linker, by its soname libnptensor.so.1. Every function returns an npt_status_t that
_check() turns into a Python exception carrying the library's message.
"""
import ctypes
import os

import numpy as np

_NP_AXIS_ERROR = getattr(np, "AxisError", None) or np.exceptions.AxisError

NPT_MAX_DIMS = 32
DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
DT_INDEX = {n: i for i, n in enumerate(DTYPES)}

(NPT_OK, NPT_E_INVAL, NPT_E_SHAPE, NPT_E_RANK, NPT_E_OVERFLOW, NPT_E_DTYPE, NPT_E_READONLY,
 NPT_E_AXIS, NPT_E_EMPTY, NPT_E_VALUE, NPT_E_NOMEM, NPT_E_WOULD_COPY,
 NPT_E_UNSUPPORTED) = range(13)

OPS = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal",
       "not_equal", "less", "less_equal", "greater", "greater_equal", "negative", "absolute",
       "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "erf", "where"]
OP_INDEX = {n: i for i, n in enumerate(OPS)}
REDUCE = {"sum": 0, "prod": 1, "mean": 2, "max": 3, "min": 4}
AXIS_ALL = -(2 ** 31)
SLICE_END = -(2 ** 63)


class NptError(Exception):
    """An nptensor call failed; .status is the npt_status_t code."""

    def __init__(self, status, msg):
        super().__init__(msg)
        self.status = status


class ShapeError(NptError, ValueError):
    pass


class AxisError(NptError, _NP_AXIS_ERROR):
    """Also numpy's AxisError (so a ValueError and an IndexError)."""


class DTypeError(NptError, TypeError):
    pass


class ReadOnlyError(NptError, ValueError):
    pass


class EmptyReductionError(NptError, ValueError):
    pass


class RankError(NptError, ValueError):
    pass


class WouldCopyError(NptError, RuntimeError):
    pass


class InvalidArgumentError(NptError, ValueError):
    """A bad argument value: a negative dimension, a zero slice step, a thread count out of
    range (NumPy raises ValueError for the ones it has)."""


class TooBigError(NptError, ValueError, OverflowError):
    """A shape or size beyond the limits (NumPy: ValueError "array is too big" or "Maximum
    allowed dimension exceeded"; also an OverflowError, the type of a size overflow)."""


class AxisOverflowError(AxisError, OverflowError):
    """An axis that does not even fit a C int (NumPy raises OverflowError or ValueError for
    those, AxisError for the others)."""


class BadValueError(NptError, ValueError):
    """A value the operation cannot take, found at evaluation (an integer raised to a negative
    integer power; NumPy raises ValueError)."""


class OutOfMemoryError(NptError, MemoryError):
    """The library could not allocate memory (a MemoryError)."""


class IndexOverflowError(IndexError, OverflowError):
    """An integer index that does not fit 64 bits (NumPy raises IndexError, or OverflowError
    between 2**63 and 2**64)."""


_EXC = {NPT_E_SHAPE: ShapeError, NPT_E_AXIS: AxisError, NPT_E_DTYPE: DTypeError,
        NPT_E_READONLY: ReadOnlyError, NPT_E_EMPTY: EmptyReductionError,
        NPT_E_VALUE: BadValueError, NPT_E_RANK: RankError, NPT_E_WOULD_COPY: WouldCopyError,
        NPT_E_OVERFLOW: TooBigError, NPT_E_NOMEM: OutOfMemoryError,
        NPT_E_INVAL: InvalidArgumentError}


def _find_library():
    soname = "libnptensor.so.1"
    d = os.environ.get("NPUSHM_LIBDIR")
    if d:
        if not os.path.exists(os.path.join(d, soname)):
            raise ImportError("npushm.tensor: NPUSHM_LIBDIR is %s but it has no %s; point it at "
                              "the directory holding the library, or unset it" % (d, soname))
        return ctypes.CDLL(os.path.join(d, soname))
    here = os.path.dirname(os.path.abspath(__file__))
    n = os.path.normpath(os.path.join(here, "..", "..", "build", "lib", soname))
    try:
        return ctypes.CDLL(n if os.path.exists(n) else soname)
    except OSError as e:
        raise ImportError("npushm.tensor: cannot load %s (%s): install the libnptensor1 package "
                          "(or run make install), or set NPUSHM_LIBDIR" % (soname, e)) from None


lib = _find_library()

P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
I64P = ctypes.POINTER(ctypes.c_int64)
IP = ctypes.POINTER(ctypes.c_int)
i32, i64, u32 = ctypes.c_int, ctypes.c_int64, ctypes.c_uint
RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in
                ("os_bytes", "os_allocs", "reused_bytes", "reused_allocs", "inplace_bytes",
                 "materialized_bytes", "pool_cached_bytes")]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", I64P), ("strides", I64P),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor)))]


def _decl(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)


_decl("npt_strerror", ctypes.c_char_p, i32)
_decl("npt_last_error", ctypes.c_char_p)
_decl("npt_dtype_size", ctypes.c_size_t, i32)
_decl("npt_promote_types", i32, i32, i32, IP)
_decl("npt_tensor_empty", i32, i32, i32, I64P, PP)
_decl("npt_tensor_zeros", i32, i32, i32, I64P, PP)
_decl("npt_tensor_from_data", i32, P, i32, i32, I64P, I64P, u32, RELEASE_FN, P, PP)
_decl("npt_tensor_retain", P, P)
_decl("npt_tensor_free", None, P)
_decl("npt_tensor_dtype", i32, P)
_decl("npt_tensor_ndim", i32, P)
_decl("npt_tensor_shape", I64P, P)
_decl("npt_tensor_strides", I64P, P)
_decl("npt_tensor_offset", i64, P)
_decl("npt_tensor_numel", i64, P)
_decl("npt_tensor_is_lazy", ctypes.c_bool, P)
_decl("npt_tensor_is_writable", ctypes.c_bool, P)
_decl("npt_tensor_shares_buffer", ctypes.c_bool, P, P)
_decl("npt_tensor_data", i32, P, PP)
_decl("npt_tensor_reshape", i32, P, i32, I64P, PP)
_decl("npt_tensor_permute", i32, P, IP, PP)
_decl("npt_tensor_transpose", i32, P, i32, i32, PP)
_decl("npt_tensor_squeeze", i32, P, i32, PP)
_decl("npt_tensor_unsqueeze", i32, P, i32, PP)
_decl("npt_tensor_slice", i32, P, i32, i64, i64, i64, PP)
_decl("npt_tensor_broadcast_to", i32, P, i32, I64P, PP)
_decl("npt_tensor_expand", i32, P, i32, I64P, PP)
_decl("npt_tensor_contiguous", i32, P, PP)
_decl("npt_tensor_cast", i32, P, i32, PP)
_decl("npt_binary", i32, i32, P, P, PP)
_decl("npt_unary", i32, i32, P, PP)
_decl("npt_where", i32, P, P, P, PP)
_decl("npt_reduce", i32, i32, P, i32, IP, ctypes.c_bool, PP)
_decl("npt_argmax", i32, P, i32, ctypes.c_bool, PP)
_decl("npt_sum_to_shape", i32, P, i32, I64P, PP)
_decl("npt_softmax", i32, P, i32, PP)
_decl("npt_layernorm", i32, P, i32, P, P, ctypes.c_double, PP)
_decl("npt_matmul", i32, P, P, PP)
_decl("npt_tensor_eval", i32, P)
_decl("npt_tensor_eval_into", i32, P, P)
_decl("npt_set_num_threads", i32, i32)
_decl("npt_get_num_threads", i32)
_decl("npt_set_expand_mode", None, i32)
_decl("npt_get_expand_mode", i32)
_decl("npt_set_materialize_threshold", None, ctypes.c_size_t)
_decl("npt_get_materialize_threshold", ctypes.c_size_t)
_decl("npt_set_repro_mode", i32, i32)
_decl("npt_get_repro_mode", i32)
_decl("npt_set_log_callback", None, LOG_FN, P)
_decl("npt_stats_get", None, ctypes.POINTER(Stats))
_decl("npt_stats_reset", None)
_decl("npt_pool_trim", None)
_decl("npt_tensor_to_dlpack", i32, P, ctypes.POINTER(ctypes.POINTER(DLManagedTensor)))
_decl("npt_tensor_from_dlpack", i32, ctypes.c_void_p, ctypes.c_bool, PP)


def check(status):
    """Raise the exception matching an npt_status_t (no-op for NPT_OK)."""
    if status:
        msg = lib.npt_last_error().decode("utf-8", "replace")
        raise _EXC.get(status, NptError)(status, msg)


I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1
INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1


def i64arr(seq):
    """int64_t[] for C; the callers range-check first (ctypes would wrap silently)."""
    seq = list(seq)
    for v in seq:
        if not I64_MIN <= v <= I64_MAX:
            raise OverflowError("npushm.tensor: %d does not fit a 64-bit integer" % v)
    return (ctypes.c_int64 * max(len(seq), 1))(*seq)


def iarr(seq):
    """int[] for C; the callers range-check first (ctypes would wrap silently)."""
    seq = list(seq)
    for v in seq:
        if not INT_MIN <= v <= INT_MAX:
            raise OverflowError("npushm.tensor: %d does not fit a C int" % v)
    return (ctypes.c_int * max(len(seq), 1))(*seq)
