#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""bench.py - issue 4's four cases, each with a fresh result per call and with a
preallocated output, for npushm.tensor, NumPy, numexpr and PyTorch, plus a
STREAM-style add measured in the same run (run through run.sh).

  (a) 4096x4096 f32 + a (4096,) row
  (b) (a*b + c)/d - e, a 4096x4096, b and d (4096,) rows, c and e (4096,1) columns
  (c) layernorm over the last axis of (64,512,768) f32 with (768,) weight and bias
  (d) sum_to_shape of (64,512,768) f32 to (768,)

Times are medians over repetitions (at least --min-reps, about --seconds per cell,
after 2 warm-up calls). Ratios are peer time / our time (> 1: we are faster). GB/s
counts each operand read once and the result written once (as STREAM counts).
"""
import argparse
import statistics
import subprocess
import sys
import time

import numpy as np
import numexpr as ne
import torch

from npushm import tensor as nt


def timeit(fn, seconds, min_reps, max_reps=200):
    fn()
    fn()
    ts = []
    t_end = time.perf_counter() + seconds
    while len(ts) < min_reps or (time.perf_counter() < t_end and len(ts) < max_reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--stream", required=True)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--min-reps", type=int, default=7)
    args = ap.parse_args()
    T = args.threads
    torch.set_num_threads(T)
    ne.set_num_threads(T)
    nt.set_num_threads(T)
    rng = np.random.default_rng(0)
    f32 = np.float32

    def stream(reps):
        out = subprocess.run([args.stream, str(T), str(1 << 25), str(reps)], check=True,
                             capture_output=True, text=True).stdout
        return {k: float(v) for k, v in (l.split()[:2] for l in out.splitlines()
                                         if l.startswith("add_gbs"))}

    add_bw = stream(30)
    bw = add_bw["add_gbs_median"]
    print("# STREAM-style add, %d threads, 3 x 128 MiB: median %.1f GB/s, best %.1f GB/s"
          % (T, bw, add_bw["add_gbs_best"]))
    print("# threads: npushm.tensor %d, torch %d, numexpr %d (NumPy ufuncs are single-threaded)"
          % (nt.get_num_threads(), torch.get_num_threads(), T))

    N = 4096
    x = rng.random((N, N), dtype=f32)
    row = rng.random(N, dtype=f32)
    col = rng.random((N, 1), dtype=f32)
    row2 = rng.random(N, dtype=f32) + 1
    col2 = rng.random((N, 1), dtype=f32)
    X3 = rng.standard_normal((64, 512, 768), dtype=f32)
    W = rng.random(768, dtype=f32)
    B = rng.random(768, dtype=f32)
    eps = 1e-5

    T_ = {k: torch.from_numpy(v) for k, v in dict(x=x, row=row, col=col, row2=row2, col2=col2,
                                                  X3=X3, W=W, B=B).items()}
    N_ = {k: nt.from_numpy(v) for k, v in dict(x=x, row=row, col=col, row2=row2, col2=col2,
                                               X3=X3, W=W, B=B).items()}
    keep = {}

    def hold(name, v):
        keep[name] = v  # the previous result dies when the next one is stored

    o2 = np.empty((N, N), f32)
    o3 = np.empty((64, 512, 768), f32)
    o1 = np.empty(768, f32)
    to2, to3, to1 = torch.empty(N, N), torch.empty(64, 512, 768), torch.empty(768)
    no2, no3, no1 = nt.empty((N, N)), nt.empty((64, 512, 768)), nt.empty((768,))
    mu3 = np.empty((64, 512, 1), f32)
    X2 = X3.reshape(-1, 768)

    def np_ln():
        mu = X3.mean(-1, keepdims=True)
        d = X3 - mu
        var = (d * d).mean(-1, keepdims=True)
        return d / np.sqrt(var + eps) * W + B

    def np_ln_out():
        np.mean(X3, -1, keepdims=True, out=mu3)
        np.subtract(X3, mu3, out=o3)
        var = np.mean(o3 * o3, -1, keepdims=True)
        np.divide(o3, np.sqrt(var + eps), out=o3)
        np.multiply(o3, W, out=o3)
        np.add(o3, B, out=o3)

    V = dict(x=x, row=row, col=col, row2=row2, col2=col2, X2=X2, X3=X3, W=W, B=B,
             eps=np.float32(eps))

    def ne_ln(out=None):
        mu = X3.mean(-1, keepdims=True)
        var = X3.var(-1, keepdims=True)
        return ne.evaluate("(X3 - mu) / sqrt(var + eps) * W + B",
                           local_dict=dict(V, mu=mu, var=var), out=out)

    cases = [
        ("a", "x + row", 2 * N * N * 4, {
            "npushm": (lambda: hold("n", (N_["x"] + N_["row"]).eval()),
                       lambda: nt.add(N_["x"], N_["row"], out=no2)),
            "numpy": (lambda: hold("p", x + row), lambda: np.add(x, row, out=o2)),
            "numexpr": (lambda: hold("e", ne.evaluate("x + row", local_dict=V)),
                        lambda: ne.evaluate("x + row", local_dict=V, out=o2)),
            "torch": (lambda: hold("t", T_["x"] + T_["row"]),
                      lambda: torch.add(T_["x"], T_["row"], out=to2)),
        }),
        ("b", "(a*b + c)/d - e", 2 * N * N * 4, {
            "npushm": (lambda: hold("n", ((N_["x"] * N_["row"] + N_["col"]) / N_["row2"]
                                          - N_["col2"]).eval()),
                       lambda: nt.subtract((N_["x"] * N_["row"] + N_["col"]) / N_["row2"],
                                           N_["col2"], out=no2)),
            "numpy": (lambda: hold("p", (x * row + col) / row2 - col2),
                      lambda: (np.multiply(x, row, out=o2), np.add(o2, col, out=o2),
                               np.divide(o2, row2, out=o2), np.subtract(o2, col2, out=o2))),
            "numexpr": (lambda: hold("e", ne.evaluate("(x*row + col)/row2 - col2", local_dict=V)),
                        lambda: ne.evaluate("(x*row + col)/row2 - col2", local_dict=V, out=o2)),
            "torch": (lambda: hold("t", (T_["x"] * T_["row"] + T_["col"]) / T_["row2"]
                                   - T_["col2"]),
                      lambda: torch.mul(T_["x"], T_["row"], out=to2).add_(T_["col"])
                      .div_(T_["row2"]).sub_(T_["col2"])),
        }),
        ("c", "layernorm (64,512,768)", 2 * X3.nbytes, {
            "npushm": (lambda: hold("n", nt.layernorm(N_["X3"], -1, N_["W"], N_["B"],
                                                      eps).eval()),
                       lambda: nt.layernorm(N_["X3"], -1, N_["W"], N_["B"], eps, out=no3)),
            "numpy": (lambda: hold("p", np_ln()), np_ln_out),
            "numexpr": (lambda: hold("e", ne_ln()), lambda: ne_ln(o3)),
            "torch": (lambda: hold("t", torch.nn.functional.layer_norm(
                T_["X3"], (768,), T_["W"], T_["B"], eps)), None),
        }),
        ("d", "sum_to_shape (64,512,768)->(768,)", X3.nbytes, {
            "npushm": (lambda: hold("n", nt.sum_to_shape(N_["X3"], (768,)).eval()),
                       lambda: nt.sum_to_shape(N_["X3"], (768,), out=no1)),
            "numpy": (lambda: hold("p", X3.sum(axis=(0, 1))),
                      lambda: np.sum(X3, axis=(0, 1), out=o1)),
            "numexpr": (lambda: hold("e", ne.evaluate("sum(X2, axis=0)", local_dict=V)),
                        lambda: ne.evaluate("sum(X2, axis=0)", local_dict=V, out=o1)),
            "torch": (lambda: hold("t", T_["X3"].sum(dim=(0, 1))),
                      lambda: torch.sum(T_["X3"], dim=(0, 1), out=to1)),
        }),
    ]

    # results agree (sanity; the differential tests are in tensor/tests)
    checks = {
        "a": (lambda: (N_["x"] + N_["row"]).numpy(), lambda: x + row, 0),
        "b": (lambda: ((N_["x"] * N_["row"] + N_["col"]) / N_["row2"] - N_["col2"]).numpy(),
              lambda: (x * row + col) / row2 - col2, 0),
        "c": (lambda: nt.layernorm(N_["X3"], -1, N_["W"], N_["B"], eps).numpy(),
              lambda: torch.nn.functional.layer_norm(T_["X3"], (768,), T_["W"], T_["B"],
                                                     eps).numpy(), 1e-4),
        "d": (lambda: nt.sum_to_shape(N_["X3"], (768,)).numpy(),
              lambda: X3.astype(np.float64).sum(axis=(0, 1)), 1e-2),
    }
    for k, (a_, b_, tol) in checks.items():
        ga, gb = a_(), b_()
        ok = np.array_equal(ga, gb) if tol == 0 else np.allclose(ga, gb, atol=tol, rtol=tol)
        print("# check (%s): %s" % (k, "equal" if tol == 0 and ok else "close" if ok else
                                    "MISMATCH"))

    libs = ["npushm", "numpy", "numexpr", "torch"]
    rows = []
    for key, title, nbytes, fns in cases:
        for vi, variant in enumerate(["fresh", "prealloc"]):
            t = {}
            for lib in libs:
                fn = fns[lib][vi]
                if fn is None:
                    fn = fns[lib][0]  # no out= form: the same call
                keep.clear()
                t[lib] = timeit(fn, args.seconds, args.min_reps)
            keep.clear()
            rows.append((key, title, variant, t, nbytes))

    hdr = ("| case | variant | npushm ms | NumPy ms | numexpr ms | torch ms | vs NumPy "
           "| vs numexpr | vs torch | npushm GB/s | % of add BW |")
    print()
    print(hdr)
    print("|" + "---|" * 11)
    for key, title, variant, t, nbytes in rows:
        ours = t["npushm"]
        gbs = nbytes / ours / 1e9
        print("| (%s) %s | %s | %.2f | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.2fx | %.1f | %.0f%% |"
              % (key, title, variant, ours * 1e3, t["numpy"] * 1e3, t["numexpr"] * 1e3,
                 t["torch"] * 1e3, t["numpy"] / ours, t["numexpr"] / ours, t["torch"] / ours,
                 gbs, 100 * gbs / bw))
    print()
    # (a) against the add bandwidth, measured alternately so that both see the same load
    ratios = []
    for _ in range(7):
        s_bw = stream(12)["add_gbs_median"]
        ta = timeit(lambda: nt.add(N_["x"], N_["row"], out=no2), 0.3, 7)
        ratios.append((2 * N * N * 4 / ta / 1e9, s_bw))
    fr = sorted(g / s_ for g, s_ in ratios)
    print("# (a) prealloc vs STREAM-style add, alternating 7 times (npushm GB/s / add GB/s): "
          + ", ".join("%.1f/%.1f" % r for r in ratios) + "; median ratio %.0f%%"
          % (100 * fr[len(fr) // 2]))
    get = {(k, v): t for k, _, v, t, _ in rows}
    tgt = []
    tgt.append(("(a) prealloc >= 85%% of add bandwidth (median %.0f%%, alternating)"
                % (100 * fr[len(fr) // 2]), fr[len(fr) // 2] >= 0.85))
    for v in ("fresh", "prealloc"):
        b_ = get[("b", v)]
        tgt.append(("(b) %s >= 3x NumPy (%.2fx)" % (v, b_["numpy"] / b_["npushm"]),
                    b_["numpy"] / b_["npushm"] >= 3))
        tgt.append(("(b) %s >= 1.5x numexpr (%.2fx)" % (v, b_["numexpr"] / b_["npushm"]),
                    b_["numexpr"] / b_["npushm"] >= 1.5))
    for key in "abcd":
        f = get[(key, "fresh")]
        p = get[(key, "prealloc")]
        tgt.append(("(%s) fresh >= 1.2x torch (%.2fx)" % (key, f["torch"] / f["npushm"]),
                    f["torch"] / f["npushm"] >= 1.2))
        tgt.append(("(%s) prealloc >= 0.95x torch (%.2fx)" % (key, p["torch"] / p["npushm"]),
                    p["torch"] / p["npushm"] >= 0.95))
    for name, ok in tgt:
        print("target %-48s %s" % (name, "MET" if ok else "NOT MET"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
