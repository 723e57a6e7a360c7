# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""bert_ref.py - a BERT encoder in plain PyTorch (no transformers package): the
reference the npushm engine (apps/bert) is checked against.

It reads the same safetensors file as the engine (Hugging Face tensor names:
embeddings.*, encoder.layer.N.*, pooler.dense.*), takes its sizes from the
tensor shapes and computes, in float32, what Hugging Face's BertModel does in
eval mode: post-LayerNorm layers, GELU with erf, attention masked with the
attention mask (masked keys get the most negative float added, so they get
exactly zero weight), last hidden state and pooled output (tanh of a dense
layer on the first token; None when the file has no pooler).

    python3 bert_ref.py MODEL.safetensors IDS.npy [TYPES.npy] [MASK.npy] --out PREFIX

writes PREFIX.hidden.npy and PREFIX.pooled.npy. As a module:

    w, meta = read_safetensors(path)          # dict of torch tensors (private copies)
    bert = Bert(w, heads=bert_heads(meta, w))
    hidden, pooled = bert(ids, types, mask)  # LongTensor [B,S] x3
"""
import argparse
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
           "I32": np.int32, "U8": np.uint8, "I8": np.int8, "BOOL": np.bool_}


def read_safetensors(path):
    """Tensors of a safetensors file as {name: torch.Tensor} in private memory
    (one read of the file into this process: what frameworks do), plus the
    file's __metadata__ dict."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        size = f.seek(0, 2) - 8 - n
        f.seek(8 + n)
        buf = bytearray(size)
        f.readinto(buf)
    meta = header.pop("__metadata__", None) or {}
    out = {}
    for name, d in header.items():
        dt = np.dtype(_DTYPES[d["dtype"]])
        a, b = d["data_offsets"]
        arr = np.frombuffer(buf, dtype=dt, count=(b - a) // dt.itemsize, offset=a)
        out[name] = torch.from_numpy(arr.reshape(d["shape"]))
    return out, meta


def bert_heads(meta, weights, heads=None):
    """Attention heads: given, else __metadata__ num_attention_heads/heads, else hidden/64."""
    if heads:
        return int(heads)
    for key in ("num_attention_heads", "heads"):
        if key in meta:
            return int(meta[key])
    hidden = weights["embeddings.word_embeddings.weight"].shape[1]
    return max(1, hidden // 64)


class Bert:
    """BERT encoder + pooler over a dict of weights (HF names, without a 'bert.' prefix)."""

    def __init__(self, w, heads, eps=1e-12):
        self.w = w
        self.heads = heads
        self.eps = eps
        self.layers = 0
        while ("encoder.layer.%d.attention.self.query.weight" % self.layers) in w:
            self.layers += 1
        self.hidden = w["embeddings.word_embeddings.weight"].shape[1]

    def _ln(self, x, name):
        return F.layer_norm(x, (self.hidden,), self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def _lin(self, x, name):
        return F.linear(x, self.w[name + ".weight"], self.w[name + ".bias"])

    @torch.inference_mode()
    def __call__(self, ids, types=None, mask=None):
        w, H, nh = self.w, self.hidden, self.heads
        B, S = ids.shape
        hd = H // nh
        if types is None:
            types = torch.zeros_like(ids)
        if mask is None:
            mask = torch.ones_like(ids)
        pos = torch.arange(S)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][types]
        x = x + w["embeddings.position_embeddings.weight"][pos]
        x = self._ln(x, "embeddings.LayerNorm")
        bias = (1.0 - mask.to(torch.float32))[:, None, None, :] * torch.finfo(torch.float32).min
        for i in range(self.layers):
            p = "encoder.layer.%d." % i
            q = self._lin(x, p + "attention.self.query").view(B, S, nh, hd).transpose(1, 2)
            k = self._lin(x, p + "attention.self.key").view(B, S, nh, hd).transpose(1, 2)
            v = self._lin(x, p + "attention.self.value").view(B, S, nh, hd).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + bias
            probs = torch.softmax(scores, dim=-1)
            ctx = torch.matmul(probs, v).transpose(1, 2).reshape(B, S, H)
            x = self._ln(self._lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            inter = F.gelu(self._lin(x, p + "intermediate.dense"))
            x = self._ln(self._lin(inter, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = torch.tanh(self._lin(x[:, 0], "pooler.dense")) if "pooler.dense.weight" in w else None
        return x, pooled


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("ids")
    ap.add_argument("types", nargs="?")
    ap.add_argument("mask", nargs="?")
    ap.add_argument("--heads", type=int)
    ap.add_argument("--eps", type=float, default=1e-12)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    w, meta = read_safetensors(a.model)
    bert = Bert(w, bert_heads(meta, w, a.heads), a.eps)
    ids = torch.from_numpy(np.load(a.ids).astype(np.int64))
    types = torch.from_numpy(np.load(a.types).astype(np.int64)) if a.types else None
    mask = torch.from_numpy(np.load(a.mask).astype(np.int64)) if a.mask else None
    hidden, pooled = bert(ids, types, mask)
    np.save(a.out + ".hidden.npy", hidden.numpy())
    if pooled is not None:
        np.save(a.out + ".pooled.npy", pooled.numpy())
    return 0


if __name__ == "__main__":
    sys.exit(main())
