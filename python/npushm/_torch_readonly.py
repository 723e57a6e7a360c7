# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""Read-only PyTorch tensors over a model's shared, sealed memory.

PyTorch has no read-only tensors: a write into the mapping would kill the
process with SIGSEGV. ReadOnlyTensor is a torch.Tensor subclass whose
__torch_function__ refuses every operation that would write into it (in-place
methods such as add_ or zero_, item assignment, out= arguments naming it) with
a RuntimeError that says what to do, and keeps views of it (slices, reshapes,
transposes, .detach()) read-only too. Results of ordinary operations are new,
plain tensors. .numpy() gives a read-only array.
"""
import torch

# In-place methods that do not write the tensor's data.
_HARMLESS_INPLACE = {"requires_grad_", "retain_grad", "share_memory_"}


def _func_name(func):
    return getattr(func, "__name__", "") or ""


def _is_readonly(t):
    return isinstance(t, ReadOnlyTensor)


def _writes_into(func, args, kwargs):
    """The read-only tensor @func would write into, or None."""
    name = _func_name(func)
    if name == "__setitem__" or (name.endswith("_") and not name.endswith("__")
                                 and name not in _HARMLESS_INPLACE):
        if args and _is_readonly(args[0]):
            return args[0]
    if name in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
                "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
                "__imatmul__"):
        if args and _is_readonly(args[0]):
            return args[0]
    # torch.nn.functional's inplace=True (relu, dropout, ...).
    if kwargs and kwargs.get("inplace") and args and _is_readonly(args[0]):
        return args[0]
    out = kwargs.get("out") if kwargs else None
    for o in (out if isinstance(out, (tuple, list)) else (out,)):
        if _is_readonly(o):
            return o
    return None


def _storage_span(t):
    s = t.storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def _wrap(result, spans):
    """Tensors that live in a read-only span stay read-only; others are plain."""
    if isinstance(result, torch.Tensor):
        if not isinstance(result, ReadOnlyTensor) and result.device.type == "cpu" and result.numel():
            p = result.data_ptr()
            if any(lo <= p < hi for lo, hi in spans):
                return result.as_subclass(ReadOnlyTensor)
        return result
    if isinstance(result, tuple):
        return tuple(_wrap(r, spans) for r in result)
    if isinstance(result, list):
        return [_wrap(r, spans) for r in result]
    return result


class ReadOnlyTensor(torch.Tensor):
    """A tensor over npushm shared memory that refuses writes with a RuntimeError
    (model weights are sealed: nobody may change them). Copy it first to get a
    writable tensor: t.clone()."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        target = _writes_into(func, args, kwargs)
        if target is not None:
            raise RuntimeError(
                "%s: this tensor is a model's weights in read-only shared memory (npushm) and "
                "cannot be written; use .clone() for a private, writable copy"
                % (_func_name(func) or "write"))
        spans = []
        for a in list(args) + list(kwargs.values()):
            for x in (a if isinstance(a, (tuple, list)) else (a,)):
                if isinstance(x, ReadOnlyTensor):
                    with torch._C.DisableTorchFunction():
                        spans.append(_storage_span(x))
        with torch._C.DisableTorchFunction():
            result = func(*args, **kwargs)
            if _func_name(func) == "numpy" and args and isinstance(args[0], ReadOnlyTensor):
                result.flags.writeable = False
                return result
            return _wrap(result, spans)

    def __repr__(self, *args, **kwargs):
        with torch._C.DisableTorchFunction():
            return "npushm read-only " + torch.Tensor.__repr__(self.as_subclass(torch.Tensor))


def readonly(t):
    """@t (a tensor over shared model memory) as a ReadOnlyTensor."""
    return t.as_subclass(ReadOnlyTensor)
