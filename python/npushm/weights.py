# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""npushm.weights: shared model weights, attached by name and handed to NumPy and
PyTorch without a copy.

    import npushm
    npushm.load("bert.safetensors", "bert")          # once, any process
    with npushm.attach("bert") as m:                  # every worker: O(1), read-only
        w = m["encoder.layer.0.attention.self.query.weight"]
        a = w.numpy()                                 # numpy.from_dlpack, read-only
        t = w.torch()                                 # torch.utils.dlpack.from_dlpack

Tensors implement the DLPack protocol (__dlpack__, __dlpack_device__), so
numpy.from_dlpack(w) and torch.utils.dlpack.from_dlpack(w) work directly. The
memory is the model region's read-only mapping: arrays share it (no copy) and
keep it mapped after the model is closed. .numpy() arrays are marked read-only;
.torch() tensors refuse writes with a RuntimeError (ReadOnlyTensor: PyTorch has
no read-only tensors, and a write into the sealed mapping would be a SIGSEGV).
A tensor made by torch.utils.dlpack.from_dlpack(w) directly has no such guard.
"""
import collections.abc
import ctypes
import json

from . import _libnpushm as _L
from ._libnpushm import NpushmError

_DLTENSOR = b"dltensor"
_USED = b"used_dltensor"

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_DESTRUCTOR
def _capsule_destructor(capsule):
    # A capsule nobody consumed still owns its DLManagedTensor; a consumed one
    # was renamed "used_dltensor" and its consumer calls the deleter.
    if _api.PyCapsule_IsValid(capsule, _DLTENSOR):
        ptr = _api.PyCapsule_GetPointer(capsule, _DLTENSOR)
        managed = ctypes.cast(ptr, ctypes.POINTER(_L.DLManagedTensor))
        managed.contents.deleter(managed)


_NUMPY_DTYPES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16",
                 "F16": "float16", "I32": "int32", "U32": "uint32", "F32": "float32",
                 "F64": "float64", "I64": "int64", "U64": "uint64"}


class ModelTensor:
    """One tensor of an attached model: metadata plus zero-copy views.

    Attributes: name, dtype (safetensors name: "F32", "BF16", ...), shape,
    strides (in elements), address (of its first byte in this process),
    nbytes, offset (in the model's region). Views: numpy(), torch(), raw(),
    and the DLPack protocol (numpy.from_dlpack, torch.utils.dlpack.from_dlpack)."""

    def __init__(self, model, index, ct):
        self._model = model
        self._index = index
        self.name = ct.name.decode()
        self.dtype = _L.DTYPES[ct.dtype]
        self.shape = tuple(ct.shape[i] for i in range(ct.ndim))
        self.strides = tuple(ct.strides[i] for i in range(ct.ndim))
        self.address = ct.data
        self.nbytes = ct.nbytes
        self.offset = ct.offset

    def __repr__(self):
        return "<npushm tensor %r %s%s at 0x%x>" % (self.name, self.dtype, list(self.shape), self.address)

    def __dlpack_device__(self):
        """DLPack: (kDLCPU, 0): the tensor lives in host memory."""
        return (1, 0)   # kDLCPU, device 0

    def __dlpack__(self, stream=None):
        """DLPack: a capsule describing the tensor in the shared mapping (no copy)."""
        if stream is not None and stream != -1:
            raise BufferError("npushm tensors live on the CPU and take no stream")
        out = ctypes.POINTER(_L.DLManagedTensor)()
        _L.check(_L.lib().npushm_model_tensor_dlpack(self._model._handle(), self._index,
                                                     ctypes.byref(out)))
        return _api.PyCapsule_New(ctypes.cast(out, ctypes.c_void_p), _DLTENSOR,
                                  ctypes.cast(_capsule_destructor, ctypes.c_void_p))

    def numpy(self):
        """A read-only NumPy array over the shared memory (no copy)."""
        import numpy as np
        if self.dtype == "BOOL":
            # DLPack 0.6 has no bool: view the same bytes through NumPy's buffer protocol.
            arr = self.raw().view(np.bool_).reshape(self.shape)
        elif self.dtype in ("BF16", "F8_E5M2", "F8_E4M3"):
            raise TypeError("tensor %r is %s, which NumPy has no type for; use .torch() (BF16) or .raw()"
                            % (self.name, self.dtype))
        else:
            arr = np.from_dlpack(self)
        arr.flags.writeable = False
        return arr

    def raw(self):
        """The tensor's bytes as a read-only uint8 NumPy array (any dtype, no copy)."""
        import numpy as np
        return np.asarray(_Pinned(self._model, self.address, self.nbytes))

    def torch(self):
        """A read-only PyTorch tensor over the shared memory (no copy).

        PyTorch has no read-only tensors, so the tensor is an
        npushm ReadOnlyTensor: operations that would write into it (add_,
        zero_, t[i] = x, out=t, ...) raise RuntimeError instead of crashing the
        process; views of it stay read-only; .clone() gives a writable copy."""
        import torch.utils.dlpack
        from ._torch_readonly import readonly
        return readonly(torch.utils.dlpack.from_dlpack(self))


class _Pinned:
    """Exposes bytes of a model's mapping to NumPy and keeps the model attached
    for as long as any array made from it lives."""

    def __init__(self, model, address, nbytes):
        model._pin()
        self._model = model
        self.__array_interface__ = {"data": (address or 0, True), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}

    def __del__(self):
        self._model._unpin()


class Model(_L.Closeable):
    """An attached model: shared read-only with every other process that attached
    the same name, and a read-only Mapping from tensor names to ModelTensor
    (collections.abc.Mapping: m["name"], len(m), "name" in m, iteration over
    the names in order, keys(), items(), values(), get()). A missing name raises
    NotFoundError, which is a KeyError. Attributes: name, hash, source_size,
    region_size, region_id, metadata (the file's __metadata__). Use it in a
    `with` block or call close(); tensors and arrays keep the memory mapped."""

    def __init__(self, name, backend="auto"):
        self.name = name
        self._dev = _L.Device(backend)
        self._h = ctypes.c_void_p()
        try:
            _L.check(_L.lib().npushm_model_attach_dev(self._dev.handle, name.encode(),
                                                      ctypes.byref(self._h)))
        finally:
            self._dev.close()
        info = _L.ModelInfo()
        _L.lib().npushm_model_info(self._h, ctypes.byref(info))
        self.hash = info.hash_hex.decode()
        self.source_size = info.source_size
        self.region_size = info.region_size
        self.region_id = info.region_id
        self.metadata = json.loads(info.metadata_json.decode())
        self._count = info.tensor_count
        self._pins = 0
        self._closing = False

    def _handle(self):
        if not self._h:
            raise ValueError("model %r is closed" % self.name)
        return self._h

    def __len__(self):
        return self._count

    def __iter__(self):
        return iter(self.names())

    def names(self):
        """The tensor names, in name order (the same as list(model))."""
        return [t.name for t in self.tensors()]

    def keys(self):
        """A view of the tensor names (Mapping.keys)."""
        return collections.abc.KeysView(self)

    def items(self):
        """A view of (name, ModelTensor) pairs (Mapping.items)."""
        return collections.abc.ItemsView(self)

    def values(self):
        """A view of the ModelTensors (Mapping.values)."""
        return collections.abc.ValuesView(self)

    def get(self, name, default=None):
        """The tensor called `name`, or `default` when there is none."""
        try:
            return self[name]
        except KeyError:
            return default

    def tensors(self):
        """Every tensor (ModelTensor), in name order."""
        out = []
        for i in range(self._count):
            ct = _L.CTensor()
            _L.check(_L.lib().npushm_model_tensor_at(self._handle(), i, ctypes.byref(ct)))
            out.append(ModelTensor(self, i, ct))
        return out

    def __contains__(self, name):
        if not isinstance(name, str):
            return False
        try:
            self[name]
            return True
        except KeyError:
            return False

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise KeyError(name)
        ct = _L.CTensor()
        st = _L.lib().npushm_model_tensor_find(self._handle(), name.encode(), ctypes.byref(ct))
        if st == _L.STATUS.index("NOT_FOUND"):
            raise _L.NotFoundError("NOT_FOUND", _L.lib().npushm_last_error().decode())
        _L.check(st)
        return ModelTensor(self, ct.index, ct)

    def _pin(self):
        self._handle()
        self._pins += 1

    def _unpin(self):
        self._pins -= 1
        if self._closing and self._pins == 0:
            self._detach()

    def _detach(self):
        if self._h:
            _L.lib().npushm_model_detach(self._h)
            self._h = ctypes.c_void_p()

    def close(self):
        """Drop this handle; arrays and tensors made from it keep the mapping until they go."""
        self._closing = True
        if self._pins == 0:
            self._detach()


    def __repr__(self):
        return "<npushm model %r: %d tensors, hash %s>" % (self.name, self._count, self.hash)


collections.abc.Mapping.register(Model)


def attach(name, backend="auto"):
    """Attach the model published as `name` (see Model)."""
    return Model(name, backend)


def load(path, name, mode=0o640, dedup=True, backend="auto", progress=None, replace=False):
    """Load a safetensors file once into shared memory and publish it as `name`.

    The name is checked first: when it already holds this file's content (same
    size, hash and mode) nothing is copied and the result says already_loaded;
    when it holds other content the load raises NpushmError (status EXISTS)
    at once, unless replace=True, which loads the file and moves the name to
    it atomically. dedup=False always makes a new copy.
    Returns a dict (hash, region_id, region_size, source_size, tensors,
    deduplicated, already_loaded). progress(stage, done, total) is called
    while loading if given."""
    opts = _L.LoadOpts()
    opts.mode = mode
    opts.flags = (0 if dedup else _L.LOAD_NO_DEDUP) | (_L.LOAD_REPLACE if replace else 0)
    if progress is not None:
        cb = _L.PROGRESS_FN(lambda arg, stage, done, total: progress(stage, done, total))
        opts.progress = cb
    res = _L.LoadResult()
    with _L.Device(backend) as dev:
        _L.check(_L.lib().npushm_model_load(dev.handle, str(path).encode(), name.encode(),
                                            ctypes.byref(opts), ctypes.byref(res)))
    return {"hash": res.hash_hex.decode(), "region_id": res.region_id,
            "region_size": res.region_size, "source_size": res.source_size,
            "tensors": res.tensor_count, "deduplicated": bool(res.deduplicated),
            "already_loaded": bool(res.already_loaded)}


def file_hash(path):
    """The content hash `load` would record for the file at `path` (32 hex
    digits, as in `npushm ls`), computed without loading it or a backend."""
    digest = (ctypes.c_uint8 * 16)()
    hexbuf = ctypes.create_string_buffer(33)
    _L.check(_L.lib().npushm_file_hash(str(path).encode(), ctypes.byref(digest), hexbuf))
    return hexbuf.value.decode()


def remove(name, backend="auto"):
    """Remove a model's name (attached workers keep their mapping)."""
    with _L.Device(backend) as dev:
        _L.check(_L.lib().npushm_model_remove(dev.handle, name.encode()))


__all__ = ["Model", "ModelTensor", "attach", "load", "remove", "file_hash", "NpushmError"]
