"""npushm: shared device memory, shared model weights and broadcast math for inference hosts.

Submodules load their C libraries from the build tree (build/lib) with ctypes.
"""
