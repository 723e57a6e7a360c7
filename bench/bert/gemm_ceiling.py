# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""gemm_ceiling.py - the machine ceiling of the BERT benchmark: the time of a
BERT-base forward pass's dense-layer GEMMs alone (what any engine on this
OpenBLAS must spend at least), with NumPy's matmul on the same OpenBLAS and
thread count (OPENBLAS_NUM_THREADS). Prints one JSON line.

    gemm_ceiling.py BATCH SEQ_LEN REPEATS [LAYERS HIDDEN FFN]
"""
import json
import sys
import time

import numpy as np


def main():
    B, S, reps = (int(x) for x in sys.argv[1:4])
    L, H, F = (int(x) for x in sys.argv[4:7]) if len(sys.argv) > 6 else (12, 768, 3072)
    T = B * S
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, H), dtype=np.float32)
    xi = rng.standard_normal((T, F), dtype=np.float32)
    w_hh = [rng.standard_normal((H, H), dtype=np.float32) for _ in range(4)]
    w_fh = rng.standard_normal((F, H), dtype=np.float32)
    w_hf = rng.standard_normal((H, F), dtype=np.float32)
    out_h = np.empty((T, H), np.float32)
    out_f = np.empty((T, F), np.float32)

    def forward():
        for _ in range(L):
            for w in w_hh:
                np.matmul(x, w.T, out=out_h)
            np.matmul(x, w_fh.T, out=out_f)
            np.matmul(xi, w_hf.T, out=out_h)

    forward()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        forward()
        times.append(time.perf_counter() - t0)
    flops = 2.0 * L * T * (4 * H * H + 2 * H * F)
    best = min(times)
    print(json.dumps({"batch": B, "seq_len": S, "times_s": times, "gflops_best": flops / best / 1e9,
                      "seq_per_s_best": B / best, "seq_per_s_median": B / sorted(times)[len(times) // 2]}))


if __name__ == "__main__":
    main()
