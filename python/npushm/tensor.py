# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""npushm.tensor: NumPy-exact broadcasting over zero-copy views, lazy fused evaluation.

    import numpy as np
    from npushm import tensor as nt

    x = nt.from_numpy(np.random.rand(32, 128, 768).astype(np.float32))  # no copy
    b = nt.from_numpy(bias)                                               # (768,)
    y = nt.gelu(x + b)          # lazy: one fused pass when evaluated
    out = y.numpy()             # evaluates, then a zero-copy NumPy view of the result
    nt.add(x, b, out=x)         # NumPy's out= rules (an output is never broadcast)

Tensors wrap libnptensor handles (ctypes). Ops are lazy; .eval() computes, .numpy()
evaluates and returns a view of the result sharing memory (bfloat16, which NumPy lacks,
comes back as a float32 copy). from_numpy shares memory with the array and keeps it alive.
DLPack both ways: Tensor.__dlpack__/__dlpack_device__ and from_dlpack(obj).

Python scalars follow NEP 50 ("weak" scalars): 2.5 * float32 tensor stays float32, an int
scalar takes an integer tensor's dtype. See docs/tensor.md for the exact rules.

Every integer argument (shapes, axes, indices, slice bounds, thread counts, thresholds) is
checked before it reaches C, with NumPy's exception types: nothing is silently wrapped to the
C type's width. Arrays in non-native byte order (np.dtype('>f4')) are converted by a copy.
"""
import builtins
import ctypes
import numbers
import operator
import threading

import numpy as np

from . import _tensor_lib as _L
from ._tensor_lib import (NptError, ShapeError, AxisError, DTypeError, ReadOnlyError,
                          EmptyReductionError, RankError, WouldCopyError, InvalidArgumentError,
                          TooBigError, AxisOverflowError, IndexOverflowError, BadValueError,
                          OutOfMemoryError, check as _check)

__all__ = ["Tensor", "from_numpy", "from_dlpack", "asarray", "empty", "zeros", "where",
           "matmul", "softmax", "layernorm", "sum_to_shape", "broadcast_to", "set_num_threads",
           "get_num_threads", "set_expand_mode", "get_expand_mode", "set_repro_mode",
           "get_repro_mode", "set_materialize_threshold", "get_materialize_threshold",
           "set_log_callback", "stats", "stats_reset", "pool_trim", "promote_types",
           "NptError", "ShapeError", "AxisError", "DTypeError", "ReadOnlyError",
           "EmptyReductionError", "RankError", "WouldCopyError", "InvalidArgumentError",
           "TooBigError", "AxisOverflowError", "IndexOverflowError", "BadValueError",
           "OutOfMemoryError", "DTYPES"]

DTYPES = tuple(_L.DTYPES)
_NP_TO_DT = {np.dtype(np.bool_): 0, np.dtype(np.int8): 1, np.dtype(np.uint8): 2,
             np.dtype(np.int32): 3, np.dtype(np.int64): 4, np.dtype(np.float16): 5,
             np.dtype(np.float32): 7, np.dtype(np.float64): 8}
_DT_TO_NP = {v: k for k, v in _NP_TO_DT.items()}
_lib = _L.lib

# ---- keeping borrowed Python objects alive --------------------------------------------

_keep_lock = threading.Lock()
_keep = {}
_keep_next = [1]


@_L.RELEASE_FN
def _release(arg):
    # dropped after the lock is let go: the last reference to the object may run code that
    # frees another tensor, whose release comes back here (nt.from_numpy(t.numpy()))
    with _keep_lock:
        obj = _keep.pop(arg or 0, None)
    del obj


def _hold(obj):
    with _keep_lock:
        k = _keep_next[0]
        _keep_next[0] += 1
        _keep[k] = obj
    return k


def _dt_index(dtype):
    if isinstance(dtype, str) and dtype in _L.DT_INDEX:
        return _L.DT_INDEX[dtype]
    if isinstance(dtype, int) and not isinstance(dtype, bool) and 0 <= dtype < len(DTYPES):
        return dtype
    try:
        dt = np.dtype(dtype)
        if not dt.isnative:  # '>f4' on this machine: the same values in native order
            dt = dt.newbyteorder("=")
        return _NP_TO_DT[dt]
    except (KeyError, TypeError):
        raise DTypeError(_L.NPT_E_DTYPE, "npushm.tensor: dtype %r is not supported (use one of "
                         "%s)" % (dtype, ", ".join(DTYPES))) from None


# ---- integer arguments: checked here, before ctypes (which would wrap them silently) -----

def _int(v, what):
    """v as a Python int, as NumPy takes integers: anything with __index__ except bool
    (NumPy: "an integer is required"); floats are a TypeError."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError("%s: an integer is required, got the bool %r" % (what, v))
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError("%s: %r (%s) cannot be interpreted as an integer"
                        % (what, v, type(v).__name__)) from None


