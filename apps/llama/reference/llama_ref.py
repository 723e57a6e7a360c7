# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""llama_ref.py - a Llama-style decoder in plain PyTorch (no transformers
package): the reference the npushm engine (apps/llama) is checked against.

It reads the same safetensors file (Hugging Face LlamaForCausalLM names,
config.json keys in __metadata__) and computes in float32 what
transformers' LlamaForCausalLM does in eval mode: RMSNorm, rotate-half RoPE
(theta, linear scaling), grouped-query causal attention, SwiGLU, final norm,
lm_head (or the tied embedding). No KV cache: every step recomputes the
whole sequence, so the engine's cache is checked too.

    python3 llama_ref.py MODEL.safetensors PROMPT.npy --max-new N --out PREFIX

writes PREFIX.ids.npy and PREFIX.logits.npy (greedy). As a module:

    w, meta = read_safetensors(path)
    llm = Llama(w, meta)
    ids, logits = llm.generate(prompt_ids, n)   # greedy; logits [n, vocab]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bert",
                                "reference"))
from bert_ref import read_safetensors  # noqa: E402 (one safetensors reader for the references)


def _num(meta, key, default):
    return float(meta[key]) if key in meta else default


class Llama:
    def __init__(self, w, meta):
        self.w = w
        self.vocab, self.hidden = w["model.embed_tokens.weight"].shape
        self.layers = 0
        while "model.layers.%d.self_attn.q_proj.weight" % self.layers in w:
            self.layers += 1
        self.heads = int(_num(meta, "num_attention_heads", self.hidden // 64))
        self.head_dim = int(_num(meta, "head_dim", self.hidden // self.heads))
        kv_rows = w["model.layers.0.self_attn.k_proj.weight"].shape[0]
        self.kv_heads = int(_num(meta, "num_key_value_heads", kv_rows // self.head_dim))
        self.theta = _num(meta, "rope_theta", 10000.0)
        self.eps = _num(meta, "rms_norm_eps", 1e-6)
        self.scale = 1.0
        rs = meta.get("rope_scaling")
        if rs and rs != "null":
            self.scale = float(json.loads(rs)["factor"])
        elif "rope_scaling_factor" in meta:
            self.scale = float(meta["rope_scaling_factor"])
        self.head = w.get("lm_head.weight", w["model.embed_tokens.weight"])

    def rms(self, x, weight):
        var = x.pow(2).mean(-1, keepdim=True)
        return weight * (x * torch.rsqrt(var + self.eps))

    def rope(self, x, pos):
        d = self.head_dim
        inv = 1.0 / (self.theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
        t = pos.float() / self.scale
        freqs = torch.outer(t, inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None], emb.sin()[None]  # [1, S, d]
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    @torch.no_grad()
    def forward(self, ids):
        """Logits [S, vocab] of a 1-D LongTensor of ids."""
        w, S, d = self.w, ids.shape[0], self.head_dim
        x = w["model.embed_tokens.weight"][ids]
        pos = torch.arange(S)
        mask = torch.full((S, S), float("-inf")).triu(1)
        for i in range(self.layers):
            p = "model.layers.%d." % i
            h = self.rms(x, w[p + "input_layernorm.weight"])
            q = F.linear(h, w[p + "self_attn.q_proj.weight"]).view(S, self.heads, d).transpose(0, 1)
            k = F.linear(h, w[p + "self_attn.k_proj.weight"]).view(S, self.kv_heads, d).transpose(0, 1)
            v = F.linear(h, w[p + "self_attn.v_proj.weight"]).view(S, self.kv_heads, d).transpose(0, 1)
            q, k = self.rope(q, pos), self.rope(k, pos)
            g = self.heads // self.kv_heads
            k, v = k.repeat_interleave(g, dim=0), v.repeat_interleave(g, dim=0)
            att = torch.softmax(q @ k.transpose(1, 2) / (d ** 0.5) + mask, dim=-1) @ v
            x = x + F.linear(att.transpose(0, 1).reshape(S, self.heads * d),
                             w[p + "self_attn.o_proj.weight"])
            h = self.rms(x, w[p + "post_attention_layernorm.weight"])
            x = x + F.linear(F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) *
                             F.linear(h, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])
        return F.linear(self.rms(x, w["model.norm.weight"]), self.head)

    def generate(self, prompt, n):
        """Greedy: (ids [n] int64, logits [n, vocab] float32) as numpy arrays."""
        seq = torch.as_tensor(np.asarray(prompt, dtype=np.int64))
        ids, logits = [], []
        for _ in range(n):
            row = self.forward(seq)[-1]
            nxt = int(torch.argmax(row))
            ids.append(nxt)
            logits.append(row.numpy())
            seq = torch.cat((seq, torch.tensor([nxt])))
        return np.array(ids, dtype=np.int64), np.stack(logits)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("prompt")
    ap.add_argument("--max-new", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    w, meta = read_safetensors(a.model)
    ids, logits = Llama(w, meta).generate(np.load(a.prompt).reshape(-1), a.max_new)
    np.save(a.out + ".ids.npy", ids)
    np.save(a.out + ".logits.npy", logits)


if __name__ == "__main__":
    main()
