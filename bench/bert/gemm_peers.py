# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""gemm_peers.py - the GEMM rows of the BERT benchmark: a BERT forward pass's
dense-layer GEMMs alone (Y[M, N] = X[M, K] W[N, K]^T for the four H x H
projections and the two FFN matrices, per layer), f32, done by the GEMM
libraries an engine on this machine could call: OpenBLAS sgemm (through
NumPy's matmul, OPENBLAS_NUM_THREADS threads, OpenBLAS picks its kernels from
OPENBLAS_CORETYPE or the CPU) and oneDNN's dnnl_sgemm (Debian's libdnnl2, when
installed; OMP_NUM_THREADS threads; it picks its kernels from the CPU).
These are peers, not the ceiling: the ceiling is the FMA peak (fma_peak.c).
Prints one JSON line: {"rows": [{"name", "version", "gflops_best",
"gflops_median", "seconds"}], "skipped": {name: why}}.

    gemm_peers.py TOKENS REPEATS [LAYERS HIDDEN FFN]
"""
import ctypes
import ctypes.util
import json
import sys
import time

import numpy as np


def openblas_version():
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_config.restype = ctypes.c_char_p
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return "%s, core %s" % (lib.openblas_get_config().decode().split()[1],
                                lib.openblas_get_corename().decode())
    except (OSError, AttributeError, IndexError):
        return "?"


class OneDNN:
    """dnnl_sgemm through ctypes (row-major, as oneDNN's C API defines it)."""

    def __init__(self):
        name = ctypes.util.find_library("dnnl") or "libdnnl.so.2"
        self.lib = ctypes.CDLL(name)
        f = self.lib.dnnl_sgemm
        i64, fl, p = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
        f.argtypes = [ctypes.c_char, ctypes.c_char, i64, i64, i64, fl, p, i64, p, i64, fl, p, i64]
        f.restype = ctypes.c_int

        class Version(ctypes.Structure):
            _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                        ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint), ("gpu_runtime", ctypes.c_uint)]
        self.lib.dnnl_version.restype = ctypes.POINTER(Version)
        v = self.lib.dnnl_version().contents
        self.version = "%d.%d.%d" % (v.major, v.minor, v.patch)

    def linear(self, x, w, out):
        M, K = x.shape
        N = w.shape[0]
        st = self.lib.dnnl_sgemm(b"N", b"T", M, N, K, 1.0, x.ctypes.data, K, w.ctypes.data, K, 0.0,
                                 out.ctypes.data, N)
        if st:
            raise RuntimeError("dnnl_sgemm failed with status %d" % st)


def measure(linear, T, reps, L, H, F):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, H), dtype=np.float32)
    xi = rng.standard_normal((T, F), dtype=np.float32)
    w_hh = [rng.standard_normal((H, H), dtype=np.float32) for _ in range(4)]
    w_fh = rng.standard_normal((F, H), dtype=np.float32)
    w_hf = rng.standard_normal((H, F), dtype=np.float32)
    out_h = np.empty((T, H), np.float32)
    out_f = np.empty((T, F), np.float32)
    ref = x @ w_fh.T

    def forward():
        for _ in range(L):
            for w in w_hh:
                linear(x, w, out_h)
            linear(x, w_fh, out_f)
            linear(xi, w_hf, out_h)

    forward()
    err = float(np.abs(out_f - ref).max() / np.abs(ref).max())
    if err > 1e-4:
        raise RuntimeError("wrong result (max error %.2g of the largest magnitude)" % err)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        forward()
        times.append(time.perf_counter() - t0)
    flops = 2.0 * L * T * (4 * H * H + 2 * H * F)
    return {"gflops_best": flops / min(times) / 1e9, "gflops_median": flops / sorted(times)[len(times) // 2] / 1e9,
            "seconds": times}


def main():
    T, reps = (int(x) for x in sys.argv[1:3])
    L, H, F = (int(x) for x in sys.argv[3:6]) if len(sys.argv) > 5 else (12, 768, 3072)
    rows, skipped = [], {}
    r = measure(lambda x, w, o: np.matmul(x, w.T, out=o), T, reps, L, H, F)
    rows.append(dict(r, name="OpenBLAS sgemm", version=openblas_version()))
    try:
        dnnl = OneDNN()
    except (OSError, AttributeError) as e:
        skipped["oneDNN sgemm"] = "libdnnl.so.2 not usable (%s); apt-get install libdnnl2" % e
    else:
        r = measure(dnnl.linear, T, reps, L, H, F)
        rows.append(dict(r, name="oneDNN sgemm", version=dnnl.version))
    print(json.dumps({"tokens": T, "rows": rows, "skipped": skipped}))


if __name__ == "__main__":
    main()
