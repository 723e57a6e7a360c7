# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""ctypes declarations for libnpushm (private to npushm.weights and npushm.regions).

The library is taken from $NPUSHM_LIBDIR when it is set, else from the build
tree ($BUILD/lib, or build/lib of the checkout holding this package), else
(installed) through the dynamic linker, by its soname libnpushm.so.1. Every call that returns
npushm_status_t goes through check(), which raises NpushmError (or a subclass
matching the status) carrying the library's own message.
"""
import ctypes
import errno as _errno
import os
import threading

STATUS = ["OK", "INVALID", "NO_MEMORY", "NO_SPACE", "QUOTA", "NOT_FOUND", "EXISTS", "ACCESS",
          "SEALED", "BUSY", "NAME", "UNSUPPORTED", "NO_DEVICE", "IO", "FORMAT", "CORRUPT",
          "PROTOCOL", "SYSTEM"]
DTYPES = [None, "BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32",
          "U32", "F32", "F64", "I64", "U64"]
BACKENDS = {"auto": 0, "kmod": 1, "posix": 2}

PROT_READ, PROT_WRITE = 1, 2
OPEN_WRITE = 1
PUBLISH_PERSISTENT = 1
LOAD_NO_DEDUP = 1
LOAD_REPLACE = 2


class NpushmError(Exception):
    """A libnpushm call failed: .status is the status name ("NOT_FOUND"...), the message
    is the library's sentence (what was wrong and what to do)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class NotFoundError(NpushmError, KeyError, FileNotFoundError):
    """Nothing of that name: no model or region published under it, no such
    tensor in a model, no such file to load or hash. Also a KeyError (what
    `model["name"]` and mappings raise) and a FileNotFoundError (what opening
    a missing file raises), so either `except` catches it."""

    def __init__(self, status, message):
        NpushmError.__init__(self, status, message)
        self.errno, self.strerror = _errno.ENOENT, message

    def __str__(self):
        # KeyError would print the message quoted; OSError as "[Errno None] ...".
        return self.args[0] if self.args else ""


class AccessError(NpushmError, PermissionError):
    """The caller may not do this (the mode or owner of a name or region); also a PermissionError."""

    def __init__(self, status, message):
        NpushmError.__init__(self, status, message)
        self.errno, self.strerror = _errno.EACCES, message

    def __str__(self):
        return self.args[0] if self.args else ""


class FormatError(NpushmError, ValueError):
    """The file is not a valid safetensors file (the message says where); also a ValueError."""


_ERROR_CLASS = {"NOT_FOUND": NotFoundError, "ACCESS": AccessError, "FORMAT": FormatError}


class CTensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("name_len", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("ndim", ctypes.c_uint32), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p),
                ("nbytes", ctypes.c_uint64), ("offset", ctypes.c_uint64), ("index", ctypes.c_size_t)]


class ModelInfo(ctypes.Structure):
    _fields_ = [("hash", ctypes.c_uint8 * 16), ("hash_hex", ctypes.c_char * 33),
                ("source_size", ctypes.c_uint64), ("region_size", ctypes.c_uint64),
                ("region_id", ctypes.c_uint64), ("data_size", ctypes.c_uint64),
                ("tensor_count", ctypes.c_size_t), ("metadata_json", ctypes.c_char_p)]


PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64)


class LoadOpts(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("progress", PROGRESS_FN),
                ("progress_arg", ctypes.c_void_p), ("reserved", ctypes.c_uint32 * 8)]


class LoadResult(ctypes.Structure):
    _fields_ = [("hash", ctypes.c_uint8 * 16), ("hash_hex", ctypes.c_char * 33),
                ("region_id", ctypes.c_uint64), ("region_size", ctypes.c_uint64),
                ("source_size", ctypes.c_uint64), ("tensor_count", ctypes.c_size_t),
                ("deduplicated", ctypes.c_bool), ("already_loaded", ctypes.c_bool)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor)))]


SONAME = "libnpushm.so.1"


def library_path():
    """Where libnpushm is taken from: a path, or the soname for the dynamic linker."""
    if os.environ.get("NPUSHM_LIBDIR"):
        p = os.path.join(os.environ["NPUSHM_LIBDIR"], SONAME)
        if not os.path.exists(p):
            raise ImportError("NPUSHM_LIBDIR is %s but it has no %s; point it at the directory "
                              "holding the library, or unset it to use the installed one"
                              % (os.environ["NPUSHM_LIBDIR"], SONAME))
        return p
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(os.environ["BUILD"], "lib")] if os.environ.get("BUILD") else []
    candidates.append(os.path.normpath(os.path.join(here, "..", "..", "build", "lib")))
    for d in candidates:
        p = os.path.join(d, SONAME)
        if os.path.exists(p):
            return p
    return SONAME


