# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""npushm: shared device memory, shared model weights and broadcast math for inference hosts.

Submodules load their C libraries from the build tree (build/lib) with ctypes,
on first use, so `import npushm` itself needs no library:

  npushm.weights   shared model weights: load(), attach(), remove(), file_hash(); tensors to
                   NumPy / PyTorch through DLPack without a copy (libnpushm)
  npushm.regions   shared-memory regions: Region.alloc/open, publish, numpy views
  npushm.tensor    broadcasting math over zero-copy views (libnptensor)

The weights and regions names are also available here: npushm.attach("bert"),
npushm.load(path, "bert"), npushm.Model, npushm.Region, npushm.NpushmError and its
subclasses NotFoundError (also a KeyError and a FileNotFoundError), AccessError
(a PermissionError) and FormatError (a ValueError). help(npushm) lists them.
"""

__version__ = "0.1.0"

_LAZY = {
    "attach": "weights", "load": "weights", "remove": "weights", "file_hash": "weights", "Model": "weights",
    "ModelTensor": "weights", "Region": "regions", "unlink": "regions",
    "NpushmError": "_libnpushm", "NotFoundError": "_libnpushm", "AccessError": "_libnpushm",
    "FormatError": "_libnpushm", "Device": "_libnpushm",
}


# What `from npushm import *` and help(npushm) list (loaded on first use).
__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError("module 'npushm' has no attribute %r" % name)
    import importlib
    return getattr(importlib.import_module("." + mod, __name__), name)


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