def _axis(v, what):
    """An axis for a C int parameter. One that does not fit is out of bounds for any tensor:
    AxisOverflowError, which is NumPy's AxisError, ValueError and OverflowError at once."""
    a = _int(v, what)
    if not _L.INT_MIN < a <= _L.INT_MAX:  # INT_MIN itself is the C API's "all axes"
        raise AxisOverflowError(_L.NPT_E_AXIS, "%s: axis %d is out of bounds (it does not "
                                "even fit a C int)" % (what, a))
    return a


def _shape(shape, what):
    """A shape (an int or a sequence of ints) as a tuple of ints that fit int64. A dimension
    that does not: TooBigError (NumPy: ValueError "Maximum allowed dimension exceeded"). The
    library checks the rest (negative dimensions, total size, rank)."""
    if isinstance(shape, (numbers.Integral, np.integer)) and \
            not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError("%s: expected a sequence of integers or a single integer, got %r"
                        % (what, shape)) from None
    dims = tuple(_int(d, what) for d in dims)
    for d in dims:
        if not _L.I64_MIN <= d <= _L.I64_MAX:
            raise TooBigError(_L.NPT_E_OVERFLOW, "%s: dimension %d of shape %s does not fit a "
                              "64-bit integer (NumPy: \"Maximum allowed dimension exceeded\")"
                              % (what, d, dims))
    return dims


def _c_slice(sl, n):
    """(start, stop, step) for npt_tensor_slice selecting what Python's slice `sl` selects
    from a sequence of length n: slice.indices() clamps any integer (TypeError for others,
    ValueError for a zero step), and the result is expressed without -1 (which C reads as
    "the last element")."""
    start, stop, step = sl.indices(n)
    if not len(range(start, stop, step)):
        return 0, 0, 1
    step = builtins.max(-_L.I64_MAX, builtins.min(step, _L.I64_MAX))
    return start, (_L.SLICE_END if stop < 0 else stop), step


def _out_handle():
    return ctypes.c_void_p()


class _ArrayHolder:
    """Exposes a tensor's memory through __array_interface__; keeps the tensor alive."""

    def __init__(self, t, ptr, ro):
        self._t = t
        isz = t.itemsize
        self.__array_interface__ = {
            "version": 3, "shape": t.shape, "typestr": _DT_TO_NP[t._dt].str,
            "data": (ptr or 0, ro), "strides": tuple(s * isz for s in t.strides)}