_lib = None
_lock = threading.Lock()


def lib():
    """The loaded library with its prototypes (loaded on first use)."""
    global _lib
    with _lock:
        if _lib is None:
            try:
                _lib = _declare(ctypes.CDLL(library_path()))
            except OSError as e:
                raise ImportError("cannot load %s (%s): install the libnpushm1 package (or run "
                                  "make install), or set NPUSHM_LIBDIR to a directory holding it"
                                  % (SONAME, e)) from None
    return _lib


def _declare(L):
    vp, st, u32, u64, cp = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_char_p
    pvp = ctypes.POINTER(ctypes.c_void_p)
    protos = {
        "npushm_strerror": (cp, [st]),
        "npushm_last_error": (cp, []),
        "npushm_last_errno": (ctypes.c_int, []),
        "npushm_dev_open": (st, [ctypes.c_int, pvp]),
        "npushm_dev_close": (None, [vp]),
        "npushm_dev_backend": (ctypes.c_int, [vp]),
        "npushm_region_alloc": (st, [vp, u64, u32, pvp]),
        "npushm_region_open": (st, [vp, cp, u32, pvp]),
        "npushm_region_close": (None, [vp]),
        "npushm_region_size": (u64, [vp]),
        "npushm_region_id": (u64, [vp]),
        "npushm_region_fd": (ctypes.c_int, [vp]),
        "npushm_region_writable": (ctypes.c_bool, [vp]),
        "npushm_region_map": (st, [vp, u32, pvp]),
        "npushm_region_unmap": (st, [vp, vp]),
        "npushm_region_publish": (st, [vp, cp, u32, u32]),
        "npushm_region_seal": (st, [vp]),
        "npushm_name_unlink": (st, [vp, cp]),
        "npushm_model_load": (st, [vp, cp, cp, ctypes.POINTER(LoadOpts), ctypes.POINTER(LoadResult)]),
        "npushm_model_remove": (st, [vp, cp]),
        "npushm_file_hash": (st, [cp, ctypes.POINTER(ctypes.c_uint8 * 16), ctypes.c_char_p]),
        "npushm_model_attach_dev": (st, [vp, cp, pvp]),
        "npushm_model_detach": (None, [vp]),
        "npushm_model_info": (None, [vp, ctypes.POINTER(ModelInfo)]),
        "npushm_model_tensor_count": (ctypes.c_size_t, [vp]),
        "npushm_model_tensor_at": (st, [vp, ctypes.c_size_t, ctypes.POINTER(CTensor)]),
        "npushm_model_tensor_find": (st, [vp, cp, ctypes.POINTER(CTensor)]),
        "npushm_model_tensor_dlpack": (st, [vp, ctypes.c_size_t, ctypes.POINTER(ctypes.POINTER(DLManagedTensor))]),
        "npushm_dtype_size": (ctypes.c_size_t, [ctypes.c_int]),
    }
    for name, (res, args) in protos.items():
        f = getattr(L, name)
        f.restype = res
        f.argtypes = args
    return L


def check(status):
    """Raise the error matching a non-zero status with the thread's message."""
    if status == 0:
        return
    name = STATUS[status] if 0 <= status < len(STATUS) else str(status)
    msg = lib().npushm_last_error().decode(errors="replace") or lib().npushm_strerror(status).decode()
    raise _ERROR_CLASS.get(name, NpushmError)(name, msg)


class Closeable:
    """A handle with close(): closed at the end of a `with` block and when
    garbage-collected (errors at collection time are dropped)."""

    def close(self):
        """Release what the object holds; a second call does nothing."""
        raise NotImplementedError

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Device(Closeable):
    """An open backend (kmod or posix); closed when garbage-collected or with close()."""

    def __init__(self, backend="auto"):
        if backend not in BACKENDS:
            raise ValueError("backend %r is not one of %s" % (backend, ", ".join(BACKENDS)))
        self._h = ctypes.c_void_p()
        check(lib().npushm_dev_open(BACKENDS[backend], ctypes.byref(self._h)))

    @property
    def handle(self):
        """The C handle (npushm_dev_t *) for ctypes calls; ValueError once closed."""
        if not self._h:
            raise ValueError("the device is closed")
        return self._h

    @property
    def backend(self):
        """The backend in use: "kmod" or "posix"."""
        return {1: "kmod", 2: "posix"}[lib().npushm_dev_backend(self.handle)]

    def close(self):
        """Close the device (regions opened through it keep it alive until they close)."""
        if self._h:
            lib().npushm_dev_close(self._h)
            self._h = ctypes.c_void_p()

