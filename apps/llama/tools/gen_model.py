#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""gen_model.py - write a small deterministic Llama-style model as a
safetensors file with Hugging Face's LlamaForCausalLM names and a
__metadata__ of config.json's keys (as strings), for the tests and the
benchmark. The values come from NumPy's PCG64 generator seeded by --seed:
the same arguments give the same bytes.

    gen_model.py [--layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 128
                  --vocab 96 --context 64 --theta 10000 --scaling F --eps 1e-6
                  --tied --seed 1] OUT.safetensors

Hostile files for the refusal tests: --meta KEY=VALUE sets (or adds) a
metadata key, --no-meta KEY drops one, --omit NAME leaves a tensor out,
--f16 NAME stores one tensor as F16.
"""
import argparse
import json
import struct

import numpy as np


def tensors(a):
    rng = np.random.default_rng(a.seed)
    H, F, d = a.hidden, a.ffn, a.hidden // a.heads

    def lin(out, inp):
        w = rng.standard_normal((out, inp), dtype=np.float32)
        w *= np.float32(1 / np.sqrt(inp))
        return w

    def norm():
        return (1 + np.float32(0.1) * rng.standard_normal(H, dtype=np.float32))

    t = {"model.embed_tokens.weight": rng.standard_normal((a.vocab, H), dtype=np.float32)}
    for i in range(a.layers):
        p = "model.layers.%d." % i
        t[p + "input_layernorm.weight"] = norm()
        t[p + "self_attn.q_proj.weight"] = lin(a.heads * d, H)
        t[p + "self_attn.k_proj.weight"] = lin(a.kv_heads * d, H)
        t[p + "self_attn.v_proj.weight"] = lin(a.kv_heads * d, H)
        t[p + "self_attn.o_proj.weight"] = lin(H, a.heads * d)
        t[p + "post_attention_layernorm.weight"] = norm()
        t[p + "mlp.gate_proj.weight"] = lin(F, H)
        t[p + "mlp.up_proj.weight"] = lin(F, H)
        t[p + "mlp.down_proj.weight"] = lin(H, F)
    t["model.norm.weight"] = norm()
    if not a.tied:
        t["lm_head.weight"] = lin(a.vocab, H)
    return t


def metadata(a):
    m = {"architectures": "LlamaForCausalLM", "hidden_size": a.hidden,
         "intermediate_size": a.ffn, "num_hidden_layers": a.layers,
         "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads,
         "vocab_size": a.vocab, "max_position_embeddings": a.context,
         "rope_theta": a.theta, "rms_norm_eps": a.eps,
         "tie_word_embeddings": "true" if a.tied else "false"}
    if a.scaling:
        m["rope_scaling"] = json.dumps({"type": "linear", "factor": a.scaling})
    m = {k: str(v) for k, v in m.items()}
    for kv in a.meta:
        k, _, v = kv.partition("=")
        m[k] = v
    for k in a.no_meta:
        m.pop(k, None)
    return m


def write(path, t, meta, f16=()):
    header, blobs, off = {"__metadata__": meta}, [], 0
    for name in sorted(t):
        arr = t[name].astype(np.float16) if name in f16 else t[name]
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": "F16" if name in f16 else "F32", "shape": list(arr.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--ffn", type=int, default=128)
    p.add_argument("--vocab", type=int, default=96)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--theta", type=float, default=10000.0)
    p.add_argument("--scaling", type=float, default=0.0)
    p.add_argument("--eps", type=float, default=1e-6)
    p.add_argument("--tied", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--meta", action="append", default=[])
    p.add_argument("--no-meta", action="append", default=[])
    p.add_argument("--omit", action="append", default=[])
    p.add_argument("--f16", action="append", default=[])
    a = p.parse_args()
    t = tensors(a)
    for name in a.omit:
        t.pop(name)
    write(a.out, t, metadata(a), set(a.f16))


if __name__ == "__main__":
    main()