class Tensor:
    """A view (dtype, shape, element strides, offset) over a reference-counted buffer,
    possibly lazy. Build with from_numpy/asarray/empty/zeros or from ops."""

    __slots__ = ("_h", "__weakref__")
    __array_ufunc__ = None  # ndarray <op> Tensor defers to Tensor's reflected operator

    def __init__(self, handle):
        self._h = handle

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            _lib.npt_tensor_free(h)
            self._h = None

    # ---- introspection ----
    @property
    def _dt(self):
        return _lib.npt_tensor_dtype(self._h)

    @property
    def dtype(self):
        """dtype name: one of DTYPES ('float32', 'bfloat16', ...)."""
        return DTYPES[self._dt]

    @property
    def ndim(self):
        """Number of dimensions."""
        return _lib.npt_tensor_ndim(self._h)

    @property
    def shape(self):
        """The shape, a tuple of ints."""
        n = self.ndim
        p = _lib.npt_tensor_shape(self._h)
        return tuple(p[i] for i in range(n))

    @property
    def strides(self):
        """Element strides (not bytes)."""
        n = self.ndim
        p = _lib.npt_tensor_strides(self._h)
        return tuple(p[i] for i in range(n))

    @property
    def offset(self):
        """Offset of the first element in the underlying buffer, in elements."""
        return _lib.npt_tensor_offset(self._h)

    @property
    def size(self):
        """Number of elements (the product of the shape)."""
        return _lib.npt_tensor_numel(self._h)

    @property
    def itemsize(self):
        """Bytes per element."""
        return _lib.npt_dtype_size(self._dt)

    @property
    def is_lazy(self):
        """Whether the tensor is an unevaluated expression (eval() or a read computes it)."""
        return bool(_lib.npt_tensor_is_lazy(self._h))

    @property
    def writable(self):
        """Whether the tensor's memory may be written (views of read-only memory may not)."""
        return bool(_lib.npt_tensor_is_writable(self._h))

    def shares_memory(self, other):
        """Whether this tensor and `other` view the same buffer."""
        return bool(_lib.npt_tensor_shares_buffer(self._h, other._h))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self):
        return "Tensor(shape=%s, dtype=%s%s)" % (self.shape, self.dtype,
                                                 ", lazy" if self.is_lazy else "")

    # ---- evaluation and conversion ----
    def eval(self):
        """Compute a lazy tensor (fused); returns self."""
        _check(_lib.npt_tensor_eval(self._h))
        return self

    def data_ptr(self):
        """Address of the first element (evaluates a lazy tensor first)."""
        p = ctypes.c_void_p()
        _check(_lib.npt_tensor_data(self._h, ctypes.byref(p)))
        return p.value

    def numpy(self):
        """Evaluate, then return a NumPy array sharing this tensor's memory (read-only if
        the tensor is). bfloat16 returns a float32 copy."""
        if self._dt == _L.DT_INDEX["bfloat16"]:
            return self.astype("float32").numpy()
        ptr = self.data_ptr()
        if self.size == 0:
            a = np.empty(self.shape, _DT_TO_NP[self._dt])
            a.flags.writeable = self.writable
            return a
        return np.asarray(_ArrayHolder(self, ptr, not self.writable))

    def __array__(self, dtype=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self):
        """The value of a one-element tensor as a Python scalar."""
        return self.numpy().item()

    def tolist(self):
        """The values as nested Python lists (like numpy.ndarray.tolist)."""
        return self.numpy().tolist()

    def __bool__(self):
        return bool(self.numpy())

    def __float__(self):
        return float(self.numpy())

    def __int__(self):
        return int(self.numpy())

    # ---- DLPack ----
    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __dlpack__(self, stream=None):
        if stream is not None and stream != -1:
            raise BufferError("npushm.tensor: CPU tensors take no stream")
        m = ctypes.POINTER(_L.DLManagedTensor)()
        _check(_lib.npt_tensor_to_dlpack(self._h, ctypes.byref(m)))
        return _capsule_new(ctypes.cast(m, ctypes.c_void_p).value)

    # ---- views ----
    def reshape(self, *shape):
        """Another shape of the same number of elements (NumPy reshape, -1 infers one dimension): a view when the strides allow, else a contiguous copy."""
        shape = _shape(_varargs(shape), "reshape")
        return _wrap(lambda o: _lib.npt_tensor_reshape(self._h, len(shape), _L.i64arr(shape), o))

    def permute(self, *perm):
        """A view with the axes reordered: permute(*perm), perm naming every axis once."""
        perm = tuple(_axis(a, "permute") for a in _varargs(perm))
        if len(perm) != self.ndim:
            raise ValueError("permute: axes don't match tensor: %d axes given for a tensor of "
                             "dimension %d" % (len(perm), self.ndim))
        return _wrap(lambda o: _lib.npt_tensor_permute(self._h, _L.iarr(perm), o))

    def transpose(self, *axes):
        """A view with the axes reversed, or two axes swapped: transpose(a, b)."""
        if not axes:
            return self.permute(*range(self.ndim - 1, -1, -1))
        if len(axes) == 2 and all(isinstance(a, (numbers.Integral, np.integer)) for a in axes):
            a0, a1 = _axis(axes[0], "transpose"), _axis(axes[1], "transpose")
            return _wrap(lambda o: _lib.npt_tensor_transpose(self._h, a0, a1, o))
        return self.permute(*axes)

    @property
    def T(self):
        """The transpose (axes reversed), a view."""
        return self.transpose()

    def squeeze(self, axis=None):
        """Remove size-1 dimensions: all of them, one axis or a tuple of axes (NumPy)."""
        if isinstance(axis, (tuple, list)):
            axes = [_normalize_axis(a, self.ndim, "squeeze") for a in axis]
            if len(set(axes)) != len(axes):
                raise ValueError("squeeze: duplicate value in 'axis'")
            t = self
            for a in sorted(axes, reverse=True):
                t = t.squeeze(a)
            return t
        ax = _L.AXIS_ALL if axis is None else _axis(axis, "squeeze")
        return _wrap(lambda o: _lib.npt_tensor_squeeze(self._h, ax, o))

    def unsqueeze(self, axis):
        """A view with a new axis of length 1 at `axis`."""
        ax = _axis(axis, "unsqueeze")
        return _wrap(lambda o: _lib.npt_tensor_unsqueeze(self._h, ax, o))

    def broadcast_to(self, shape):
        """A read-only view broadcast to `shape` by NumPy's rules (stride 0, no copy)."""
        shape = _shape(shape, "broadcast_to")
        return _wrap(lambda o: _lib.npt_tensor_broadcast_to(self._h, len(shape),
                                                            _L.i64arr(shape), o))

    def expand(self, *shape):
        """Like broadcast_to, PyTorch style: expand(*shape), -1 keeps a dimension."""
        shape = _shape(_varargs(shape), "expand")
        return _wrap(lambda o: _lib.npt_tensor_expand(self._h, len(shape), _L.i64arr(shape), o))

    def contiguous(self):
        """The values in C order: the tensor itself when it already is C-contiguous, else a lazy copy."""
        return _wrap(lambda o: _lib.npt_tensor_contiguous(self._h, o))

    def astype(self, dtype):
        """A lazy elementwise cast to `dtype` (NumPy astype, unsafe casting)."""
        dt = _dt_index(dtype)
        return _wrap(lambda o: _lib.npt_tensor_cast(self._h, dt, o))

    def slice(self, axis, start=None, stop=None, step=None):
        """Python's slice(start, stop, step) along one axis (any integers: clamped as Python
        and NumPy clamp them)."""
        ax = _axis(axis, "slice")
        sl = slice(start, stop, step)
        if -self.ndim <= ax < self.ndim:
            st, sp, stp = _c_slice(sl, self.shape[ax])
        else:
            st, sp, stp = 0, 0, 1  # the library reports the bad axis
        return _wrap(lambda o: _lib.npt_tensor_slice(self._h, ax, st, sp, stp, o))

    def __getitem__(self, key):
        """Basic indexing: ints, slices (any step), None, Ellipsis."""
        if not isinstance(key, tuple):
            key = (key,)
        nreal = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
        if builtins.sum(1 for k in key if k is Ellipsis) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if nreal > self.ndim:
            raise IndexError("too many indices for tensor: tensor is %d-dimensional, but %d "
                             "were indexed" % (self.ndim, nreal))
        exp = []
        for k in key:
            if k is Ellipsis:
                exp.extend([slice(None)] * (self.ndim - nreal))
            else:
                exp.append(k)
        exp.extend([slice(None)] * (self.ndim - builtins.sum(1 for k in exp if k is not None)))
        t, ax, drop = self, 0, []
        for k in exp:
            if k is None:
                t = t.unsqueeze(ax)
                ax += 1
            elif isinstance(k, slice):
                t = t.slice(ax, k.start, k.stop, k.step)
                ax += 1
            elif isinstance(k, (bool, np.bool_)):
                raise IndexError("npushm.tensor supports basic indexing only (ints, slices, "
                                 "None, ...); a boolean index (%r) is a mask in NumPy" % (k,))
            elif isinstance(k, (numbers.Integral, np.integer)) or \
                    hasattr(type(k), "__index__"):
                n = t.shape[ax]
                i = operator.index(k)
                if i < -n or i >= n:
                    exc = IndexError if _L.I64_MIN <= i <= _L.I64_MAX else IndexOverflowError
                    raise exc("index %d is out of bounds for axis %d with size %d"
                              % (i, ax, n))
                i = i + n if i < 0 else i
                t = t.slice(ax, i, i + 1, 1)
                drop.append(ax)
                ax += 1
            else:
                raise IndexError("npushm.tensor supports basic indexing only (ints, slices, "
                                 "None, ...); got %r" % (k,))
        for a in reversed(drop):
            t = t.squeeze(a)
        return t

    def __setitem__(self, key, value):
        """Assignment as NumPy's: the value is broadcast to the selection (leading size-1
        dimensions beyond its rank dropped) and cast with 'unsafe' casting (2.7 into an
        integer tensor stores 2); a float scalar goes through int() into an integer tensor,
        so NaN and inf raise as NumPy's do."""
        dst = self[key]
        if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and \
                DTYPES[dst._dt] in ("bool", "int8", "uint8", "int32", "int64"):
            value = int(value) if DTYPES[dst._dt] != "bool" else bool(value)
        src = _as_tensor(value, like=dst)
        extra = src.ndim - dst.ndim
        if extra > 0 and all(d == 1 for d in src.shape[:extra]):
            src = src.reshape(src.shape[extra:])
        if src.shape != dst.shape:
            try:
                src = src.broadcast_to(dst.shape)
            except ShapeError:
                raise ShapeError(_L.NPT_E_SHAPE, "setitem: could not broadcast input array "
                                 "from shape %s into shape %s" % (src.shape, dst.shape)) from None
        if src._dt != dst._dt:
            src = src.astype(dst._dt)
        _check(_lib.npt_tensor_eval_into(src._h, dst._h))

    # ---- reductions ----
    def _reduce(self, name, axis=None, keepdims=False):
        if axis is None:
            n, arr = -1, None
        else:
            if isinstance(axis, (numbers.Integral, np.integer, bool, np.bool_)):
                axes = (_axis(axis, name),)
            else:
                try:
                    axes = tuple(_axis(a, name) for a in axis)
                except TypeError as e:
                    if not hasattr(axis, "__iter__"):
                        raise TypeError("%s: axis must be None, an integer or a tuple of "
                                        "integers, got %r" % (name, axis)) from None
                    raise e
                if self.ndim == 0 and axes:
                    # NumPy 1.24 takes a single integer 0 or -1 on a 0-d array, never a tuple
                    raise AxisError(_L.NPT_E_AXIS, "%s: axis %d is out of bounds for a tensor "
                                    "of dimension 0" % (name, axes[0]))
            n, arr = len(axes), _L.iarr(axes)
        return _wrap(lambda o: _lib.npt_reduce(_L.REDUCE[name], self._h, n, arr,
                                               bool(keepdims), o))

    def sum(self, axis=None, keepdims=False):
        """Sum over `axis` (None: all; an int or a tuple), keepdims as in NumPy."""
        return self._reduce("sum", axis, keepdims)

    def prod(self, axis=None, keepdims=False):
        """Product over `axis` (None: all; an int or a tuple), keepdims as in NumPy."""
        return self._reduce("prod", axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        """Mean over `axis` (None: all; an int or a tuple), keepdims as in NumPy."""
        return self._reduce("mean", axis, keepdims)

    def max(self, axis=None, keepdims=False):
        """Maximum over `axis` (None: all; an int or a tuple), keepdims as in NumPy."""
        return self._reduce("max", axis, keepdims)

    def min(self, axis=None, keepdims=False):
        """Minimum over `axis` (None: all; an int or a tuple), keepdims as in NumPy."""
        return self._reduce("min", axis, keepdims)

    def argmax(self, axis=None, keepdims=False):
        """Index of the maximum over `axis` (None: of the flattened tensor), as in NumPy."""
        ax = _L.AXIS_ALL if axis is None else _axis(axis, "argmax")
        return _wrap(lambda o: _lib.npt_argmax(self._h, ax, bool(keepdims), o))

    def sum_to_shape(self, shape):
        """Sum broadcast dimensions away so that the result has `shape` (the reverse of broadcasting; gradients of broadcast operands)."""
        return sum_to_shape(self, shape)

    def softmax(self, axis=-1):
        """Softmax along `axis` (numerically stable: the maximum is subtracted first)."""
        return softmax(self, axis)

    # ---- operators ----
    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("subtract", self, o)
    def __rsub__(self, o): return _binary("subtract", o, self)
    def __mul__(self, o): return _binary("multiply", self, o)
    def __rmul__(self, o): return _binary("multiply", o, self)
    def __truediv__(self, o): return _binary("divide", self, o)
    def __rtruediv__(self, o): return _binary("divide", o, self)
    def __pow__(self, o): return _binary("power", self, o)
    def __rpow__(self, o): return _binary("power", o, self)
    def __lt__(self, o): return _binary("less", self, o)
    def __le__(self, o): return _binary("less_equal", self, o)
    def __gt__(self, o): return _binary("greater", self, o)
    def __ge__(self, o): return _binary("greater_equal", self, o)
    def __eq__(self, o): return _binary("equal", self, o)
    def __ne__(self, o): return _binary("not_equal", self, o)
    __hash__ = None
    def __neg__(self): return _unary("negative", self)
    def __abs__(self): return _unary("absolute", self)
    def __pos__(self): return self
    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)
    def __iadd__(self, o): return _binary("add", self, o, out=self)
    def __isub__(self, o): return _binary("subtract", self, o, out=self)
    def __imul__(self, o): return _binary("multiply", self, o, out=self)
    def __itruediv__(self, o): return _binary("divide", self, o, out=self)
    def __ipow__(self, o): return _binary("power", self, o, out=self)


