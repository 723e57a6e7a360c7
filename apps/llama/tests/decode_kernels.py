# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""decode_kernels.py - libnptensor's decode-step products against NumPy models
of their arithmetic, one process per instruction-set cap (test_llama.py runs

    decode_kernels.py q4|gemv-f32|gemv-packed ISA [DTYPE]

under NPT_KERNEL_ISA=ISA, so that the AVX-512, AVX2 and portable kernels are
all tested on a CPU that would pick the fastest). Exits non-zero with the
failed assertion; prints what it checked.

npt_q4_linear quantises its input per group of 32 to int8 (scale max |x| /
127, nearest even) on its integer paths: up to 4 rows from AVX2 (with FMA and
F16C) up, more rows (prefill tiles) at AVX-512 with AVX512_VNNI; other paths
keep the input in float. npt_gemv_f32 sums in float on every path.
npt_gemv_packed reads oneDNN's blocked layouts only at AVX-512 (with
AVX512_BF16 for bf16, AVX512_VNNI for int8) and is refused otherwise.
"""
import ctypes
import os
import sys

import numpy as np

CPU_FLAGS = open("/proc/cpuinfo").read().split()
NPT_F32 = 7
P, I64, SZ = ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t


def cpu_has(*flags):
    return all(f in CPU_FLAGS for f in flags)


def nptensor():
    """libnptensor through ctypes, with the signatures the checks call."""
    lib = ctypes.CDLL(os.path.join(os.environ.get("BUILD", os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "build")), "lib",
        "libnptensor.so"))
    lib.npt_tensor_from_data.argtypes = [P, ctypes.c_int, ctypes.c_int, P, P, ctypes.c_uint, P,
                                         P, ctypes.POINTER(P)]
    lib.npt_tensor_free.argtypes = [P]
    lib.npt_last_error.restype = ctypes.c_char_p
    lib.npt_q4_size.argtypes = [I64, I64, ctypes.POINTER(SZ)]
    lib.npt_q4_pack.argtypes = [P, P, SZ]
    lib.npt_q4_linear.argtypes = [P, I64, P, I64, I64, P]
    lib.npt_q4_linear_strided.argtypes = [P, I64, P, SZ, I64, I64, P]
    lib.npt_gemv_f32.argtypes = [P, I64, P, I64, I64, I64, P]
    lib.npt_pack_query.argtypes = [ctypes.c_int, I64, I64, ctypes.c_char_p, SZ,
                                   ctypes.POINTER(SZ)]
    lib.npt_pack_query_bf16x3.argtypes = [I64, I64, ctypes.c_char_p, SZ, ctypes.POINTER(SZ)]
    lib.npt_pack_weight.argtypes = [P, ctypes.c_char_p, P, SZ]
    lib.npt_gemv_packed.argtypes = [P, I64, ctypes.c_char_p, P, SZ, I64, I64, P]
    return lib


def tensor(lib, w):
    shape = (I64 * 2)(*w.shape)
    t = P()
    assert lib.npt_tensor_from_data(w.ctypes.data, NPT_F32, 2, shape, None, 1, None, None,
                                    ctypes.byref(t)) == 0
    return t


# ------------------------------------------------------------------ 4-bit

def q4_reference(w):
    """The 4-bit format of npt_q4_pack in NumPy: (packed bytes, dequantised weight)."""
    n, k = w.shape
    g = w.reshape(n, k // 32, 32)
    pick = np.take_along_axis(g, np.abs(g).argmax(-1)[..., None], -1)[..., 0]
    d = (pick / -8).astype(np.float16)
    inv = np.where(d != 0, 1 / np.where(d != 0, d.astype(np.float32), 1), 0).astype(np.float32)
    q = np.clip(np.floor(g * inv[..., None] + np.float32(8.5)), 0, 15).astype(np.uint8)
    blocks = np.concatenate([d[..., None].view(np.uint8).reshape(n, k // 32, 2),
                             q[..., :16] | (q[..., 16:] << 4)], -1)
    deq = (q.astype(np.float32) - 8) * d.astype(np.float32)[..., None]
    return blocks.reshape(-1).tobytes(), deq.reshape(n, k)


def q4_quantised_input(isa, m):
    """Whether npt_q4_linear quantises m input rows under this cap on this CPU."""
    if isa == "c" or not cpu_has("avx2", "fma", "f16c"):
        return False
    return m <= 4 or (isa == "avx512" and cpu_has("avx512f", "avx512_vnni"))


def q4_input(x):
    """x as the integer paths see it: per group of 32, int8 at scale max |x| / 127 (nearest
    even), dequantised."""
    m, k = x.shape
    g = x.reshape(m, k // 32, 32)
    dx = np.abs(g).max(-1, keepdims=True) / np.float32(127)
    qx = np.rint(g * np.where(dx > 0, np.float32(1) / np.where(dx > 0, dx, 1), 0))
    return (qx * dx).reshape(m, k)


def check_q4(isa):
    lib = nptensor()
    rng = np.random.default_rng(0)
    # rows 1..130 (decode and prefill), K with whole 4-group steps and tail groups, N not a
    # multiple of 4 (the 4 streams of a thread's rows and the rest one by one)
    for m, n, k in [(1, 1, 32), (1, 7, 64), (3, 33, 96), (4, 50, 128), (5, 130, 256),
                    (1, 300, 2048), (9, 40, 2048), (17, 16, 64), (8, 1, 32), (130, 37, 160),
                    (2, 9, 544), (4, 20, 1056), (3, 5, 512), (1, 67, 5632)]:
        w = rng.standard_normal((n, k)).astype(np.float32)
        w[0, :32] = 0  # an all-zero group: scale 0
        x = rng.standard_normal((m, k)).astype(np.float32)
        want_bytes, deq = q4_reference(w)
        size = SZ()
        assert lib.npt_q4_size(n, k, ctypes.byref(size)) == 0 and size.value == len(want_bytes)
        t = tensor(lib, w)
        buf = ctypes.create_string_buffer(size.value)
        assert lib.npt_q4_pack(t, buf, size) == 0
        lib.npt_tensor_free(t)
        assert buf.raw == want_bytes, "[%d, %d]: packed bytes differ from the format" % (n, k)
        y = np.zeros((m, n), dtype=np.float32)
        assert lib.npt_q4_linear(x.ctypes.data, m, buf, n, k, y.ctypes.data) == 0
        quantised = q4_quantised_input(isa, m)
        xr = q4_input(x) if quantised else x
        want = xr.astype(np.float64) @ deq.T.astype(np.float64)
        err = np.abs(y - want).max() / max(np.abs(want).max(), 1e-30)
        assert err < 1e-5, "[%d x %d x %d]: relative error %.3g (input %s)" % (
            m, n, k, err, "quantised" if quantised else "float")
        print("q4 %s [%d x %d x %d]: input %s, relative error %.2g" % (
            isa, m, n, k, "quantised" if quantised else "float", err))
    # npt_q4_linear_strided: columns [c, c + k) of a wider weight, read in place (as a
    # tensor-parallel rank reads o_proj and down_proj)
    for m, n, K, c, k in [(1, 70, 256, 64, 128), (3, 9, 5632, 2816, 2816), (6, 33, 160, 32, 96),
                          (1, 5, 64, 32, 32)]:
        w = rng.standard_normal((n, K)).astype(np.float32)
        x = rng.standard_normal((m, k)).astype(np.float32)
        want_bytes, deq = q4_reference(w)
        buf = ctypes.create_string_buffer(want_bytes, len(want_bytes))
        y = np.zeros((m, n), dtype=np.float32)
        assert lib.npt_q4_linear_strided(x.ctypes.data, m, ctypes.addressof(buf) + c // 32 * 18,
                                         K // 32 * 18, n, k, y.ctypes.data) == 0, \
            lib.npt_last_error()
        xr = q4_input(x) if q4_quantised_input(isa, m) else x
        want = xr.astype(np.float64) @ deq[:, c:c + k].T.astype(np.float64)
        err = np.abs(y - want).max() / max(np.abs(want).max(), 1e-30)
        assert err < 1e-5, "strided [%d x %d x %d of %d at %d]: relative error %.3g" % (
            m, n, k, K, c, err)
        print("q4 strided %s [%d x %d x %d of %d at column %d]: relative error %.2g" % (
            isa, m, n, k, K, c, err))
    y = np.zeros((1, 4), dtype=np.float32)
    x = np.zeros((1, 64), dtype=np.float32)
    assert lib.npt_q4_linear_strided(x.ctypes.data, 1, y.ctypes.data, 18, 4, 64,
                                     y.ctypes.data) != 0, "rows 18 bytes apart for 64 columns"
    assert b"cannot hold" in lib.npt_last_error()
    size = SZ()
    assert lib.npt_q4_size(4, 48, ctypes.byref(size)) != 0, "K = 48 (not a multiple of 32) accepted"


# ------------------------------------------------------------------ f32 rows

def check_gemv_f32(isa):
    """1..4 input rows, row strides wider than K (a column slice), K not a multiple of the
    vector width, against float64 NumPy; more than 4 rows refused."""
    lib = nptensor()
    rng = np.random.default_rng(3)
    for m, n, k, ld in [(1, 1, 1, 1), (1, 7, 13, 13), (2, 33, 64, 80), (3, 130, 100, 100),
                        (4, 5, 2048, 2048), (1, 1000, 37, 64), (4, 64, 17, 33)]:
        w = rng.standard_normal((n, ld)).astype(np.float32)
        x = rng.standard_normal((m, k)).astype(np.float32)
        y = np.full((m, n), np.nan, dtype=np.float32)
        assert lib.npt_gemv_f32(x.ctypes.data, m, w.ctypes.data, ld, n, k, y.ctypes.data) == 0, \
            lib.npt_last_error()
        want = x.astype(np.float64) @ w[:, :k].T.astype(np.float64)
        err = np.abs(y - want).max() / np.abs(want).max()
        assert err < 1e-5, "[%d x %d x %d, ld %d]: relative error %.3g" % (m, n, k, ld, err)
        print("gemv-f32 %s [%d x %d x %d, ld %d]: relative error %.2g" % (isa, m, n, k, ld, err))
    x = np.zeros((5, 8), dtype=np.float32)
    y = np.zeros((5, 8), dtype=np.float32)
    assert lib.npt_gemv_f32(x.ctypes.data, 5, x.ctypes.data, 8, 8, 8, y.ctypes.data) != 0
    assert b"1 to 4" in lib.npt_last_error()


# ------------------------------------------------------------------ packed layouts

def bf16_round(a):
    u = a.view(np.uint32).astype(np.uint64)
    u = (u + 0x7fff + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def check_gemv_packed(isa, dtype):
    """npt_gemv_packed reads npt_pack_weight's layouts in place: products within 1e-5 of a
    NumPy model of the precision (bf16: both operands rounded; bf16x3: both split into two
    bf16 terms, hi + lo, and the three products xh wh + xh wl + xl wh summed; int8: the input
    quantised per row, the weight per output channel, exact sums); refused where it has no
    kernel (bf16x3 layouts are made only on CPUs with AMX)."""
    lib = nptensor()
    need = {"f32": ["avx512f"], "bf16": ["avx512f", "avx512_bf16"],
            "bf16x3": ["avx512f", "avx512_bf16", "amx_bf16"],
            "int8": ["avx512f", "avx512_vnni"]}[dtype]
    reads = isa == "avx512" and cpu_has(*need)
    code = {"f32": 7, "bf16": 6, "int8": 1, "bf16x3": None}[dtype]
    rng = np.random.default_rng(5)
    read = 0
    for m, n, k in [(1, 64, 64), (1, 100, 48), (2, 256, 256), (4, 130, 2048), (3, 5632 // 8, 96),
                    (1, 1, 16)]:
        tag = ctypes.create_string_buffer(256)
        nbytes = SZ()
        if (lib.npt_pack_query_bf16x3(n, k, tag, 256, ctypes.byref(nbytes)) if code is None else
                lib.npt_pack_query(code, n, k, tag, 256, ctypes.byref(nbytes))):
            continue    # nothing to pack for this shape here (OpenBLAS, a reference kernel)
        w = rng.standard_normal((n, k)).astype(np.float32)
        x = rng.standard_normal((m, k)).astype(np.float32)
        t = tensor(lib, w)
        raw = ctypes.create_string_buffer(nbytes.value + 64)
        dst = (ctypes.addressof(raw) + 63) // 64 * 64
        assert lib.npt_pack_weight(t, tag.value, dst, nbytes) == 0, lib.npt_last_error()
        lib.npt_tensor_free(t)
        y = np.full((m, n), np.nan, dtype=np.float32)
        st = lib.npt_gemv_packed(x.ctypes.data, m, tag.value, dst, nbytes, n, k, y.ctypes.data)
        if st:
            assert not reads or b"blk16k64n" not in tag.value, \
                "layout %s refused on a CPU with %s: %s" % (tag.value, need, lib.npt_last_error())
            print("gemv-packed %s %s: %s refused: %s" % (isa, dtype, tag.value.decode(),
                                                         lib.npt_last_error().decode()))
            continue
        assert reads, "layout %s read under NPT_KERNEL_ISA=%s" % (tag.value, isa)
        read += 1
        if dtype == "f32":
            xr, wr = x.astype(np.float64), w.astype(np.float64)
        elif dtype == "bf16":
            xr, wr = bf16_round(x), bf16_round(w)
        elif dtype == "bf16x3":
            xh, wh = bf16_round(x), bf16_round(w)
            xl, wl = bf16_round((x - xh).astype(np.float32)), bf16_round((w - wh).astype(np.float32))
            want = xh @ wh.T + xh @ wl.T + xl @ wh.T
            exact = x.astype(np.float64) @ w.astype(np.float64).T
            assert np.abs(want - exact).max() / np.abs(exact).max() < 2.0 ** -14
        else:
            ws = np.abs(w).max(1) / np.float32(127)
            wq = np.clip(np.rint(w / ws[:, None]), -127, 127)
            xs = np.abs(x).max(1) / np.float32(127)
            xq = np.clip(np.rint(x * (np.float32(1) / xs)[:, None]), -127, 127)
            xr, wr = xq * xs[:, None].astype(np.float64), wq * ws[:, None].astype(np.float64)
        if dtype != "bf16x3":
            want = xr @ wr.T
        err = np.abs(y - want).max() / np.abs(want).max()
        assert err < 1e-5, "%s [%d x %d x %d]: relative error %.3g (%s)" % (
            dtype, m, n, k, err, tag.value)
        print("gemv-packed %s %s [%d x %d x %d]: relative error %.2g" % (isa, dtype, m, n, k, err))
    assert read > 0 or not reads, "no %s layout of this CPU was read by npt_gemv_packed" % dtype
    y = np.zeros((1, 64), dtype=np.float32)
    x = np.zeros((1, 64), dtype=np.float32)
    assert lib.npt_gemv_packed(x.ctypes.data, 1, b"onednn-2.6.3/avx2/f32/k64.n64/pad64.64/"
                               b"str8.512/blk8n", y.ctypes.data, 16384, 64, 64,
                               y.ctypes.data) != 0
    assert b"not one this product reads" in lib.npt_last_error()


if __name__ == "__main__":
    check, isa = sys.argv[1], sys.argv[2]
    if os.environ.get("NPT_KERNEL_ISA") != isa:
        sys.exit("decode_kernels.py: run with NPT_KERNEL_ISA=%s in the environment" % isa)
    {"q4": check_q4, "gemv-f32": check_gemv_f32,
     "gemv-packed": check_gemv_packed}[check](isa, *sys.argv[3:])
