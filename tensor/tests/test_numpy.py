#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""Differential test of npushm.tensor against NumPy 1.24 (TAP output).

Random shapes of rank 0..6 with dimensions 0, 1 and larger, contiguous, sliced
(steps, negative steps), transposed and broadcast (stride-0) inputs; every op with
every dtype NumPy supports for it (bf16 against an f32 reference rounded to bf16);
NumPy's error cases must be errors here too.

Equality rules (docs/tensor.md, "Accuracy"):
  exact      add subtract multiply divide maximum minimum comparisons negative absolute
             relu where cast, integer reductions, max/min/argmax, integer matmul
  ULP <= 4   exp log sqrt rsqrt tanh sigmoid erf power (f32/f64; 1 ULP for f16/bf16);
             gelu also accepts |err| <= 4 eps |x| (cancellation in 1 + erf for x < 0)
  sums       |err| <= (n + 1) eps sum|x| (summation order differs from NumPy's
             pairwise order; the classic bound holds for both); mean: same / n;
             prod: relative (n + 1) eps
  softmax    ULP <= 8 + n; layernorm |err| <= 32 eps (1 + |y|)
  matmul     |err| <= (K + 1) eps (|A| @ |B|)

Seeded (NPT_TEST_SEED, default 1234); NPT_TEST_CASES random cases per (op, dtype)
(default 10; `make tensor-sweep` runs 20000 in total).
"""
import math
import os
import sys
import traceback
import warnings

import numpy as np

from npushm import tensor as nt

SEED = int(os.environ.get("NPT_TEST_SEED", "1234"))
CASES = int(os.environ.get("NPT_TEST_CASES", "10"))
SWEEP = "NPT_TEST_CASES" in os.environ and CASES > 100
if SWEEP:
    CASES = max(1, CASES // 200)  # spread over the ~200 (op, dtype) groups
rng = np.random.default_rng(SEED)
warnings.simplefilter("ignore")

NP_DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"]
FLOATS = ["float16", "float32", "float64"]
ALL = NP_DTYPES + ["bfloat16"]

results = []


def tap(ok, name, detail=""):
    results.append(ok)
    print("%s %d - %s" % ("ok" if ok else "not ok", len(results), name))
    if not ok and detail:
        for line in str(detail).splitlines()[-8:]:
            print("#   " + line)
    sys.stdout.flush()


# ---------------------------------------------------------------- data

def bf16_round(x):
    """float32 -> nearest-even bfloat16 value, as float32."""
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    s16 = np.uint64(16)
    r = ((u + np.uint64(0x7FFF) + ((u >> s16) & np.uint64(1))) >> s16) & np.uint64(0xFFFF)
    nan = np.isnan(x)
    r = np.where(nan, (u >> s16) | np.uint64(0x40), r)
    return (r.astype(np.uint32) << np.uint32(16)).view(np.float32).reshape(x.shape)


def rand_values(shape, dtype, special=True, positive=False, small_int=False):
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        v = rng.random(n) < 0.5
    elif dtype in ("int8", "uint8"):
        info = np.iinfo(dtype)
        lo = 0 if positive else info.min
        v = rng.integers(lo, info.max + 1, n)
        if small_int:
            v = rng.integers(0 if positive else -3, 4, n)
    elif dtype in ("int32", "int64"):
        info = np.iinfo(dtype)
        if small_int:
            v = rng.integers(0 if positive else -5, 6, n)
        elif rng.random() < 0.3:
            v = rng.integers(info.min, info.max, n, endpoint=True)  # wrap-around
        else:
            v = rng.integers(0 if positive else -1000, 1000, n)
    else:
        scale = 10.0 ** rng.integers(-2, 3)
        v = rng.standard_normal(n) * scale
        if positive:
            v = np.abs(v) + 1e-3
        if special and n and rng.random() < 0.3:
            k = rng.integers(0, n, max(1, n // 8))
            v[k] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], len(k))
    npdt = np.float32 if dtype == "bfloat16" else np.dtype(dtype)
    a = np.asarray(v).astype(npdt).reshape(shape)
    if dtype == "bfloat16":
        a = bf16_round(a)
    return a


def strided(arr):
    """Return a view with the same values as arr: sliced with steps (possibly negative),
    transposed, or plain."""
    if arr.ndim == 0:
        return arr
    mode = rng.integers(0, 4)
    if mode == 0:
        return arr
    if mode == 1:  # steps
        steps = [int(rng.choice([1, 2, -1, -2])) for _ in range(arr.ndim)]
        big = np.empty(tuple(max(1, s * abs(st)) for s, st in zip(arr.shape, steps)),
                       arr.dtype)
        sl = tuple(slice(None, None, st) if st > 0 else slice(None, None, st)
                   for st in steps)
        idx = tuple(slice(0, s * abs(st), abs(st)) for s, st in zip(arr.shape, steps))
        big[...] = 0
        view = big[idx]
        view[...] = arr
        out = big[idx]
        # negative steps: reverse the view, write reversed values
        for ax, st in enumerate(steps):
            if st < 0:
                out = np.flip(out, ax)
        out[...] = arr
        del sl
        return out
    if mode == 2:  # transposed storage
        perm = rng.permutation(arr.ndim)
        store = np.ascontiguousarray(np.transpose(arr, perm))
        inv = np.argsort(perm)
        return np.transpose(store, inv)
    # a broadcast view where a dim is 1
    if any(s == 1 for s in arr.shape):
        return np.broadcast_to(arr, arr.shape)
    return arr


def rand_shape(rank=None, maxdim=5):
    if rank is None:
        rank = int(rng.integers(0, 7))
    dims = []
    for _ in range(rank):
        r = rng.random()
        dims.append(0 if r < 0.06 else 1 if r < 0.3 else int(rng.integers(2, maxdim + 1)))
    while dims and np.prod(dims) > 3000:
        dims[int(rng.integers(0, len(dims)))] = 1
    return tuple(dims)


def broadcast_operand_shape(out):
    """A shape that broadcasts to `out`: leading dims dropped, some set to 1."""
    drop = int(rng.integers(0, len(out) + 1)) if rng.random() < 0.5 else 0
    s = list(out[drop:])
    for i in range(len(s)):
        if rng.random() < 0.25:
            s[i] = 1
    return tuple(s)


def incompatible_shape(out):
    s = list(out)
    cand = [i for i, d in enumerate(s) if d not in (1,)]
    if not cand:
        return None
    i = cand[int(rng.integers(0, len(cand)))]
    s[i] = s[i] + 2
    return tuple(s)


def to_nt(a, dtype):
    """np array (values) -> Tensor of `dtype` (bf16 through an exact cast)."""
    if dtype == "bfloat16":
        return nt.from_numpy(a).astype("bfloat16").eval()
    return nt.from_numpy(a)


def from_nt(t):
    if t.dtype == "bfloat16":
        return t.astype("float32").numpy()
    return t.numpy()


# ---------------------------------------------------------------- comparison

def ulp_dist(a, b, dtype):
    """|a - b| in units of the spacing of `dtype` at b (NaN/inf checked separately)."""
    b = np.asarray(b)
    if dtype == "bfloat16":
        sp = np.spacing(np.abs(b.astype(np.float32))).astype(np.float64) * 65536.0
    else:
        sp = np.spacing(np.abs(b.astype(dtype))).astype(np.float64)
    return np.abs(np.asarray(a, np.float64) - b.astype(np.float64)) / sp


def float_kind(d):
    return d in ("float16", "bfloat16", "float32", "float64")


def eps_of(d):
    return {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23,
            "float64": 2.0 ** -52}[d]


def nan_inf_match(got, ref):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if not np.array_equal(np.isnan(got), np.isnan(ref)):
        return False, "NaN positions differ"
    inf = np.isinf(ref) | np.isinf(got)
    if not np.array_equal(got[inf], ref[inf]):
        return False, "infinities differ"
    return True, ""


def compare(got, ref, dtype, rule, ulp=0, extra=None):
    """got/ref numpy arrays (bf16 as f32 values). Returns (ok, message)."""
    got = np.asarray(got)
    ref = np.asarray(ref)
    if got.shape != ref.shape:
        return False, "shape %s != %s" % (got.shape, ref.shape)
    if got.size == 0:
        return True, ""
    if rule == "exact" or not float_kind(dtype):
        if float_kind(dtype):
            ok = np.array_equal(got.astype(np.float64), ref.astype(np.float64), equal_nan=True)
        else:
            ok = np.array_equal(got, ref)
        if not ok:
            bad = np.argwhere(~((got == ref) | (np.isnan(got.astype(float)) &
                                                np.isnan(ref.astype(float)))))[:3]
            return False, "not equal at %s: got %s ref %s" % (
                bad.tolist(), [got[tuple(i)] for i in bad], [ref[tuple(i)] for i in bad])
        return True, ""
    ok, msg = nan_inf_match(got, ref)
    if not ok:
        return False, msg
    fin = np.isfinite(ref.astype(np.float64)) & np.isfinite(got.astype(np.float64))
    g = got.astype(np.float64)[fin]
    r = ref.astype(np.float64)[fin]
    if rule == "ulp":
        d = ulp_dist(got[fin], ref[fin], dtype)
        ok_mask = np.asarray(d <= ulp, dtype=bool)
        if extra is not None:  # absolute alternative (gelu)
            ok_mask |= np.abs(g - r) <= extra[fin]
        if not ok_mask.all():
            i = int(np.argmin(ok_mask))
            return False, "ULP %s > %d: got %r ref %r" % (d[i], ulp, g[i], r[i])
        return True, ""
    if rule == "abs":  # extra: allowed absolute error per element
        tol = extra[fin] if np.ndim(extra) else extra
        bad = np.abs(g - r) > tol
        if bad.any():
            i = int(np.argmax(bad))
            t = tol[i] if np.ndim(tol) else tol
            return False, "|err| %.3g > tol %.3g: got %r ref %r" % (abs(g[i] - r[i]), t, g[i], r[i])
        return True, ""
    raise ValueError(rule)


def expect_error(fn):
    """fn() must raise (build or evaluation); returns (ok, message)."""
    try:
        r = fn()
        if isinstance(r, nt.Tensor):
            r.eval()
    except (nt.NptError, ValueError, TypeError, IndexError, OverflowError) as e:
        return True, str(e)
    return False, "no error raised"


# ---------------------------------------------------------------- op tables

BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal,
    "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}
UNARY_NP = {"negative": np.negative, "absolute": np.absolute, "exp": np.exp, "log": np.log,
            "sqrt": np.sqrt, "tanh": np.tanh}
_erf = np.vectorize(math.erf, otypes=[np.float64])


def float_result(dtype):
    return {"bool": "float16", "int8": "float16", "uint8": "float16", "int32": "float64",
            "int64": "float64"}.get(dtype, dtype)


def ref_custom(name, a, dtype):
    """Reference for ops NumPy lacks: computed in float64, rounded to the result dtype."""
    rd = float_result(dtype)
    x = a.astype(np.float64)
    with np.errstate(all="ignore"):
        if name == "rsqrt":
            r = 1.0 / np.sqrt(x)
        elif name == "sigmoid":  # the stable form: exp(x) / (1 + exp(x)) for x < 0
            e = np.exp(-np.abs(x))
            r = np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        elif name == "gelu":
            r = 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
        elif name == "erf":
            r = _erf(x)
        elif name == "relu":
            return np.maximum(a, np.zeros((), a.dtype)), dtype
    if rd == "bfloat16":
        return bf16_round(r.astype(np.float32)), rd
    return r.astype(rd), rd


def np_result_dtype_override(dtype_np):
    """Our dtype mapping where NumPy's result type does not exist here."""
    return dtype_np


