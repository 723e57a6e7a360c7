# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""onnx_export.py - the ONNX model ONNX Runtime runs in the BERT benchmark:
the PyTorch reference (apps/bert/reference/bert_ref.py) on the benchmark's
safetensors file, exported with torch.onnx.export, as a user with that model
would do. The weights become the graph's initializers (the same values the
engine reads); inputs input_ids, token_type_ids, attention_mask (int64
[batch, seq]); outputs last_hidden_state [batch, seq, hidden] and, when the
file has a pooler, pooler_output [batch, hidden]. Batch and sequence length
are dynamic axes.

    onnx_export.py MODEL.safetensors OUT.onnx [--opset 14]
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "apps", "bert", "reference"))

import bert_ref  # noqa: E402


class Exported(torch.nn.Module):
    """bert_ref.Bert as a module torch.onnx.export can trace."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert
        # the weights as buffers (the very tensors bert uses), so that the
        # exporter writes them as initializers rather than Constant nodes
        for i, t in enumerate(bert.w.values()):
            self.register_buffer("w%d" % i, t)

    def forward(self, ids, types, mask):
        # bert_ref's __call__ runs under inference_mode, which tracing cannot see
        # through; the undecorated function computes the same thing.
        hidden, pooled = bert_ref.Bert.__call__.__wrapped__(self.bert, ids, types, mask)
        return (hidden, pooled) if pooled is not None else (hidden,)


def export(model_path, out_path, opset=14):
    w, meta = bert_ref.read_safetensors(model_path)
    # private, contiguous float copies: the exporter stores them as initializers
    w = {k: v.clone() for k, v in w.items()}
    bert = bert_ref.Bert(w, bert_ref.bert_heads(meta, w))
    S = min(8, w["embeddings.position_embeddings.weight"].shape[0])
    ids = torch.ones((2, S), dtype=torch.int64)
    types = torch.zeros((2, S), dtype=torch.int64)
    mask = torch.ones((2, S), dtype=torch.int64)
    outs = ["last_hidden_state"] + (["pooler_output"] if "pooler.dense.weight" in w else [])
    axes = {"input_ids": {0: "batch", 1: "seq"}, "token_type_ids": {0: "batch", 1: "seq"},
            "attention_mask": {0: "batch", 1: "seq"}, "last_hidden_state": {0: "batch", 1: "seq"}}
    if len(outs) > 1:
        axes["pooler_output"] = {0: "batch"}
    tmp = out_path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(Exported(bert), (ids, types, mask), tmp, input_names=["input_ids", "token_type_ids",
                          "attention_mask"], output_names=outs, dynamic_axes=axes, opset_version=opset,
                          do_constant_folding=True)
    os.replace(tmp, out_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--opset", type=int, default=14)
    a = ap.parse_args()
    export(a.model, a.out, a.opset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
