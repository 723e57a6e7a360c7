#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""make_corpus.py - (re)write the committed seed corpus for fuzz_safetensors.

Small valid files of every dtype and shape kind, plus one file for each way a
header can be wrong (the same rules tests/test_safetensors.c checks). Run from
anywhere: python3 libnpushm/fuzz/make_corpus.py. Deterministic output.
"""
import json
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2,
         "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}


def raw(name, header, data=b"", pad=0):
    h = header.encode() if isinstance(header, str) else header
    h += b" " * pad
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def model(name, tensors, meta=None):
    hdr, off, blob = {}, 0, b""
    if meta is not None:
        hdr["__metadata__"] = meta
    for tname, dtype, shape in tensors:
        n = SIZES[dtype]
        for d in shape:
            n *= d
        hdr[tname] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        blob += bytes((i * 37 + off) & 0xFF for i in range(n))
        off += n
    text = json.dumps(hdr, separators=(",", ":"))
    raw(name, text, blob, (8 - len(text) % 8) % 8)


os.makedirs(HERE, exist_ok=True)
model("valid-empty", [])
model("valid-meta", [("w", "F32", [2, 3])], {"format": "pt", "note": "caf\u00e9"})
model("valid-scalar", [("s", "F64", [])])
model("valid-zero", [("e", "F16", [0, 4]), ("x", "U8", [1])])
model("valid-all-dtypes", [("t_" + d, d, [2, 1]) for d in SIZES])
model("valid-rank4", [("conv.weight", "BF16", [2, 3, 2, 2]), ("conv.bias", "BF16", [2])])
model("valid-many", [("layer.%d.w" % i, "I32", [i % 3 + 1]) for i in range(20)])
raw("valid-unordered", '{"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},'
    '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"ab")
raw("bad-short", b"", b"")
raw("bad-len-huge", b"{}", b"")
with open(os.path.join(HERE, "bad-len-huge"), "wb") as f:
    f.write(struct.pack("<Q", 2 ** 63) + b"{}")
raw("bad-not-object", "[]")
raw("bad-trailing", "{}x")
raw("bad-truncated-json", '{"a":{"dtype":"U8"')
raw("bad-dtype", '{"a":{"dtype":"F12","shape":[1],"data_offsets":[0,1]}}', b"x")
raw("bad-shape-neg", '{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}', b"x")
raw("bad-overflow", '{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,1]}}', b"x")
raw("bad-mismatch", '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', b"xxxx")
raw("bad-overlap", '{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
    '"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', b"xxx")
raw("bad-hole", '{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"xx")
raw("bad-past-end", '{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}', b"xx")
raw("bad-dup-key", '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
    '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x")
raw("bad-nul", '{"a\\u0000":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x")
raw("bad-meta", '{"__metadata__":{"n":1}}')
raw("bad-deep", '{"__metadata__":' + "[" * 20 + "]" * 20 + "}")
raw("bad-utf8", b'{"\xff":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"x")