def adapt_int(got, ref):
    """i8+u8 -> NumPy int16, here int32; u8 sums -> NumPy uint64, here int64: compare in
    NumPy's type (wrapping is the same modulo the smaller width)."""
    if ref.dtype in (np.int16, np.uint64, np.uint16, np.uint32) and got.dtype != ref.dtype:
        return got.astype(ref.dtype)
    return got


# ---------------------------------------------------------------- tests

def run_group(name, fn):
    try:
        ok, msg = fn()
    except Exception:
        ok, msg = False, traceback.format_exc()
    tap(ok, name, msg)


def binary_case(op, da, db, shape_out):
    sa = broadcast_operand_shape(shape_out)
    sb = broadcast_operand_shape(shape_out)
    if rng.random() < 0.5:
        sa = shape_out
    small = op == "power"
    a = strided(rand_values(sa, da, small_int=small, positive=False))
    b = strided(rand_values(sb, db, small_int=small, positive=(op == "power" and
                                                             rng.random() < 0.8)))
    bad = rng.random() < 0.08 and incompatible_shape(sa) is not None and len(sa) > 0
    if bad:
        a = rand_values(incompatible_shape(sa) if len(sa) == len(sb) else sa, da)
        b = rand_values(incompatible_shape(sa), db)
    ta, tb = to_nt(a, da), to_nt(b, db)
    bf = "bfloat16" in (da, db)
    # reference
    try:
        with np.errstate(all="ignore"):
            if bf:
                # bf16 computes in f32 and rounds each result (docs/tensor.md)
                pt = nt.promote_types(da, db)
                ct = np.float32 if pt == "bfloat16" else np.dtype(pt)
                ref = BINARY[op](a.astype(ct), b.astype(ct))
                if pt == "bfloat16" and ref.dtype == np.float32:
                    ref = bf16_round(ref)
            elif a.ndim == 0 or b.ndim == 0:
                # dtype-only promotion (NEP 50); NumPy 1.24 uses values of 0-d arrays
                rt = np.promote_types(a.dtype, b.dtype)
                ref = BINARY[op](a.astype(rt), b.astype(rt))
            else:
                ref = BINARY[op](a, b)
    except Exception as e:
        ok, msg = expect_error(lambda: getattr(nt, op)(ta, tb))
        return ok, "NumPy raised %r; here: %s" % (e, msg)
    try:
        r = getattr(nt, op)(ta, tb)
        got = from_nt(r)
    except Exception as e:
        return False, "NumPy gave %s %s; here raised %r (a %s, b %s)" % (
            ref.dtype, ref.shape, e, a.shape, b.shape)
    got = adapt_int(got, np.asarray(ref))
    rd = r.dtype
    if not bf and np.asarray(ref).dtype != np.dtype(got.dtype):
        return False, "dtype %s, NumPy %s (%s,%s)" % (r.dtype, np.asarray(ref).dtype, da, db)
    rule = "ulp" if op == "power" and float_kind(rd) else "exact"
    return compare(got, ref, rd, rule, ulp=4 if rd in ("float32", "float64") else 1)


def unary_case(op, d):
    shape = rand_shape()
    pos = op in ("log", "sqrt", "rsqrt") and rng.random() < 0.7
    a = strided(rand_values(shape, d, positive=pos))
    ta = to_nt(a, d)
    if op in UNARY_NP:
        try:
            with np.errstate(all="ignore"):
                ref = UNARY_NP[op](a.astype(np.float32) if d == "bfloat16" else a)
                if d == "bfloat16" and op not in ("negative", "absolute"):
                    ref = bf16_round(ref)
        except Exception as e:
            ok, msg = expect_error(lambda: getattr(nt, op)(ta))
            return ok, "NumPy raised %r; here: %s" % (e, msg)
        rd = d if op in ("negative", "absolute") else float_result(d)
    else:
        if op == "relu" and d == "bool":
            return expect_error(lambda: nt.relu(ta))
        ref, rd = ref_custom(op, a.astype(np.float32) if d == "bfloat16" else a, d)
    r = getattr(nt, op)(ta)
    got = from_nt(r)
    if r.dtype != rd:
        return False, "dtype %s expected %s" % (r.dtype, rd)
    if op in ("negative", "absolute", "relu"):
        return compare(got, ref, rd, "exact")
    bound = 4 if rd in ("float32", "float64") else 1
    extra = None
    if op == "gelu":
        extra = 4 * eps_of(rd) * np.abs(a.astype(np.float64))
    return compare(got, ref, rd, "ulp", ulp=bound, extra=extra)


def where_case(dc, da, db):
    out = rand_shape()
    c = strided(rand_values(broadcast_operand_shape(out), dc))
    a = strided(rand_values(broadcast_operand_shape(out), da))
    b = strided(rand_values(out, db))
    if "bfloat16" in (da, db, dc):
        return True, ""
    try:
        if a.ndim == 0 or b.ndim == 0:
            rt = np.promote_types(a.dtype, b.dtype)
            ref = np.where(c, a.astype(rt), b.astype(rt))
        else:
            ref = np.where(c, a, b)
    except Exception as e:
        ok, msg = expect_error(lambda: nt.where(nt.from_numpy(c), nt.from_numpy(a),
                                                nt.from_numpy(b)))
        return ok, "NumPy raised %r; here %s" % (e, msg)
    got = adapt_int(nt.where(nt.from_numpy(c), nt.from_numpy(a), nt.from_numpy(b)).numpy(), ref)
    return compare(got, ref, str(ref.dtype), "exact")


def red_dtype_ref(op, d):
    if op in ("sum", "prod"):
        return d if float_kind(d) else ("uint64" if d == "uint8" else "int64")
    if op == "mean":
        return d if float_kind(d) else "float64"
    return d