def _varargs(args):
    """f(2, 3) and f((2, 3)) alike (NumPy's reshape/transpose convention)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return args


def _normalize_axis(v, ndim, what):
    a = _axis(v, what)
    if not -ndim <= a < ndim:
        raise AxisError(_L.NPT_E_AXIS, "%s: axis %d is out of bounds for a tensor of "
                        "dimension %d" % (what, a, ndim))
    return a + ndim if a < 0 else a


def _wrap(call):
    h = ctypes.c_void_p()
    _check(call(ctypes.byref(h)))
    return Tensor(h.value)


# ---- construction ------------------------------------------------------------------------

def from_numpy(arr, readonly=None):
    """Wrap a NumPy array without copying; the tensor keeps the array alive. Read-only
    arrays (or readonly=True) give read-only tensors.

    An array in non-native byte order (e.g. dtype '>f4'), with strides that are not a
    multiple of the item size (a field of a record array) or with misaligned elements cannot
    be shared: it is converted into a native, contiguous copy, and the tensor is read-only
    unless readonly=False is given, so that a write cannot silently miss the original array."""
    arr = np.asarray(arr)
    dt = _dt_index(arr.dtype)
    copied = not arr.dtype.isnative
    if copied:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    isz = arr.dtype.itemsize
    if any(s % isz for s in arr.strides) or not arr.flags.aligned:
        # no element strides describe it (a field of a record array) or its elements are not
        # aligned: a copy (np.ascontiguousarray made none of a contiguous misaligned array,
        # and returns a 0-d array as 1-d), which a write could not reach back: read-only
        # unless readonly=False, as for byte order
        arr = np.array(arr, order="C", copy=True)
        copied = True
    if readonly is None:
        ro = copied or not arr.flags.writeable
    else:
        ro = bool(readonly)
    shape = arr.shape
    strides = tuple(s // isz for s in arr.strides)
    key = _hold(arr)
    h = ctypes.c_void_p()
    st = _lib.npt_tensor_from_data(arr.__array_interface__["data"][0] if arr.size else None,
                                   dt, arr.ndim, _L.i64arr(shape), _L.i64arr(strides),
                                   1 if ro else 0, _release, key, ctypes.byref(h))
    if st:
        _release(key)
        _check(st)
    return Tensor(h.value)


def asarray(obj, dtype=None):
    """Tensor from a Tensor (returned as is), a NumPy array (shared) or any array-like
    (copied by NumPy first)."""
    if isinstance(obj, Tensor):
        return obj if dtype is None or obj.dtype == DTYPES[_dt_index(dtype)] else obj.astype(dtype)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        t = from_dlpack(obj)
        return t if dtype is None else t.astype(dtype)
    a = np.asarray(obj, dtype=None if dtype in (None, "bfloat16") else dtype)
    if not a.dtype.isnative:  # a copy anyway: a writable one, as NumPy's conversions give
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype == np.float16 or a.dtype in _NP_TO_DT:
        t = from_numpy(a)
    elif a.dtype.kind in "iu":  # int16, uint16/32/64: int64 holds their values, or says not
        if a.dtype.kind == "u" and a.size and int(a.max()) > _L.I64_MAX:
            raise OverflowError("asarray: the %s value %d does not fit int64, the widest "
                                "integer dtype here" % (a.dtype, int(a.max())))
        t = from_numpy(a.astype(np.int64))
    elif a.dtype.kind == "f":  # long double
        t = from_numpy(a.astype(np.float64))
    else:  # complex, strings, objects, dates: no tensor dtype holds them
        raise DTypeError(_L.NPT_E_DTYPE, "asarray: NumPy makes %s of this input, which no "
                         "tensor dtype holds (use one of %s)" % (a.dtype, ", ".join(DTYPES)))
    if dtype == "bfloat16":
        t = t.astype("bfloat16").eval()
    return t


tensor = asarray


def empty(shape, dtype="float32"):
    """A new tensor of `shape` and `dtype` with uninitialised contents."""
    shape = _shape(shape, "empty")
    dt = _dt_index(dtype)
    return _wrap(lambda o: _lib.npt_tensor_empty(dt, len(shape), _L.i64arr(shape), o))


def zeros(shape, dtype="float32"):
    """A new tensor of `shape` and `dtype` filled with zeros."""
    shape = _shape(shape, "zeros")
    dt = _dt_index(dtype)
    return _wrap(lambda o: _lib.npt_tensor_zeros(dt, len(shape), _L.i64arr(shape), o))


# ---- scalars (NEP 50 weak scalars) ------------------------------------------------------

def _scalar_dtype(value, like):
    kind = DTYPES[like._dt] if like is not None else None
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, numbers.Integral):
        if kind in ("int8", "uint8", "int32", "int64"):
            info = np.iinfo(kind)
            if not info.min <= int(value) <= info.max:
                raise OverflowError("Python integer %d out of bounds for %s" % (value, kind))
            return kind
        if kind in ("float16", "bfloat16", "float32", "float64"):
            return kind
        return "int64"
    if isinstance(value, numbers.Real):
        if kind in ("float16", "bfloat16", "float32", "float64"):
            return kind
        return "float64"
    raise TypeError("npushm.tensor: unsupported operand %r" % (value,))


def _as_tensor(v, like=None):
    if isinstance(v, Tensor):
        return v
    if isinstance(v, np.ndarray):
        return from_numpy(v)
    if isinstance(v, np.generic):
        return from_numpy(np.asarray(v))
    if isinstance(v, (numbers.Number, np.bool_)):
        dt = _scalar_dtype(v, like)
        if dt == "bfloat16":
            return from_numpy(np.asarray(v, dtype=np.float32)).astype("bfloat16").eval()
        return from_numpy(np.asarray(v, dtype=_DT_TO_NP[_L.DT_INDEX[dt]]))
    return asarray(v)


def _pair(a, b):
    ta = a if isinstance(a, Tensor) else None
    tb = b if isinstance(b, Tensor) else None
    return _as_tensor(a, tb), _as_tensor(b, ta)


def _finish(res, out):
    if out is None:
        return res
    if not isinstance(out, Tensor):
        raise TypeError("out must be an npushm.tensor.Tensor")
    _check(_lib.npt_tensor_eval_into(res._h, out._h))
    return out


def _binary(name, a, b, out=None):
    a, b = _pair(a, b)
    op = _L.OP_INDEX[name]
    return _finish(_wrap(lambda o: _lib.npt_binary(op, a._h, b._h, o)), out)


def _unary(name, a, out=None):
    a = _as_tensor(a)
    op = _L.OP_INDEX[name]
    return _finish(_wrap(lambda o: _lib.npt_unary(op, a._h, o)), out)


def _make_binary(name):
    def f(a, b, out=None):
        return _binary(name, a, b, out)
    f.__name__ = name
    f.__doc__ = "Elementwise %s with NumPy broadcasting and promotion (lazy)." % name
    return f


def _make_unary(name):
    def f(a, out=None):
        return _unary(name, a, out)
    f.__name__ = name
    f.__doc__ = "Elementwise %s (lazy)." % name
    return f


for _n in _L.OPS[:13]:
    globals()[_n] = _make_binary(_n)
    __all__.append(_n)
for _n in _L.OPS[13:24]:
    globals()[_n] = _make_unary(_n)
    __all__.append(_n)
sub, mul, div, true_divide, pow, neg, abs = (globals()["subtract"], globals()["multiply"],
                                             globals()["divide"], globals()["divide"],
                                             globals()["power"], globals()["negative"],
                                             globals()["absolute"])


def where(cond, a, b, out=None):
    """Elementwise `a` where `cond` is true, else `b`, with broadcasting (numpy.where)."""
    cond = _as_tensor(cond)
    a, b = _pair(a, b)
    return _finish(_wrap(lambda o: _lib.npt_where(cond._h, a._h, b._h, o)), out)


def matmul(a, b, out=None):
    """Matrix product with NumPy's matmul rules (batched, broadcast batch dimensions; OpenBLAS)."""
    a, b = _as_tensor(a), _as_tensor(b)
    return _finish(_wrap(lambda o: _lib.npt_matmul(a._h, b._h, o)), out)


