# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""npushm.regions: shared-memory regions from Python (allocate, publish, open, map).

    import npushm
    r = npushm.Region.alloc(1 << 20)               # zeroed, read-write
    a = r.numpy("float32")                          # a writable view of the mapping
    r.publish("kv-0", mode=0o600)
    b = npushm.Region.open("kv-0").numpy("float32", writable=False)   # another process

Views keep the region mapped for as long as they live.
"""
import ctypes

from . import _libnpushm as _L


class Region(_L.Closeable):
    """A region handle: shared memory that other processes open by name. Make one
    with Region.alloc() or Region.open(); map it with numpy(); close() it (or use
    `with`), views keep the mapping until they go."""

    def __init__(self, handle, dev):
        self._h = handle
        self._dev = dev   # the device must outlive the handle
        self._maps = 0
        self._closing = False

    @classmethod
    def alloc(cls, size, backend="auto"):
        """A new, unnamed, zeroed, read-write region of `size` bytes (publish() names it)."""
        dev = _L.Device(backend)
        h = ctypes.c_void_p()
        _L.check(_L.lib().npushm_region_alloc(dev.handle, size, 0, ctypes.byref(h)))
        return cls(h, dev)

    @classmethod
    def open(cls, name, write=False, backend="auto"):
        """The region published as `name`, read-only unless write=True (NotFoundError if none)."""
        dev = _L.Device(backend)
        h = ctypes.c_void_p()
        _L.check(_L.lib().npushm_region_open(dev.handle, name.encode(),
                                             _L.OPEN_WRITE if write else 0, ctypes.byref(h)))
        return cls(h, dev)

    @property
    def size(self):
        """The region's size in bytes."""
        return _L.lib().npushm_region_size(self._handle())

    @property
    def id(self):
        """The region's id (as `npushm ls` shows it)."""
        return _L.lib().npushm_region_id(self._handle())

    @property
    def writable(self):
        """Whether this handle may map the region writable."""
        return bool(_L.lib().npushm_region_writable(self._handle()))

    def _handle(self):
        if not self._h:
            raise ValueError("the region is closed")
        return self._h

    def publish(self, name, mode=0o600, persistent=True):
        """Name the region (a link to its file; every name persists until unlinked,
        `persistent` is kept for compatibility). The mode is the region's."""
        _L.check(_L.lib().npushm_region_publish(self._handle(), name.encode(), mode,
                                                _L.PUBLISH_PERSISTENT if persistent else 0))

    def seal(self):
        """Seal the region: from now on nobody can map it writable."""
        _L.check(_L.lib().npushm_region_seal(self._handle()))

    def numpy(self, dtype="uint8", writable=None):
        """A NumPy view of the whole region (writable by default if the handle is)."""
        import numpy as np
        if writable is None:
            writable = self.writable
        prot = _L.PROT_READ | (_L.PROT_WRITE if writable else 0)
        addr = ctypes.c_void_p()
        _L.check(_L.lib().npushm_region_map(self._handle(), prot, ctypes.byref(addr)))
        self._maps += 1
        arr = np.asarray(_Mapping(self, addr.value, self.size, writable)).view(dtype)
        return arr

    def _unmap(self, addr):
        _L.lib().npushm_region_unmap(self._h, ctypes.c_void_p(addr))
        self._maps -= 1
        if self._closing and self._maps == 0:
            self._free()

    def _free(self):
        if self._h:
            _L.lib().npushm_region_close(self._h)
            self._h = ctypes.c_void_p()
            self._dev.close()

    def close(self):
        """Close the handle (mappings stay until their arrays are gone)."""
        self._closing = True
        if self._maps == 0:
            self._free()


class _Mapping:
    def __init__(self, region, addr, size, writable):
        self._region, self._addr = region, addr
        self.__array_interface__ = {"data": (addr, not writable), "shape": (size,),
                                    "typestr": "|u1", "version": 3}

    def __del__(self):
        self._region._unmap(self._addr)


def unlink(name, backend="auto"):
    """Remove a region name."""
    with _L.Device(backend) as dev:
        _L.check(_L.lib().npushm_name_unlink(dev.handle, name.encode()))
