# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""onnx_int8.py - the int8 model of ONNX Runtime's row in the BERT benchmark,
built from the exported f32 graph (onnx_export.py) with python3-onnx in the
pattern ONNX Runtime's dynamic quantiser (quantize_dynamic, per_channel,
weight type QInt8, MatMulInteger) emits. Every MatMul whose second input is a
constant 2-D float weight W [K, N] becomes

    x_q, x_scale, x_zp = DynamicQuantizeLinear(x)        # uint8, per tensor
    y_i32 = MatMulInteger(x_q, W_q, x_zp, W_zp)          # W_q int8 [K, N]
    y = Mul(Cast(y_i32, to=FLOAT), Mul(x_scale, W_scale))

with per-column symmetric int8 weights: W_scale[n] = max_k |W[k, n]| / 127,
W_q = round(W / W_scale) clipped to [-127, 127], W_zp = 0 [N]. One
DynamicQuantizeLinear serves every MatMul reading the same activation (Q, K
and V). MatMuls of two activations (attention) stay f32, as do Gemm nodes
(the pooler). Prints the number of MatMuls quantised.

    onnx_int8.py IN.onnx OUT.onnx
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quantize_weight(w):
    """(int8 [K, N], float32 scale [N]) of a float weight [K, N], per column, symmetric."""
    amax = np.abs(w).max(axis=0)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def quantize(model):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    nodes, quantised, dql = [], 0, {}
    drop = set()
    for n in g.node:
        w = inits.get(n.input[1]) if n.op_type == "MatMul" else None
        if w is None or w.data_type != TensorProto.FLOAT or len(w.dims) != 2:
            nodes.append(n)
            continue
        x, y, base = n.input[0], n.output[0], n.output[0].replace("/", "_").strip("_")
        if x not in dql:
            q = [x + "_quantized", x + "_scale", x + "_zero_point"]
            nodes.append(helper.make_node("DynamicQuantizeLinear", [x], q, name=x.strip("/") + "_QuantizeLinear"))
            dql[x] = q
        xq, xs, xz = dql[x]
        wq, ws = quantize_weight(numpy_helper.to_array(w))
        names = (w.name + "_quantized", w.name + "_scale", w.name + "_zero_point")
        g.initializer.extend([numpy_helper.from_array(wq, names[0]), numpy_helper.from_array(ws, names[1]),
                              numpy_helper.from_array(np.zeros(wq.shape[1], np.int8), names[2])])
        drop.add(w.name)
        nodes += [
            helper.make_node("MatMulInteger", [xq, names[0], xz, names[2]], [base + "_output_quantized"],
                             name=base + "_quant"),
            helper.make_node("Cast", [base + "_output_quantized"], [base + "_output_quantized_cast_output"],
                             to=TensorProto.FLOAT, name=base + "_output_quantized_cast"),
            helper.make_node("Mul", [xs, names[1]], [base + "_scales_mul_output"], name=base + "_scales_mul"),
            helper.make_node("Mul", [base + "_output_quantized_cast_output", base + "_scales_mul_output"], [y],
                             name=base + "_output_scale_mul"),
        ]
        quantised += 1
    keep = [t for t in g.initializer if t.name not in drop or any(t.name in m.input for m in nodes)]
    del g.initializer[:]
    g.initializer.extend(keep)
    del g.node[:]
    g.node.extend(nodes)
    return quantised


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    a = ap.parse_args()
    model = onnx.load(a.src)
    n = quantize(model)
    if not n:
        raise SystemExit("onnx_int8: %s has no MatMul with a constant 2-D float weight" % a.src)
    onnx.checker.check_model(model)
    tmp = a.out + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, a.out)
    print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
