# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""stream.py - the deterministic request stream of the demo and the benchmark,
the Python twin of apps/bert/cli/stream.c: batch k of (count, batch, min_len,
max_len, seed) has the same token ids, types and mask in both.
"""
import numpy as np

_M = (1 << 64) - 1


class _SplitMix:
    def __init__(self, seed):
        self.x = seed & _M

    def next(self):
        self.x = (self.x + 0x9E3779B97F4A7C15) & _M
        z = self.x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M
        return z ^ (z >> 31)


def parse(spec):
    """'COUNT,BATCH,MIN_LEN,MAX_LEN,SEED' -> tuple of ints."""
    c, b, lo, hi, seed = (int(x) for x in spec.split(","))
    if c < 1 or b < 1 or lo < 1 or hi < lo:
        raise ValueError("bad stream spec %r" % spec)
    return c, b, lo, hi, seed


def batch(spec, k, vocab, type_vocab):
    """(ids, types, mask) of batch k, int64 [batch, S], S the longest sequence."""
    _, B, lo, hi, seed = parse(spec) if isinstance(spec, str) else spec
    r = _SplitMix(seed + (k << 32))
    lens = [lo + r.next() % (hi - lo + 1) for _ in range(B)]
    S = max(lens)
    ids = np.zeros((B, S), np.int64)
    types = np.zeros((B, S), np.int64)
    mask = np.zeros((B, S), np.int64)
    for i, n in enumerate(lens):
        for j in range(S):
            if j < n:
                ids[i, j] = 1 + r.next() % max(vocab - 1, 1) if vocab > 1 else 0
                types[i, j] = 1 if type_vocab > 1 and 2 * j >= n else 0
                mask[i, j] = 1
    return ids, types, mask
