# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""safetensors_ref.py - an independent safetensors writer and reader for the
Python tests (plain json + struct, NumPy only for write(); shares no code with
libnpushm)."""
import json
import struct

NP_TO_ST = {"float32": "F32", "float16": "F16", "float64": "F64", "int64": "I64", "int32": "I32",
            "int16": "I16", "int8": "I8", "uint8": "U8", "uint16": "U16", "uint32": "U32",
            "uint64": "U64", "bool": "BOOL"}


def write(path, tensors, metadata=None, raw=None):
    """tensors: {name: ndarray}; raw: {name: (dtype_string, shape, bytes)} for dtypes NumPy lacks."""
    import numpy as np
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    items = [(k, NP_TO_ST[str(v.dtype)], list(v.shape), np.ascontiguousarray(v).tobytes())
             for k, v in tensors.items()]
    items += [(k, d, list(s), b) for k, (d, s, b) in (raw or {}).items()]
    for name, dtype, shape, b in items:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_raw(path, raw, metadata=None):
    """raw: {name: (dtype_string, shape, bytes)}, written in this order."""
    header, off = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, b) in raw.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(b for _, _, b in raw.values()))


def read_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), 8 + n


def read(path):
    """{name: (dtype_string, shape, bytes)} straight from the file."""
    header, start = read_header(path)
    data = open(path, "rb").read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        out[k] = (v["dtype"], tuple(v["shape"]), data[start + b:start + e])
    return out
