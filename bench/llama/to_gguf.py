# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""to_gguf.py - write the benchmark's generated Llama safetensors file as a
GGUF file for llama.cpp, with llama.cpp's own gguf-py (GGUFWriter), at F32.
The F16, Q8_0 and Q4_0 files are made from it by llama.cpp's llama-quantize
(bench.py).

    to_gguf.py GGUF_PY_DIR MODEL.safetensors OUT.gguf

llama.cpp's convert_hf_to_gguf.py cannot run here: it imports Hugging Face
transformers (not packaged by Debian) and reads a tokenizer the generated
model does not have. This writes what it would write for a LlamaForCausalLM
checkpoint: the "llama" architecture's keys from the file's __metadata__
(config.json's names), q_proj and k_proj rows permuted from Hugging Face's
rotate-half order into llama.cpp's interleaved RoPE order (as the converter's
LlamaModel.permute does), llama.cpp's tensor names, and a SentencePiece-style
vocabulary of vocab_size made-up pieces (<unk>, <s>, </s>, the 256 byte
tokens <0x00>..<0xFF>, then "t<N>"): the benchmark feeds token ids, never
text, so the pieces only have to be well formed.
"""
import json
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
    meta = header.pop("__metadata__", {})
    data = np.memmap(path, dtype=np.uint8, mode="r")
    tensors = {}
    for name, t in header.items():
        assert t["dtype"] == "F32", "%s is %s: the benchmark's models are F32" % (name, t["dtype"])
        b, e = t["data_offsets"]
        tensors[name] = data[base + b:base + e].view(np.float32).reshape(t["shape"])
    return tensors, meta


def permute(w, heads):
    """Hugging Face's rotate-half rows -> llama.cpp's interleaved pairs (per head)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2) \
        .reshape(w.shape)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: to_gguf.py GGUF_PY_DIR MODEL.safetensors OUT.gguf")
    sys.path.insert(0, sys.argv[1])
    import gguf

    t, meta = read_safetensors(sys.argv[2])
    vocab, hidden = t["model.embed_tokens.weight"].shape
    layers = int(meta.get("num_hidden_layers"))
    heads = int(meta.get("num_attention_heads"))
    kv_heads = int(meta.get("num_key_value_heads", heads))
    ffn = t["model.layers.0.mlp.gate_proj.weight"].shape[0]
    w = gguf.GGUFWriter(sys.argv[3], "llama")
    w.add_name("npushm-bench-llama")
    w.add_context_length(int(meta.get("max_position_embeddings", 2048)))
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_rope_dimension_count(hidden // heads)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(float(meta.get("rms_norm_eps", 1e-6)))
    w.add_rope_freq_base(float(meta.get("rope_theta", 10000)))
    w.add_vocab_size(vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(256)]
    pieces += ["t%d" % i for i in range(len(pieces), vocab)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + \
        [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * (vocab - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces[:vocab])
    w.add_token_scores([0.0] * vocab)
    w.add_token_types(types[:vocab])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    w.add_tensor("token_embd.weight", np.asarray(t["model.embed_tokens.weight"]))
    for i in range(layers):
        for hf, gg in names.items():
            a = np.asarray(t["model.layers.%d.%s.weight" % (i, hf)])
            if hf == "self_attn.q_proj":
                a = permute(a, heads)
            elif hf == "self_attn.k_proj":
                a = permute(a, kv_heads)
            w.add_tensor("blk.%d.%s.weight" % (i, gg), np.ascontiguousarray(a))
    w.add_tensor("output_norm.weight", np.asarray(t["model.norm.weight"]))
    w.add_tensor("output.weight", np.asarray(t.get("lm_head.weight",
                                                   t["model.embed_tokens.weight"])))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