def softmax(x, axis=-1, out=None):
    """Softmax of `x` along `axis` (numerically stable)."""
    x = _as_tensor(x)
    axis = _axis(axis, "softmax")
    return _finish(_wrap(lambda o: _lib.npt_softmax(x._h, axis, o)), out)


def layernorm(x, axis=-1, weight=None, bias=None, eps=1e-5, out=None):
    """Layer normalisation of `x` along `axis`: (x - mean) / sqrt(var + eps), times `weight` plus `bias` when given."""
    x = _as_tensor(x)
    axis = _axis(axis, "layernorm")
    w = _as_tensor(weight) if weight is not None else None
    b = _as_tensor(bias) if bias is not None else None
    return _finish(_wrap(lambda o: _lib.npt_layernorm(x._h, axis, w._h if w is not None else None,
                                                      b._h if b is not None else None, float(eps), o)), out)


def sum_to_shape(x, shape, out=None):
    """Sum the broadcast dimensions of `x` away so that the result has `shape`."""
    x = _as_tensor(x)
    shape = _shape(shape, "sum_to_shape")
    return _finish(_wrap(lambda o: _lib.npt_sum_to_shape(x._h, len(shape), _L.i64arr(shape), o)),
                   out)


def broadcast_to(x, shape):
    """A read-only view of `x` broadcast to `shape` (numpy.broadcast_to)."""
    return _as_tensor(x).broadcast_to(shape)


