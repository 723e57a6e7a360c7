# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""agree.py - the BERT benchmark's check that every engine computes the same
thing before any is timed: one batch of the request stream through the
PyTorch reference (apps/bert/reference/bert_ref.py, f32) and through each
engine (npushm-bert --out, ort_worker.js --out), compared on the last hidden
state (largest absolute error over the largest reference magnitude) and the
pooled output (smallest cosine over the batch).

f32 engines must agree within F32_TOL (the engine's own test tolerance);
reduced-precision engines within LOW_COS (pooled cosine) and LOW_ERR
(hidden-state error): a row that does not is not timed.
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "apps", "bert", "reference"))

F32_TOL = 1e-4
LOW_COS = 0.99
LOW_ERR = 0.1


def reference(model_path, batch, threads):
    import torch
    import bert_ref
    torch.set_num_threads(threads)
    w, meta = bert_ref.read_safetensors(model_path)
    bert = bert_ref.Bert(w, bert_ref.bert_heads(meta, w))
    h, p = bert(*(torch.from_numpy(a) for a in batch))
    return h.numpy().copy(), None if p is None else p.numpy().copy()


def engine(bert_bin, name, batch, tmp, threads, env=None):
    """(hidden, pooled) of npushm-bert on model NAME, or raises RuntimeError."""
    files = []
    for k, a in zip(("ids", "types", "mask"), batch):
        files.append(os.path.join(tmp, "agree.%s.npy" % k))
        np.save(files[-1], a)
    prefix = os.path.join(tmp, "agree.%s" % name)
    r = subprocess.run([bert_bin, "--ids", files[0], "--types", files[1], "--mask", files[2], "--threads",
                        str(threads), "--out", prefix, name], capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    if r.returncode:
        raise RuntimeError((r.stderr or r.stdout).strip())
    pooled = prefix + ".pooled.npy"
    return np.load(prefix + ".hidden.npy"), np.load(pooled) if os.path.exists(pooled) else None


def ort(cmd, shape, pooled_shape, prefix, env):
    """(hidden, pooled) of ort_worker.js --out PREFIX (cmd), or raises RuntimeError."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **env))
    if r.returncode:
        raise RuntimeError((r.stderr or r.stdout).strip())
    h = np.fromfile(prefix + ".hidden.f32", np.float32).reshape(shape)
    p = None
    if pooled_shape is not None and os.path.exists(prefix + ".pooled.f32"):
        p = np.fromfile(prefix + ".pooled.f32", np.float32).reshape(pooled_shape)
    return h, p


def compare(ref, got):
    """{"err": hidden max error / max |ref|, "cos": smallest pooled cosine (nan without a pooler)}."""
    (h0, p0), (h1, p1) = ref, got
    if h0.shape != h1.shape:
        raise RuntimeError("hidden state shape %s, the reference's is %s" % (h1.shape, h0.shape))
    err = float(np.abs(h1.astype(np.float64) - h0).max() / max(np.abs(h0).max(), 1e-30))
    cos = float("nan")
    if p0 is not None and p1 is not None:
        a, b = p0.astype(np.float64), p1.astype(np.float64)
        cos = float(((a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1),
                                                 1e-30)).min())
    return {"err": err, "cos": cos}


def verdict(precision, m):
    """None when m (compare's figures) is within the tolerance of precision, else why not."""
    if precision == "f32":
        return None if m["err"] <= F32_TOL else "hidden state off by %.2g of its largest magnitude (f32 " \
            "tolerance %g)" % (m["err"], F32_TOL)
    bad = []
    if m["err"] > LOW_ERR:
        bad.append("hidden state off by %.2g (tolerance %g)" % (m["err"], LOW_ERR))
    if m["cos"] == m["cos"] and m["cos"] < LOW_COS:
        bad.append("pooled cosine %.4f (tolerance %g)" % (m["cos"], LOW_COS))
    return "; ".join(bad) or None