def reduce_case(op, d):
    shape = rand_shape()
    a = strided(rand_values(shape, d, special=rng.random() < 0.3))
    ta = to_nt(a, d)
    nd = len(shape)
    r = rng.random()
    if r < 0.25 or nd == 0:
        axis = None
    elif r < 0.6:
        axis = int(rng.integers(-nd, nd))
    else:
        k = int(rng.integers(1, nd + 1))
        axis = tuple(int(x) for x in rng.permutation(nd)[:k])
    if rng.random() < 0.05 and nd:
        axis = nd + 1  # error case: out of range
    keep = bool(rng.random() < 0.4)
    x = a.astype(np.float32) if d == "bfloat16" else a
    if op != "argmax" and d != "bfloat16" and rng.random() < 0.3:
        # an elementwise prologue, fused into the reduction
        ta = ta + ta
        x = np.add(x, x)
    try:
        with np.errstate(all="ignore"):
            if op == "argmax":
                if isinstance(axis, tuple):
                    axis = axis[0]
                ref = np.argmax(x, axis=axis, keepdims=keep)
            elif op == "mean" and d == "float16":
                ref = np.mean(x, axis=axis, keepdims=keep)
            else:
                ref = getattr(np, op if op not in ("max", "min") else "a" + op)(
                    x, axis=axis, keepdims=keep)
    except Exception as e:
        ok, msg = expect_error(lambda: getattr(ta, op)(axis=axis, keepdims=keep))
        return ok, "NumPy raised %r; here: %s" % (e, msg)
    ref = np.asarray(ref)
    t = getattr(ta, op)(axis=axis, keepdims=keep)
    got = from_nt(t)
    rd = "int64" if op == "argmax" else red_dtype_ref(op, d)
    if d == "bfloat16" and op not in ("argmax",):
        rd = "bfloat16"
        ref = bf16_round(ref.astype(np.float32)) if op in ("max", "min") else ref
    got = adapt_int(got, ref)
    if op in ("max", "min", "argmax") or not float_kind(rd):
        return compare(got, ref, rd, "exact")
    # float sums / means / prods: order-dependent rounding, see module doc
    xs = np.abs(x.astype(np.float64))
    n = a.size // max(1, ref.size) if a.size else 0
    e = eps_of(rd)
    if op in ("sum", "mean"):
        tol = (n + 2) * e * np.sum(xs, axis=axis, keepdims=keep)
        if op == "mean":
            tol = tol / max(n, 1) + e * np.abs(ref.astype(np.float64))
        if d in ("float16", "bfloat16"):
            tol = tol + e * np.abs(ref.astype(np.float64))  # final rounding
        # huge sums overflow to inf in either order: compare finite ones only
        return compare(got, ref, rd, "abs", extra=np.asarray(tol, dtype=np.float64) + 0.0)
    if d == "float16":
        # f16 products round (and may overflow) at every step, so where some partial
        # product can exceed the f16 range, inf/NaN depend on the multiplication order
        # (NumPy's differs from ours for multi-axis reductions): compare the rest only
        with np.errstate(all="ignore"):
            worst = np.prod(np.maximum(np.abs(x.astype(np.float64)), 1.0), axis=axis,
                            keepdims=keep)
        safe = np.broadcast_to(worst <= 65504.0, ref.shape)
        got, ref = np.where(safe, got, 0), np.where(safe, ref, 0)
    tiny = {"float16": 6.1e-5, "bfloat16": 1.2e-38, "float32": 1.2e-38, "float64": 2.3e-308}[rd]
    tol = (n + 2) * (e * np.abs(ref.astype(np.float64)) + tiny)  # underflow order differs
    return compare(got, ref, rd, "abs", extra=np.asarray(tol, dtype=np.float64))