def _red(name):
    def f(x, axis=None, keepdims=False, out=None):
        x = _as_tensor(x)
        r = x._reduce(name, axis, keepdims)
        if isinstance(out, Tensor) and out._dt != r._dt:
            # NumPy's reductions cast into out= with 'unsafe' casting (ufunc.reduce), after
            # computing in their own dtype: np.sum([0.5] * 3, out=int64) is 1. Its mean
            # sums into out, then divides there: mean([100, 100, 3], out=int8) is -53 / 3
            if name == "mean":
                s = x._reduce("sum", axis, keepdims).astype(out._dt)
                r = s / (x.size // r.size if r.size else 0)
            r = r.astype(out._dt)
        return _finish(r, out)
    f.__name__ = name
    f.__doc__ = ("%s of `x` over `axis` (None: all; an int or a tuple), keepdims as in NumPy "
                 "(numpy.%s)." % (name.capitalize(), name))
    return f


for _n in ("sum", "prod", "mean", "max", "min"):
    globals()[_n] = _red(_n)
    __all__.append(_n)


def argmax(x, axis=None, keepdims=False, out=None):
    """Index of the maximum of `x` over `axis` (numpy.argmax)."""
    return _finish(_as_tensor(x).argmax(axis, keepdims), out)


def eval(*ts):
    """Evaluate several lazy tensors."""
    for t in ts:
        t.eval()
    return ts[0] if len(ts) == 1 else ts


# ---- configuration and accounting --------------------------------------------------------

def set_num_threads(n):
    """Threads per evaluation, 1..256; 0 = the number of online CPUs."""
    n = _int(n, "set_num_threads")
    if not 0 <= n <= 256:
        raise InvalidArgumentError(_L.NPT_E_INVAL, "set_num_threads: %d threads requested; use "
                                   "1..256, or 0 for the number of online CPUs" % n)
    _check(_lib.npt_set_num_threads(n))


def get_num_threads():
    """Threads per evaluation (set_num_threads)."""
    return _lib.npt_get_num_threads()


_MODES = {"auto": 0, "view": 1, "materialize": 2, "fused": 3}


def set_expand_mode(mode):
    """'auto' | 'view' | 'materialize' | 'fused' (see libnptensor(3))."""
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError("set_expand_mode: %r is not an expansion mode; use one of %s"
                         % (mode, ", ".join(repr(m) for m in _MODES)))
    _lib.npt_set_expand_mode(_MODES[mode])


def get_expand_mode():
    """The expansion mode: 'auto', 'view', 'materialize' or 'fused' (set_expand_mode)."""
    return {v: k for k, v in _MODES.items()}[_lib.npt_get_expand_mode()]


_REPRO = {"independent": 0, "threads": 1}


def set_repro_mode(mode):
    """How float reductions are cut between threads; every mode gives the same bits on every
    run. 'independent' (default): also the same bits at any thread count; 'threads': one
    piece per thread, so the bits depend on the thread count (docs/tensor.md)."""
    if not isinstance(mode, str) or mode not in _REPRO:
        raise ValueError("set_repro_mode: %r is not a reproducibility mode; use 'independent' "
                         "or 'threads'" % (mode,))
    _check(_lib.npt_set_repro_mode(_REPRO[mode]))


def get_repro_mode():
    """The reproducibility mode of reductions (set_repro_mode)."""
    return {v: k for k, v in _REPRO.items()}[_lib.npt_get_repro_mode()]


def set_materialize_threshold(nbytes):
    """Report implicit copies of at least nbytes (0 .. 2**64 - 1) to the log callback."""
    n = _int(nbytes, "set_materialize_threshold")
    if n < 0:
        raise ValueError("set_materialize_threshold: %d bytes; the threshold must be >= 0" % n)
    if n >= 2 ** 64:
        raise OverflowError("set_materialize_threshold: %d bytes does not fit a size_t" % n)
    _lib.npt_set_materialize_threshold(n)


def get_materialize_threshold():
    """Implicit materialisations of at least this many bytes are reported as warnings (set_materialize_threshold)."""
    return _lib.npt_get_materialize_threshold()


_log_cb = [None]


def set_log_callback(fn):
    """fn(level: int, message: str) receives library diagnostics; None removes it."""
    if fn is None:
        _log_cb[0] = None
        _lib.npt_set_log_callback(_L.LOG_FN(), None)
        return

    @_L.LOG_FN
    def cb(level, msg, arg):
        fn(level, msg.decode("utf-8", "replace"))
    _log_cb[0] = cb
    _lib.npt_set_log_callback(cb, None)


def stats():
    """Allocation counters of the calling thread since stats_reset(): os_bytes (fresh
    memory), reused_bytes (from the pool), inplace_bytes, materialized_bytes, ..."""
    s = _L.Stats()
    _lib.npt_stats_get(ctypes.byref(s))
    return {name: getattr(s, name) for name, _ in _L.Stats._fields_}


def stats_reset():
    """Reset the evaluation and buffer-pool counters (stats())."""
    _lib.npt_stats_reset()


def pool_trim():
    """Give the buffer pool's free buffers back to the system."""
    _lib.npt_pool_trim()


def promote_types(a, b):
    """The dtype NumPy would give an operation on dtypes `a` and `b` (numpy.promote_types)."""
    r = ctypes.c_int()
    _check(_lib.npt_promote_types(_dt_index(a), _dt_index(b), ctypes.byref(r)))
    return DTYPES[r.value]


# ---- DLPack capsules ---------------------------------------------------------------------

_api = ctypes.pythonapi
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_CAP_NAME = ctypes.c_char_p(b"dltensor")      # must outlive every capsule
_USED_NAME = ctypes.c_char_p(b"used_dltensor")
_api_get_ptr_raw = ctypes.pythonapi.PyCapsule_GetPointer


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(cap):
    # an unconsumed capsule still owns the DLManagedTensor: run its deleter
    get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    if _api.PyCapsule_IsValid(cap, _CAP_NAME):
        p = get(cap, _CAP_NAME)
        if p:
            m = ctypes.cast(p, ctypes.POINTER(_L.DLManagedTensor))
            if m.contents.deleter:
                m.contents.deleter(m)


def _capsule_new(ptr):
    return _api.PyCapsule_New(ptr, _CAP_NAME, _capsule_destructor)


def from_dlpack(obj, readonly=False):
    """Zero-copy Tensor from any object with __dlpack__ (NumPy >= 1.22, torch, ...) or a
    'dltensor' capsule. CPU memory only."""
    cap = obj.__dlpack__() if hasattr(obj, "__dlpack__") else obj
    try:
        ptr = _api.PyCapsule_GetPointer(cap, _CAP_NAME)
    except ValueError:
        raise ValueError("from_dlpack: %s is neither an object with __dlpack__ nor an unused "
                         "'dltensor' capsule (a capsule is consumed by its first import)"
                         % type(obj).__name__) from None
    h = ctypes.c_void_p()
    _check(_lib.npt_tensor_from_dlpack(ptr, bool(readonly), ctypes.byref(h)))
    _api.PyCapsule_SetName(cap, _USED_NAME)
    return Tensor(h.value)