def softmax_ref(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def nn_case(op, d):
    shape = rand_shape(rank=int(rng.integers(1, 5)))
    if 0 in shape:
        shape = tuple(max(1, s) for s in shape)
    a = strided(rand_values(shape, d, special=False))
    axis = int(rng.integers(-len(shape), len(shape)))
    ta = to_nt(a, d)
    x = a.astype(np.float32) if d in ("float16", "bfloat16") else a
    n = shape[axis]
    with np.errstate(all="ignore"):
        if op == "softmax":
            ref = softmax_ref(x, axis)
            got = from_nt(nt.softmax(ta, axis))
        else:
            w = rand_values((n,) + (1,) * (len(shape) - 1 - (axis % len(shape))), "float32",
                            special=False)
            b = rand_values((n,) + (1,) * (len(shape) - 1 - (axis % len(shape))), "float32",
                            special=False)
            w, b = w.astype(x.dtype), b.astype(x.dtype)
            mu = x.mean(axis=axis, keepdims=True)
            var = ((x - mu) ** 2).mean(axis=axis, keepdims=True)
            ref = (x - mu) / np.sqrt(var + 1e-5) * w + b
            got = from_nt(nt.layernorm(ta, axis, nt.from_numpy(w), nt.from_numpy(b), 1e-5))
    if d == "float16":
        ref = ref.astype(np.float16)
    elif d == "bfloat16":
        ref = bf16_round(ref)
    if op == "softmax":
        return compare(got, ref, d, "ulp", ulp=8 + n)
    # cancellation in x - mean: absolute bound relative to the weights and output size
    e = eps_of(d)
    tol = 32 * e * (1.0 + np.abs(ref.astype(np.float64))) * (1 + np.abs(w).max())
    return compare(got, ref, d, "abs", extra=np.broadcast_to(tol, ref.shape).astype(np.float64))


def matmul_case(da, db):
    k = int(rng.integers(0, 6))
    m, n = int(rng.integers(0, 5)), int(rng.integers(0, 5))
    kind = rng.integers(0, 5)
    batch = rand_shape(rank=int(rng.integers(0, 3)), maxdim=3)
    sa = (k,) if kind == 0 else batch + (m, k)
    sb = (k,) if kind == 1 else broadcast_operand_shape(batch) + (k, n)
    if rng.random() < 0.1:
        sb = sb[:-2] + (k + 1, n) if len(sb) >= 2 else (k + 1,)
    a = strided(rand_values(sa, da, special=False, small_int=True))
    b = strided(rand_values(sb, db, special=False, small_int=True))
    try:
        ref = np.matmul(a, b)
    except Exception as e:
        ok, msg = expect_error(lambda: nt.matmul(nt.from_numpy(a), nt.from_numpy(b)))
        return ok, "NumPy raised %r; here: %s" % (e, msg)
    got = adapt_int(nt.matmul(nt.from_numpy(a), nt.from_numpy(b)).numpy(), ref)
    rd = str(ref.dtype)
    if not float_kind(rd):
        return compare(got, ref, rd, "exact")
    bound = (k + 1) * eps_of(rd) * np.matmul(np.abs(a).astype(np.float64),
                                             np.abs(b).astype(np.float64))
    bound = bound + eps_of(rd) * np.abs(np.asarray(ref, dtype=np.float64))
    return compare(got, ref, rd, "abs", extra=np.asarray(bound))


def sum_to_shape_case(d):
    out = rand_shape()
    tgt = broadcast_operand_shape(out)
    a = strided(rand_values(out, d, special=False))
    # reference: sum over the broadcast axes
    lead = len(out) - len(tgt)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(tgt) if s == 1 and
                                      out[lead + i] != 1)
    x = a
    ref = np.sum(x, axis=axes, keepdims=True).reshape(tgt) if axes else x.reshape(tgt).copy()
    if not float_kind(d):
        ref = ref.astype(np.int64) if d != "uint8" else ref.astype(np.uint64)
    got = adapt_int(nt.sum_to_shape(nt.from_numpy(a), tgt).numpy(), ref)
    if not float_kind(d):
        return compare(got, ref, d, "exact")
    n = max(1, a.size // max(1, ref.size))
    tol = (n + 2) * eps_of(d) * np.sum(np.abs(x.astype(np.float64)), axis=axes,
                                       keepdims=True).reshape(tgt) if axes else 0.0
    return compare(got, ref, d, "abs", extra=np.asarray(tol, dtype=np.float64) + 0.0)


def cast_case(src, dst):
    shape = rand_shape()
    a = strided(rand_values(shape, src, special=False))
    if float_kind(src) and not float_kind(dst) and dst != "bool":
        a = np.clip(a, -100, 100).astype(a.dtype)  # out of range float->int is undefined
        if dst == "uint8":
            a = np.abs(a).astype(a.dtype)
    t = to_nt(a, src).astype(dst)
    got = from_nt(t)
    if dst == "bfloat16":
        ref = bf16_round(a.astype(np.float32)) if src != "float64" else None
        if ref is None:
            return True, ""  # f64 -> bf16 rounds through f32 (documented double rounding)
    else:
        ref = (a.astype(np.float32) if src == "bfloat16" else a).astype(dst)
    return compare(got, ref, dst, "exact")


# ---------------------------------------------------------------- semantic tests

def in_child(body, timeout=60):
    """Run `body` (after importing numpy as np and npushm.tensor as nt) in a child Python, so
    that a hang or a crash fails one test instead of the suite: its CompletedProcess, or None
    when it did not finish within `timeout` seconds."""
    import subprocess
    code = "import numpy as np\nfrom npushm import tensor as nt\n" + body
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def t_views():
    for _ in range(30 * CASES):
        shape = rand_shape()
        a = strided(rand_values(shape, "int32"))
        t = nt.from_numpy(a)
        check(np.array_equal(t.numpy(), a), "roundtrip")
        if a.ndim:
            perm = tuple(int(p) for p in rng.permutation(a.ndim))
            check(np.array_equal(t.permute(perm).numpy(), np.transpose(a, perm)), "permute")
            ax = int(rng.integers(0, a.ndim))
            st = int(rng.choice([1, 2, 3, -1, -2]))
            lo = int(rng.integers(-4, 5))
            hi = int(rng.integers(-4, 6))
            sl = [slice(None)] * a.ndim
            sl[ax] = slice(lo, hi, st)
            check(np.array_equal(t[tuple(sl)].numpy(), a[tuple(sl)]),
                  "slice %s of %s" % (sl, shape))
            check(np.array_equal(t.unsqueeze(ax).numpy(), np.expand_dims(a, ax)), "unsqueeze")
            check(np.array_equal(t.squeeze().numpy(), np.squeeze(a)), "squeeze")
        # reshape: view exactly when NumPy's reshape is a view
        if a.size:
            new = list(a.shape)
            rng.shuffle(new)
            new = [int(s) for s in new] + [1] * int(rng.integers(0, 2))
            r = t.reshape(new)
            rn = a.reshape(new)
            check(np.array_equal(r.numpy(), rn), "reshape values")
            check(r.shares_memory(t) == np.shares_memory(rn, a),
                  "reshape view/copy differs from NumPy for %s strides %s -> %s" %
                  (a.shape, a.strides, new))
        # broadcast_to: stride 0, no copy, read-only
        tgt = (2,) + tuple(3 if s == 1 else s for s in shape)
        b = t.broadcast_to(tgt)
        check(np.array_equal(b.numpy(), np.broadcast_to(a, tgt)), "broadcast_to values")
        check(b.shares_memory(t), "broadcast_to copied")
        check(not b.writable and not b.numpy().flags.writeable, "broadcast view writable")
    # errors NumPy raises too
    t = nt.from_numpy(np.zeros((2, 3)))
    for name, fn in [("reshape size", lambda: t.reshape(4, 2)),
                     ("squeeze non-1", lambda: t.squeeze(0)),
                     ("permute repeat", lambda: t.permute(0, 0)),
                     ("axis range", lambda: t.transpose(0, 5)),
                     ("broadcast_to bad", lambda: t.broadcast_to((3, 3))),
                     ("rank 33", lambda: nt.from_numpy(np.zeros(1)).reshape((1,) * 33)),
                     ("negative dim", lambda: nt.empty((2, -1)))]:
        ok, msg = expect_error(fn)
        check(ok, "%s: %s" % (name, msg))
    try:
        np.zeros((1,) * 33)
        raise AssertionError("NumPy accepted rank 33?")
    except ValueError:
        pass
    return True, ""


def t_out_rules():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(3, dtype=np.float32)
    ta, tb = nt.from_numpy(a), nt.from_numpy(b)
    # out has the exact result shape: fine; broadcasting out: NumPy error, ours too
    o = nt.zeros((2, 3))
    nt.add(ta, tb, out=o)
    check(np.array_equal(o.numpy(), a + b), "out values")
    cases = [
        ("broadcast out", lambda: nt.add(ta, tb, out=nt.zeros((1, 3))),
         lambda: np.add(a, b, out=np.zeros((1, 3), np.float32))),
        ("out dtype same_kind", lambda: nt.add(ta, tb, out=nt.zeros((2, 3), "int32")),
         lambda: np.add(a, b, out=np.zeros((2, 3), np.int32))),
        ("out broadcast view", lambda: nt.add(ta, tb, out=nt.zeros((3,)).broadcast_to((2, 3))),
         lambda: np.add(a, b, out=np.broadcast_to(np.zeros(3, np.float32), (2, 3)))),
        ("readonly out", lambda: nt.add(ta, tb, out=nt.from_numpy(a, readonly=True)),
         None),
    ]
    for name, ours, theirs in cases:
        if theirs is not None:
            try:
                theirs()
                raise AssertionError("NumPy accepted " + name)
            except (ValueError, TypeError):
                pass
        ok, msg = expect_error(ours)
        check(ok, name + ": " + msg)
    # same_kind acceptance matches np.can_cast for every pair we have
    for s in NP_DTYPES:
        for d in NP_DTYPES:
            x = nt.zeros((2,), s)
            o = nt.zeros((2,), d)
            ours = True
            try:
                nt.add(x, nt.zeros((2,), s), out=o) if s != "bool" else \
                    nt.maximum(x, x, out=o)
            except nt.DTypeError:
                ours = False
            check(ours == np.can_cast(s, d, "same_kind"),
                  "same_kind %s -> %s: ours %s NumPy %s" % (s, d, ours,
                                                            np.can_cast(s, d, "same_kind")))
    # in place with overlap, as NumPy (which buffers overlapping operands)
    for _ in range(20):
        n = int(rng.integers(2, 30))
        x = rand_values((n,), "float64", special=False)
        y = x.copy()
        tx = nt.from_numpy(x)
        k = int(rng.integers(1, n))
        tv = tx[k:]
        tv += tx[:-k]
        y[k:] += y[:-k]
        check(np.array_equal(x, y), "overlapping a[k:] += a[:-k]")
        tx[::-1] *= tx
        y[::-1] *= y
        check(np.array_equal(x, y), "reversed in-place multiply")
    return True, ""


def t_lazy_semantics():
    # a lazy result reads its inputs at evaluation, but a write into an input first
    # evaluates pending readers: results are NumPy's eager ones
    a = np.arange(5, dtype=np.float64)
    ta = nt.from_numpy(a)
    y = ta * 2 + 1
    check(y.is_lazy, "ops are lazy")
    ta += 10
    check(np.array_equal(y.numpy(), np.arange(5) * 2 + 1), "write barrier (in-place op)")
    z = ta + 0
    ta[1:3] = 0.0
    check(np.array_equal(z.numpy(), np.arange(5) + 10.0), "write barrier (setitem)")
    # zero-copy from/to NumPy
    b = np.ones((3, 4), np.float32)
    tb = nt.from_numpy(b)
    check(np.shares_memory(tb.numpy(), b), "from_numpy/numpy share memory")
    del b
    import gc
    gc.collect()
    check(float(tb.numpy().sum()) == 12.0, "from_numpy keeps the array alive")
    ro = np.zeros(3)
    ro.flags.writeable = False
    tr = nt.from_numpy(ro)
    ok, msg = expect_error(lambda: nt.add(tr, 1.0, out=tr))
    check(ok and "read-only" in msg, "read-only borrowed buffer refuses writes: " + msg)
    # eval of a chain gives the same as NumPy, with the expression's scalars (NEP 50)
    x = rand_values((7, 5), "float32", special=False)
    tx = nt.from_numpy(x)
    check(np.array_equal(((tx * 2.5 + 1) / 3 - tx).numpy(),
                         (x * np.float32(2.5) + np.float32(1)) / np.float32(3) - x),
          "scalar chain")
    check((tx * 2.5).dtype == "float32", "weak float scalar keeps float32")
    return True, ""


def t_dlpack():
    import torch
    a = rand_values((3, 4, 5), "float32", special=False)[:, ::2, ::-1]
    t = nt.from_numpy(a)
    n = np.from_dlpack(t)
    check(np.array_equal(n, a) and np.shares_memory(n, a), "numpy.from_dlpack shares memory")
    # PyTorch cannot represent negative strides (it aborts): give it a positive-stride view
    a = rand_values((3, 4, 5), "float32", special=False)[:, ::2, 1:]
    t = nt.from_numpy(a)
    tt = torch.utils.dlpack.from_dlpack(t)
    check(np.array_equal(tt.numpy(), a), "torch from_dlpack values")
    tt[0, 0, 0] = 42.0
    check(a[0, 0, 0] == 42.0, "torch view writes through to the numpy buffer")
    src = torch.arange(24, dtype=torch.float64).reshape(2, 3, 4).transpose(0, 2)
    ts = nt.from_dlpack(src)
    check(ts.shape == (4, 3, 2) and np.array_equal(ts.numpy(), src.numpy()),
          "from_dlpack(torch) strides")
    del src
    import gc
    gc.collect()
    check(float(ts.sum().numpy()) == float(sum(range(24))), "from_dlpack keeps producer alive")
    for d in ["int8", "uint8", "int32", "int64", "float16", "float64"]:
        x = rand_values((5,), d, special=False)
        check(np.array_equal(np.from_dlpack(nt.from_numpy(x)), x), "dlpack " + d)
        check(np.array_equal(nt.from_dlpack(x).numpy(), x), "dlpack in " + d)
    bt = nt.from_numpy(np.array([1.5, -2.25], np.float32)).astype("bfloat16").eval()
    tb = torch.utils.dlpack.from_dlpack(bt)
    check(tb.dtype == torch.bfloat16 and tb.float().tolist() == [1.5, -2.25], "bf16 to torch")
    capsule = nt.from_numpy(np.ones(3)).__dlpack__()
    del capsule  # unconsumed capsule: deleter must run, no leak or crash
    capsule = np.arange(3.0).__dlpack__()
    check(nt.from_dlpack(capsule).tolist() == [0.0, 1.0, 2.0], "from_dlpack(capsule)")
    for bad in (capsule, 3):  # consumed once; not a capsule at all
        try:
            nt.from_dlpack(bad)
            check(False, "from_dlpack(%r) accepted" % (bad,))
        except ValueError as e:
            check("unused 'dltensor' capsule" in str(e), "from_dlpack(%r): %s" % (bad, e))
    check(t.__dlpack_device__() == (1, 0), "device")
    return True, ""


def t_expand_modes():
    msgs = []
    nt.set_log_callback(lambda lvl, m: msgs.append(m))
    old = nt.get_expand_mode()
    try:
        x = rand_values((64, 32), "float32", special=False)
        b = rand_values((32,), "float32", special=False)
        ref = x + b
        for mode in ("auto", "fused", "materialize", "view"):
            nt.set_expand_mode(mode)
            got = (nt.from_numpy(x) + nt.from_numpy(b)).numpy()
            check(np.array_equal(got, ref), "mode %s values" % mode)
        nt.set_expand_mode("materialize")
        nt.set_materialize_threshold(0)
        msgs.clear()
        (nt.from_numpy(x) + nt.from_numpy(b)).eval()
        check(any("add" in m and "(32,)" in m and "(64,32)" in m for m in msgs),
              "materialisation reported with op and shapes: %r" % msgs)
        nt.set_expand_mode("view")
        t = nt.from_numpy(x).T
        ok, msg = expect_error(lambda: t.reshape(-1))
        check(ok and "VIEW" in msg, "VIEW mode refuses a copying reshape: " + msg)
        nt.set_expand_mode("auto")
        msgs.clear()
        t.reshape(-1).eval()
        check(any("reshape" in m for m in msgs), "implicit reshape copy reported")
    finally:
        nt.set_expand_mode(old)
        nt.set_materialize_threshold(16 << 20)
        nt.set_log_callback(None)
    return True, ""


def t_buffer_reuse():
    old = nt.get_expand_mode()
    nt.set_expand_mode("auto")  # the accounting below is AUTO's, whatever $NPT_EXPAND_MODE
    try:
        return _buffer_reuse()
    finally:
        nt.set_expand_mode(old)


def _buffer_reuse():
    x = nt.from_numpy(rand_values((256, 512), "float32", special=False))
    r = nt.from_numpy(rand_values((512,), "float32", special=False))
    c = nt.from_numpy(rand_values((256, 1), "float32", special=False))
    nt.stats_reset()
    y = ((x * r + c) / r - c).eval()
    s = nt.stats()
    outb = 256 * 512 * 4
    check(s["os_bytes"] + s["reused_bytes"] == outb,
          "fused chain allocated %d bytes, output is %d" % (s["os_bytes"] + s["reused_bytes"],
                                                            outb))
    del y
    nt.stats_reset()
    y = ((x * r + c) / r - c).eval()
    s = nt.stats()
    check(s["os_bytes"] == 0 and s["reused_bytes"] == outb,
          "second evaluation reused the pooled buffer: %r" % s)
    nt.stats_reset()
    z = (x * r + c).sum(axis=0).eval()
    s = nt.stats()
    check(s["os_bytes"] + s["reused_bytes"] == 512 * 4,
          "sum(x*r + c) allocated %r: the prologue must fuse" % s)
    check(np.allclose(z.numpy(), (x.numpy() * r.numpy() + c.numpy()).sum(axis=0),
                      rtol=1e-5, atol=1e-3), "fused prologue values")
    return True, ""


def t_threads():
    x = rand_values((300, 700), "float32", special=False)
    b = rand_values((700,), "float32", special=False)
    outs = []
    old = nt.get_repro_mode()
    nt.set_repro_mode("independent")  # whatever $NPT_REPRO says
    for n in (1, 2, 3):
        nt.set_num_threads(n)
        t = nt.from_numpy(x)
        outs.append([nt.exp(t * b - 1).numpy(), t.sum(axis=0).numpy(), t.max(axis=1).numpy(),
                     nt.layernorm(t).numpy()])
    nt.set_num_threads(0)
    nt.set_repro_mode(old)
    for o in outs[1:]:  # 'independent' mode: sums too are bit-identical
        for k, (p, q) in enumerate(zip(outs[0], o)):
            check(np.array_equal(p, q, equal_nan=True), "thread count changes result %d" % k)
    return True, ""


def same_outcome(ours, theirs):
    """Run ours() and NumPy's theirs(): both give equal values (and shapes), or both raise
    and ours is an instance of NumPy's exception type. Returns (ok, description)."""
    def run(f):
        try:
            r = f()
            if isinstance(r, nt.Tensor):
                r = r.numpy()
            return True, r
        except Exception as e:  # noqa: BLE001 - the outcome is what is compared
            return False, e
    ok_o, o = run(ours)
    ok_t, t = run(theirs)
    if ok_o and ok_t:
        o, t = np.asarray(o), np.asarray(t)
        if o.shape == t.shape and o.size > 10 ** 6:  # a big broadcast view: its corners
            o, t = o[(slice(None, 1),) * o.ndim], t[(slice(None, 1),) * t.ndim]
        good = o.shape == t.shape and np.array_equal(o, t, equal_nan=o.dtype.kind == "f")
        return good, "values %r vs NumPy %r" % (o, t)
    if ok_o != ok_t:
        return False, "ours %s, NumPy %s" % ("returned" if ok_o else "raised %r" % o,
                                              "returned" if ok_t else "raised %r" % t)
    return isinstance(o, type(t)), "ours raised %s(%s), NumPy %s" % (type(o).__name__, o,
                                                                      type(t).__name__)


def t_int_args():
    """Integers that do not fit the C types are refused (or clamped, for slices) with
    NumPy's exception types, never wrapped: (2**64 + 3,) is not (3,)."""
    a = np.arange(6.0)
    b = np.arange(6.0).reshape(2, 3)
    c = np.zeros((1, 3))
    ta, tb, tc = nt.from_numpy(a), nt.from_numpy(b), nt.from_numpy(c)
    big = [2 ** 64 + 3, 2 ** 64, 2 ** 63, 2 ** 63 - 1, 2 ** 32 + 1, 2 ** 31, -2 ** 31 - 1,
           -2 ** 63, -2 ** 63 - 1, -2 ** 64]
    cases = []
    for v in big:
        if not 0 < v < 2 ** 59:  # (an allocation that may succeed or not is no test)
            cases.append(("empty((%d,))" % v, lambda v=v: nt.empty((v,)),
                          lambda v=v: np.empty((v,))))
        if v > 0:  # NumPy 1.24 takes any negative dimension as -1; only -1 here
            cases += [("reshape(%d)" % v, lambda v=v: ta.reshape(v), lambda v=v: a.reshape(v)),
                      ("reshape(-1, %d)" % v, lambda v=v: ta.reshape(-1, v),
                       lambda v=v: a.reshape(-1, v))]
        cases += [
            ("zeros((0, %d))" % v, lambda v=v: nt.zeros((0, v)), lambda v=v: np.zeros((0, v))),
            ("broadcast_to((%d, 6))" % v, lambda v=v: ta.broadcast_to((v, 6)),
             lambda v=v: np.broadcast_to(a, (v, 6))),
            ("a[%d:]" % v, lambda v=v: ta[v:], lambda v=v: a[v:]),
            ("a[:%d]" % v, lambda v=v: ta[:v], lambda v=v: a[:v]),
            ("a[::%d]" % v, lambda v=v: ta[::v], lambda v=v: a[::v]),
            ("a[%d::-1]" % v, lambda v=v: ta[v::-1], lambda v=v: a[v::-1]),
            ("a[%d:%d:-2]" % (v, -v), lambda v=v: ta[v:-v:-2], lambda v=v: a[v:-v:-2]),
            ("a[%d]" % v, lambda v=v: ta[v], lambda v=v: a[v]),
            ("b[1, %d:]" % v, lambda v=v: tb[1, v:], lambda v=v: b[1, v:]),
            ("sum(axis=%d)" % v, lambda v=v: ta.sum(axis=v), lambda v=v: a.sum(axis=v)),
            ("max(axis=(0, %d))" % v, lambda v=v: tb.max(axis=(0, v)),
             lambda v=v: b.max(axis=(0, v))),
            ("argmax(axis=%d)" % v, lambda v=v: ta.argmax(axis=v), lambda v=v: a.argmax(axis=v)),
            ("squeeze(%d)" % v, lambda v=v: tc.squeeze(v), lambda v=v: np.squeeze(c, v)),
            ("unsqueeze(%d)" % v, lambda v=v: ta.unsqueeze(v), lambda v=v: np.expand_dims(a, v)),
        ]
    cases += [
        ("empty(-1)", lambda: nt.empty(-1), lambda: np.empty(-1)),
        ("empty(1.5)", lambda: nt.empty(1.5), lambda: np.empty(1.5)),
        ("empty((2, True))", lambda: nt.empty((2, True)), lambda: np.empty((2, True))),
        ("reshape(6.0)", lambda: ta.reshape(6.0), lambda: a.reshape(6.0)),
        ("a[::0]", lambda: ta[::0], lambda: a[::0]),
        ("a[1.5:]", lambda: ta[1.5:], lambda: a[1.5:]),
        ("a[1.0]", lambda: ta[1.0], lambda: a[1.0]),
        ("a[np.uint64(2**64-1)]", lambda: ta[np.uint64(2 ** 64 - 1)],
         lambda: a[np.uint64(2 ** 64 - 1)]),
        ("a[np.uint64(2**63):]", lambda: ta[np.uint64(2 ** 63):], lambda: a[np.uint64(2 ** 63):]),
        ("sum(axis=1.0)", lambda: ta.sum(axis=1.0), lambda: a.sum(axis=1.0)),
        ("sum(axis=True)", lambda: ta.sum(axis=True), lambda: a.sum(axis=True)),
        ("argmax(axis=(0,))", lambda: ta.argmax(axis=(0,)), lambda: a.argmax(axis=(0,))),
        ("transpose(2**64, 0)", lambda: tb.transpose(2 ** 64, 0),
         lambda: b.transpose(2 ** 64, 0)),
        ("squeeze((0, 0))", lambda: tc.squeeze((0, 0)), lambda: np.squeeze(c, (0, 0))),
        ("squeeze((0,))", lambda: tc.squeeze((0,)), lambda: np.squeeze(c, (0,))),
        ("broadcast_to(6)", lambda: ta.broadcast_to(6), lambda: np.broadcast_to(a, 6)),
        ("astype(True)", lambda: ta.astype(True), lambda: a.astype(True)),
    ]
    bad = []
    for name, ours, theirs in cases:
        ok, msg = same_outcome(ours, theirs)
        if not ok:
            bad.append("%s: %s" % (name, msg))
    # no NumPy counterpart: the C int / size_t parameters of the configuration calls
    for name, fn, exc in [
            ("set_num_threads(2**32 + 2)", lambda: nt.set_num_threads(2 ** 32 + 2), ValueError),
            ("reshape(-2**63)", lambda: ta.reshape(-2 ** 63), ValueError),
            ("reshape(-2**64)", lambda: ta.reshape(-2 ** 64), ValueError),
            ("set_num_threads(-1)", lambda: nt.set_num_threads(-1), ValueError),
            ("set_num_threads(1.5)", lambda: nt.set_num_threads(1.5), TypeError),
            ("set_num_threads(True)", lambda: nt.set_num_threads(True), TypeError),
            ("set_materialize_threshold(-1)", lambda: nt.set_materialize_threshold(-1),
             ValueError),
            ("set_materialize_threshold(2**64)", lambda: nt.set_materialize_threshold(2 ** 64),
             OverflowError),
            ("set_expand_mode('x')", lambda: nt.set_expand_mode("x"), ValueError),
            ("set_repro_mode(0)", lambda: nt.set_repro_mode(0), ValueError),
            ("softmax(axis=2**32)", lambda: nt.softmax(tb, 2 ** 32), np.AxisError),
            ("layernorm(axis=2**63)", lambda: nt.layernorm(tb, 2 ** 63), OverflowError),
            ("permute(2**32 + 1, 0)", lambda: tb.permute(2 ** 32 + 1, 0), np.AxisError),
            ("permute(0)", lambda: tb.permute(0), ValueError),
            ("slice(0, 0, 6, 2**64)", lambda: tb.slice(2 ** 64, 0, 6), OverflowError),
            ("sum_to_shape((2**64 + 3,))", lambda: nt.sum_to_shape(ta, (2 ** 64 + 3,)),
             ValueError)]:
        try:
            fn()
            bad.append("%s: accepted" % name)
        except exc:
            pass
        except Exception as e:  # noqa: BLE001
            bad.append("%s: raised %s(%s), not %s" % (name, type(e).__name__, e, exc.__name__))
    nt.set_num_threads(0)
    nt.set_materialize_threshold(16 << 20)
    check(nt.get_num_threads() >= 1 and tb.slice(1, -2 ** 70, 2 ** 70, 2 ** 70).shape == (2, 1),
          "slice() method clamps")
    check(not bad, "\n".join(bad[:8]))
    return True, ""


def t_zero_dims_and_0d():
    """A zero dimension does not excuse oversized others (NumPy: "array is too big"); 0-d
    reductions along 0 / -1 as NumPy 1.24 (sum, prod, max, min, argmax yes; mean and tuples
    no)."""
    bad = []
    # shapes NumPy refuses for every dtype: 2**63 or more elements besides the zero
    for shape in [(0, 2 ** 62, 4), (0, 2 ** 61, 2 ** 2), (3, 0, 2 ** 63 - 1),
                  (0, 2 ** 32, 2 ** 31), (2 ** 33, 0, 2 ** 30, 0)]:
        for name, ours, theirs in [
                ("empty", lambda s=shape: nt.empty(s), lambda s=shape: np.empty(s)),
                ("zeros int8", lambda s=shape: nt.zeros(s, "int8"),
                 lambda s=shape: np.zeros(s, np.int8)),
                ("reshape", lambda s=shape: nt.zeros((0,)).reshape(s),
                 lambda s=shape: np.zeros((0,)).reshape(s)),
                ("broadcast_to", lambda s=shape: nt.zeros((1,)).broadcast_to(s),
                 lambda s=shape: np.broadcast_to(np.zeros(1), s))]:
            ok, msg = same_outcome(ours, theirs)
            if not ok:
                bad.append("%s%s: %s" % (name, shape, msg))
    # the library's own limit is 2**59 - 1 elements (NumPy's: 2**63 - 1 bytes), zero dims
    # or not; below it a zero-size shape is fine
    check(nt.empty((0, 2 ** 40, 2 ** 18)).size == 0, "(0, 2**40, 2**18) refused")
    ok, msg = expect_error(lambda: nt.zeros((0, 2 ** 30, 2 ** 30), "int8"))
    check(ok and "too big" in msg, "(0, 2**30, 2**30) int8 accepted: " + msg)
    for dtype in ["float32", "float64", "int32", "bool", "uint8"]:
        z = np.array(7, dtype=dtype)
        tz = nt.from_numpy(z)
        for f in ["sum", "prod", "mean", "max", "min", "argmax"]:
            for axis in [0, -1, (0,), (-1,), 1, -2, (), None]:
                if f == "argmax" and isinstance(axis, tuple):
                    continue
                for keep in (False, True):
                    ok, msg = same_outcome(lambda: getattr(tz, f)(axis=axis, keepdims=keep),
                                           lambda: getattr(np, f)(z, axis=axis, keepdims=keep))
                    if not ok:
                        bad.append("%s %s(axis=%r, keepdims=%s): %s" % (dtype, f, axis, keep,
                                                                       msg))
        for axis in [0, -1, 1, (0,)]:
            ok, msg = same_outcome(lambda: tz.squeeze(axis), lambda: np.squeeze(z, axis))
            if not ok:
                bad.append("%s squeeze(%r): %s" % (dtype, axis, msg))
    r = nt.sum(nt.from_numpy(np.array(3, np.int8)), axis=0)
    check(r.dtype == "int64" and r.item() == 3, "0-d int8 sum along 0: %s" % r.dtype)
    check(nt.softmax(np.array(3.0, np.float32), 0).item() == 1.0, "softmax of 0-d")
    check(not bad, "\n".join(bad[:8]))
    return True, ""


def t_big_endian():
    """Non-native byte order is converted by a copy (it cannot be shared): from_numpy (read-only
    unless readonly=False), asarray, NumPy operands of ops, setitem, astype dtypes."""
    bad = []
    for d in ["float16", "float32", "float64", "int32", "int64", "int8", "uint8", "bool"]:
        be = rand_values((3, 4), d, special=False).astype(np.dtype(d).newbyteorder(">"))
        native = be.astype(np.dtype(d))
        t = nt.from_numpy(be)
        if not (t.dtype == d and np.array_equal(t.numpy(), native, equal_nan=True)):
            bad.append("from_numpy %s: %s %r" % (be.dtype.str, t.dtype, t.numpy()))
        if be.dtype.isnative:  # one byte: there is no byte order, the array is shared
            if not np.shares_memory(t.numpy(), be):
                bad.append("from_numpy %s copied" % be.dtype.str)
        elif t.writable or np.shares_memory(t.numpy(), be):
            bad.append("from_numpy %s: a writable tensor or shared memory" % be.dtype.str)
        if not nt.from_numpy(be, readonly=False).writable:
            bad.append("from_numpy(%s, readonly=False) is read-only" % be.dtype.str)
        if not np.array_equal(nt.asarray(be).numpy(), native, equal_nan=True):
            bad.append("asarray %s" % be.dtype.str)
        if d not in ("bool",):
            got = (nt.from_numpy(native) + be).numpy()
            if not np.array_equal(got, native + native, equal_nan=True):
                bad.append("op with a %s operand" % be.dtype.str)
    x = nt.zeros((2, 3))
    x[...] = np.arange(6, dtype=">f8").reshape(2, 3)
    check(np.array_equal(x.numpy(), np.arange(6).reshape(2, 3)), "setitem from '>f8'")
    check(nt.zeros(3, ">i4").dtype == "int32" and x.astype(">f8").dtype == "float64",
          "'>' dtypes name the same types")
    ok, msg = expect_error(lambda: nt.add(nt.from_numpy(np.ones(2, ">f4")), 1.0,
                                          out=nt.from_numpy(np.ones(2, ">f4"))))
    check(ok and "read-only" in msg, "a write into the converted copy must fail: " + msg)
    check(not bad, "\n".join(bad[:8]))
    return True, ""


def t_array_likes():
    """asarray of inputs NumPy makes no tensor dtype of: integers and long doubles are converted
    exactly or refused, never wrapped or truncated (uint64 above int64, a Python int of 2**63,
    complex, strings, objects, dates); the other dtypes keep their values."""
    bad = []
    for a in [np.array([2 ** 64 - 1], np.uint64), [2 ** 63]]:
        ok, msg = expect_error(lambda: nt.asarray(a))
        if not ok or "does not fit int64" not in msg:
            bad.append("asarray(%r): %s" % (a, msg))
    for a in [np.array([1 + 2j]), np.array(["12", "3"]), np.array([1, "a"], dtype=object),
              np.array(["2020-01-01"], dtype="datetime64[D]"), np.array([1], np.timedelta64)]:
        try:
            nt.asarray(a)
            bad.append("asarray(%r) accepted" % (a,))
        except nt.DTypeError as e:
            if "no tensor dtype holds" not in str(e):
                bad.append("asarray(%r): %s" % (a, e))
        except Exception as e:
            bad.append("asarray(%r): %s %s" % (a, type(e).__name__, e))
    for a, d in [(np.array([2 ** 63 - 1, 7], np.uint64), "int64"),
                 (np.array([-3, 2 ** 15 - 1], np.int16), "int64"),
                 (np.array([2 ** 32 - 1], np.uint32), "int64"),
                 (np.array([1.5, -2.25], np.longdouble), "float64")]:
        t = nt.asarray(a)
        if t.dtype != d or t.numpy().tolist() != a.tolist():
            bad.append("asarray(%r): %s %r" % (a, t.dtype, t.numpy().tolist()))
    ok, msg = expect_error(lambda: nt.asarray([1.0], dtype="complex64"))
    check(ok, "asarray(dtype='complex64') accepted")
    check(not bad, "\n".join(bad[:8]))
    return True, ""


def t_repro():
    """Reductions give the same bits on every run at a fixed thread count (both modes) and,
    in the default 'independent' mode, at any thread count; $NPT_REPRO selects the mode."""
    import subprocess
    wide = (rng.standard_normal(600_001) * 2.0 ** rng.integers(0, 24, 600_001))
    x = nt.from_numpy(wide.astype(np.float32))
    m = nt.from_numpy((rng.standard_normal((50_000, 12)) *
                       2.0 ** rng.integers(0, 24, (50_000, 12))).astype(np.float32))
    y = nt.from_numpy(rng.standard_normal((50_000, 12)).astype(np.float32))
    ops = [("sum", lambda: x.sum()), ("mean axis 0", lambda: m.mean(axis=0)),
           ("sum_to_shape", lambda: nt.sum_to_shape(m, (12,))),
           ("sum(m*y) axis 0", lambda: (m * y).sum(axis=0)),
           ("layernorm", lambda: nt.layernorm(m)), ("softmax", lambda: nt.softmax(m, 0))]
    old = nt.get_repro_mode()
    res = {}
    try:
        for mode in ("independent", "threads"):
            nt.set_repro_mode(mode)
            for n in (1, 2, 3):
                nt.set_num_threads(n)
                for name, f in ops:
                    first = f().numpy().tobytes()
                    for _ in range(4):
                        check(f().numpy().tobytes() == first,
                              "%s changed bits between runs at %d threads (%s)"
                              % (name, n, mode))
                    res[mode, n, name] = first
        for name, _ in ops:
            for n in (2, 3):
                check(res["independent", n, name] == res["independent", 1, name],
                      "%s: %d threads give other bits than 1 in 'independent' mode" % (name, n))
    finally:
        nt.set_repro_mode(old)
        nt.set_num_threads(0)
    env = {k: v for k, v in os.environ.items() if k != "NPT_REPRO"}
    for value, want in [("threads", "threads"), ("independent", "independent"),
                        (None, "independent")]:
        e = dict(env, NPT_REPRO=value) if value else env
        out = subprocess.run([sys.executable, "-c", "from npushm import tensor as nt; "
                              "print(nt.get_repro_mode())"], capture_output=True, text=True,
                             env=e, check=True).stdout
        check(out.strip() == want, "NPT_REPRO=%s gives mode %r, not %r" % (value, out, want))
    return True, ""


def t_env_expand_mode():
    """$NPT_EXPAND_MODE: a value that is no expansion mode is logged, never silently 'auto'."""
    import subprocess
    # an expansion mode the variable misspells is logged (NPT_LOG=warn shows the library's
    # warnings on stderr), not silently replaced by 'auto'
    env = {k: v for k, v in os.environ.items() if k != "NPT_EXPAND_MODE"}
    for value, warned in [("materialise", True), ("auto", False), ("FUSED", False)]:
        r = subprocess.run([sys.executable, "-c", "from npushm import tensor as nt; "
                            "print(nt.get_expand_mode())"], capture_output=True, text=True,
                           env=dict(env, NPT_EXPAND_MODE=value, NPT_LOG="warn"), check=True)
        check(("NPT_EXPAND_MODE=%s is not an expansion mode" % value in r.stderr) == warned,
              "NPT_EXPAND_MODE=%s: stderr %r" % (value, r.stderr))
        check(r.stdout.strip() == ("auto" if value != "FUSED" else "fused"),
              "NPT_EXPAND_MODE=%s gives mode %r" % (value, r.stdout))
    return True, ""


def t_tensor_over_numpy_view_frees():
    """A tensor over another tensor's numpy() view (nt.from_numpy(t.numpy()), asarray, an
    operand) frees without a deadlock: the last release drops the array, whose base frees
    the first tensor, whose release comes back into the binding. Run in a child process so
    that a hang fails the test instead of the suite."""
    r = in_child("a = nt.from_numpy(np.arange(4.0))\nm = nt.from_numpy(a.numpy())\n"
                 "b = nt.asarray(nt.zeros(3).numpy())\ndel a\ndel m, b\n"
                 "c = nt.from_numpy(np.ones(2))\nd = nt.from_numpy(c.numpy()) + 1\ndel c\n"
                 "print(d.numpy().tolist())\ndel d\nprint('freed')\n")
    if r is None:
        return False, "freeing a tensor over another tensor's numpy() view hangs"
    check(r.returncode == 0 and r.stdout.split() == ["[2.0,", "2.0]", "freed"],
          "exit %d, stdout %r, stderr %r" % (r.returncode, r.stdout, r.stderr[-500:]))
    return True, ""


def t_eval_errors_are_npt_errors():
    """Errors found at evaluation (integer ** negative) raise an NptError that is also NumPy's
    ValueError, whose text is the library's message (not a (status, message) tuple)."""
    x = nt.from_numpy(np.array([2, 3], np.int32))
    try:
        (x ** nt.from_numpy(np.array([1, -1], np.int32))).numpy()
        return False, "int ** negative accepted"
    except ValueError as e:
        check(isinstance(e, nt.NptError) and e.status == 9,
              "%s is no NptError with status NPT_E_VALUE" % type(e).__mro__[0].__name__)
        check(str(e).startswith("power: integers to negative integer powers are not allowed"),
              "message %r" % str(e))
    check(issubclass(nt.OutOfMemoryError, MemoryError) and
          issubclass(nt.OutOfMemoryError, nt.NptError), "OutOfMemoryError's bases")
    return True, ""


def t_setitem_as_numpy():
    """Assignment casts as NumPy's (unsafe: 2.7 into int32 stores 2, a float64 array into an
    int32 selection), drops a value's leading size-1 dimensions ((1, 3) into (3,)), and says
    what could not broadcast in NumPy's words."""
    bad = []
    cases = [("float scalar into int32", "int32", (3,), slice(None), 2.7),
             ("negative float scalar into int8", "int8", (3,), 1, -2.7),
             ("float64 array into int32", "int32", (2, 3), Ellipsis,
              np.array([2.7, -1.5, 3.0])),
             ("float64 tensor into uint8", "uint8", (3,), slice(None),
              nt.from_numpy(np.array([1.9, 200.2, 7.0]))),
             ("float scalar into bool", "bool", (2,), 0, 0.5),
             ("int64 array into float16", "float16", (2,), Ellipsis,
              np.array([3, 2049], np.int64)),
             ("(1, 3) into (3,)", "float64", (3,), Ellipsis, np.ones((1, 3))),
             ("(1, 1, 2) into (2, 2)[0]", "float32", (2, 2), 0,
              np.arange(2.0).reshape(1, 1, 2))]
    for name, dt, shape, key, value in cases:
        a = np.zeros(shape, dt)
        t = nt.zeros(shape, dt)
        try:
            a[key] = value.numpy() if isinstance(value, nt.Tensor) else value
        except Exception as e:  # noqa: BLE001
            bad.append("%s: NumPy raised %r" % (name, e))
            continue
        try:
            t[key] = value
            if not np.array_equal(t.numpy(), a):
                bad.append("%s: %r, NumPy %r" % (name, t.numpy().tolist(), a.tolist()))
        except Exception as e:  # noqa: BLE001
            bad.append("%s: raised %s: %s" % (name, type(e).__name__, e))
    for name, value, exc in [("NaN into int32", float("nan"), ValueError),
                             ("inf into int32", float("inf"), OverflowError)]:
        ok, msg = same_outcome(lambda v=value: nt.zeros(2, "int32").__setitem__(0, v),
                               lambda v=value: np.zeros(2, np.int32).__setitem__(0, v))
        if not ok:
            bad.append("%s: %s" % (name, msg))
    t = nt.zeros(3)
    try:
        t[...] = np.ones((2, 3))
        bad.append("(2, 3) into (3,) accepted")
    except ValueError as e:
        if "could not broadcast input array from shape (2, 3) into shape (3,)" not in str(e):
            bad.append("(2, 3) into (3,): %s" % e)
    check(not bad, "\n".join(bad[:8]))
    return True, ""


def t_outputs_with_zero_strides():
    """An empty output is writable even where NumPy gives it zero strides (np.zeros((0, 3))[:,
    None] has strides (0, 0, 0)): nothing can alias, and NumPy writes it. A view of a broadcast
    view is read-only as in NumPy, and the refusal says that, not that it has a stride-0
    dimension it does not have."""
    bad = []
    for a in [np.zeros((0, 3))[:, None], np.lib.stride_tricks.as_strided(np.zeros(1), (0, 4),
                                                                         (0, 0))]:
        t = nt.from_numpy(a)
        for name, ours, theirs in [
                ("setitem", lambda: t.__setitem__(Ellipsis, 1.0),
                 lambda: a.__setitem__(Ellipsis, 1.0)),
                ("+=", lambda: t.__iadd__(1.0), lambda: a.__iadd__(1.0)),
                ("out=", lambda: nt.add(t, t, out=t), lambda: np.add(a, a, out=a))]:
            ok, msg = same_outcome(ours, theirs)
            if not ok or not t.writable:
                bad.append("%s into shape %s strides %s: %s (writable %s)" % (
                    name, a.shape, a.strides, msg, t.writable))
    b = nt.zeros(3).broadcast_to((4, 3))
    for name, view in [("b[0]", lambda: b[0]), ("b[1:2]", lambda: b[1:2])]:
        try:
            view()[...] = 1.0
            bad.append("%s of a broadcast view accepted a write" % name)
        except nt.ReadOnlyError as e:
            if "stride-0" in str(e) or "view of one" not in str(e):
                bad.append("%s: %s" % (name, e))
    check(not bad, "\n".join(bad[:8]))
    return True, ""


def t_reduction_out_casting():
    """NumPy's reductions write into out= with 'unsafe' casting after computing in their own
    dtype (np.sum([0.5] * 3, out=int64) is 1, np.max([2.7, 1.2], out=int64) 2); elementwise
    ops keep 'same_kind' (np.add(f64, 1, out=int64) is refused, here too)."""
    bad = []
    for x in [np.array([0.5, 0.5, 0.5]), np.array([2.6, 2.6, 2.6, 2.6]),
              np.array([-2.6, -0.3, 7.9]), np.array([1.5, 1.5, 1.5], np.float32),
              np.array([100, 100, 3], np.int64)]:
        for op in ["sum", "mean", "max", "min", "prod"]:
            for dt in ["int64", "int32", "int8", "float16", "float32", "bool"]:
                ok, msg = same_outcome(
                    lambda: getattr(nt, op)(nt.from_numpy(x), out=nt.zeros((), dt)),
                    lambda: getattr(np, op)(x, out=np.zeros((), dt)))
                if not ok:
                    bad.append("%s(%r, out=%s): %s" % (op, x.tolist(), dt, msg))
    ok, msg = same_outcome(lambda: nt.sum(nt.from_numpy(np.ones((2, 3))), axis=0,
                                          out=nt.zeros((3,), "int8")),
                           lambda: np.sum(np.ones((2, 3)), axis=0, out=np.zeros((3,), np.int8)))
    if not ok:
        bad.append("sum axis 0 into int8: " + msg)
    ok, msg = expect_error(lambda: nt.add(nt.from_numpy(np.ones(3)), 1,
                                          out=nt.zeros((3,), "int64")))
    if not ok:
        bad.append("add(f64, 1, out=int64) accepted")
    check(not bad, "\n".join(bad[:8]))
    return True, ""


def t_unshareable_arrays_copied_read_only():
    """An array whose memory cannot be shared (a field of a record array: strides that are no
    multiple of the item size; misaligned elements) is copied, so the tensor is read-only
    unless readonly=False: a write would otherwise land in the copy and silently miss the
    array (t += 1 left rec['a'] unchanged). Its values, and 0-d arrays, keep their shape."""
    bad = []
    rec = np.zeros(3, dtype=[("a", "f4"), ("b", "i1")])
    rec["a"] = [1.5, -2.0, 3.25]
    mis = np.frombuffer(bytearray(41), dtype=np.float64, offset=1, count=5)
    mis0 = np.frombuffer(bytearray(9), dtype=np.float64, offset=1, count=1).reshape(())
    for name, arr in [("record field", rec["a"]), ("misaligned", mis),
                      ("misaligned 0-d", mis0)]:
        t = nt.from_numpy(arr)
        if t.shape != arr.shape or not np.array_equal(t.numpy(), arr):
            bad.append("%s: %s %r vs %s %r" % (name, t.shape, t.numpy(), arr.shape, arr))
        before = arr.copy()
        try:
            t += 1
            if not np.array_equal(arr, before + 1):
                bad.append("%s: t += 1 did not reach the array (%r)" % (name, arr))
        except nt.ReadOnlyError:
            pass
        if t.writable:
            bad.append("%s: a writable tensor over a copy" % name)
        w = nt.from_numpy(arr, readonly=False)
        if not w.writable:
            bad.append("%s: readonly=False gave a read-only tensor" % name)
    check(not bad, "\n".join(bad[:8]))
    return True, ""


def t_out_of_shared_lazy_graph():
    """out= of a reduction or softmax whose input is a lazy graph sharing subexpressions
    (y = x * 0.5; x = y + y, 60 times: 120 nodes, 2^60 paths) checks the output against the
    graph's inputs node by node, not path by path (it took 2^60 steps). A child process
    with a time limit, so that a hang fails the test instead of the suite."""
    r = in_child("x = o = nt.from_numpy(np.ones(8, np.float32))\n"
                 "for i in range(60):\n    y = x * 0.5\n    x = y + y\n"
                 "s = nt.zeros(())\nnt.sum(x, out=s)\n"
                 "m = nt.zeros(8)\nnt.softmax(x, 0, out=m)\n"
                 "nt.max(x, axis=0, keepdims=True, out=o[3:4])\n"
                 "print(s.item(), m.numpy().tolist() == [0.125] * 8, o.numpy().tolist())\n")
    if r is None:
        return False, "out= of a reduction of a shared 60-level lazy graph did not finish"
    check(r.returncode == 0 and r.stdout.split() == ["8.0", "True", "[1.0,", "1.0,", "1.0,",
                                                     "1.0,", "1.0,", "1.0,", "1.0,", "1.0]"],
          "exit %d, stdout %r, stderr %r" % (r.returncode, r.stdout, r.stderr[-500:]))
    return True, ""


# ---------------------------------------------------------------- main

def main():
    groups = []
    for op in BINARY:
        for d in ALL:
            def g(op=op, d=d):
                for _ in range(CASES):
                    other = d if rng.random() < 0.6 else str(rng.choice(ALL))
                    da, db = (d, other) if rng.random() < 0.5 else (other, d)
                    if op == "subtract" and "bool" == da == db:
                        pass
                    ok, msg = binary_case(op, da, db, rand_shape())
                    if not ok:
                        return False, "%s(%s, %s): %s" % (op, da, db, msg)
                return True, ""
            groups.append(("%s %s" % (op, d), g))
    for op in ["negative", "absolute", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
               "relu", "gelu", "erf"]:
        for d in ALL:
            def g(op=op, d=d):
                for _ in range(CASES):
                    ok, msg = unary_case(op, d)
                    if not ok:
                        return False, msg
                return True, ""
            groups.append(("%s %s" % (op, d), g))
    for d in NP_DTYPES:
        def g(d=d):
            for _ in range(CASES):
                ok, msg = where_case(str(rng.choice(NP_DTYPES)), d, str(rng.choice(NP_DTYPES)))
                if not ok:
                    return False, msg
            return True, ""
        groups.append(("where %s" % d, g))
    for op in ["sum", "prod", "mean", "max", "min", "argmax"]:
        for d in ALL:
            def g(op=op, d=d):
                for _ in range(CASES):
                    ok, msg = reduce_case(op, d)
                    if not ok:
                        return False, msg
                return True, ""
            groups.append(("%s %s" % (op, d), g))
    for d in NP_DTYPES:
        def g(d=d):
            for _ in range(CASES):
                ok, msg = sum_to_shape_case(d)
                if not ok:
                    return False, msg
            return True, ""
        groups.append(("sum_to_shape %s" % d, g))
    for op in ["softmax", "layernorm"]:
        for d in FLOATS + ["bfloat16"]:
            def g(op=op, d=d):
                for _ in range(CASES):
                    ok, msg = nn_case(op, d)
                    if not ok:
                        return False, msg
                return True, ""
            groups.append(("%s %s" % (op, d), g))
    for d in NP_DTYPES:
        def g(d=d):
            for _ in range(CASES):
                ok, msg = matmul_case(d, d if rng.random() < 0.7 else str(rng.choice(NP_DTYPES)))
                if not ok:
                    return False, msg
            return True, ""
        groups.append(("matmul %s" % d, g))
    for s in ALL:
        def g(s=s):
            for d in ALL:
                ok, msg = cast_case(s, d)
                if not ok:
                    return False, "%s -> %s: %s" % (s, d, msg)
            return True, ""
        groups.append(("cast from %s" % s, g))
    groups += [("views: permute/slice/reshape/squeeze/broadcast_to vs NumPy", t_views),
               ("out= rules, same_kind casting, overlapping in-place ops", t_out_rules),
               ("lazy semantics, zero-copy NumPy, read-only borrowed buffers", t_lazy_semantics),
               ("DLPack with numpy.from_dlpack and torch.utils.dlpack", t_dlpack),
               ("expansion modes and materialisation reports", t_expand_modes),
               ("fused chain allocates only its output; pool reuse", t_buffer_reuse),
               ("thread counts 1/2/3 give equal results", t_threads),
               ("integer arguments are range-checked with NumPy's errors", t_int_args),
               ("zero dims and the size limit; 0-d reductions along 0/-1", t_zero_dims_and_0d),
               ("big-endian input is converted by a copy", t_big_endian),
               ("array-likes of other dtypes converted exactly or refused", t_array_likes),
               ("reductions are bitwise reproducible (both modes)", t_repro),
               ("NPT_EXPAND_MODE: a misspelled mode is logged, not silently auto",
                t_env_expand_mode),
               ("a tensor over another tensor's numpy() view frees (no deadlock)",
                t_tensor_over_numpy_view_frees),
               ("errors found at evaluation are NptErrors with the library's message",
                t_eval_errors_are_npt_errors),
               ("assignment casts and broadcasts as NumPy's", t_setitem_as_numpy),
               ("empty outputs with zero strides are writable; views of broadcast views "
                "refused in their own words", t_outputs_with_zero_strides),
               ("reductions cast into out= as NumPy's (unsafe)", t_reduction_out_casting),
               ("arrays that cannot be shared are copied read-only, never silently",
                t_unshareable_arrays_copied_read_only),
               ("out= of a reduction of a lazy graph sharing subexpressions finishes",
                t_out_of_shared_lazy_graph)]
    print("1..%d" % len(groups))
    print("# seed %d, %d random cases per group" % (SEED, CASES))
    for name, fn in groups:
        run_group(name, fn)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
