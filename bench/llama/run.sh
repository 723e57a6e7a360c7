#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run.sh - the decoder benchmark (make bench-llama): decode tokens/s at batch 1
# with 1 and 2 threads and prompt tokens/s at 128, for f32, bf16, int8 and
# 4-bit weights, beside the machine's read bandwidth measured in the same run.
#
#   bench/llama/run.sh [--layers L] [--dtypes f32,bf16,int8,q4] [--new N]
#
# It also times the decode-step products alone (gemv_bw.c: the seven
# projections of a TinyLlama layer, copied past twice the L3, against a read
# of the same bytes in the same process).
#
# Default: the TinyLlama shape (22 layers, hidden 2048, FFN 5632, 32 heads,
# 4 KV heads, vocab 32000: 4.4 GB of f32 weights, generated once into
# $BUILD/llama-bench; each dtype is loaded, run and removed in turn, the f32
# packed model needs twice the weights in shared memory). OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE are unset for the run.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$root/build}
export BUILD
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
mkdir -p "$BUILD/llama-bench" || exit 1
cc -O3 -march=native -pthread -o "$BUILD/llama-bench/read_bw" "$here/read_bw.c" || exit 1
cc -O3 -march=native -pthread -I"$root/tensor/include" -o "$BUILD/llama-bench/gemv_bw" "$here/gemv_bw.c" \
	-L"$BUILD/lib" -lnptensor -Wl,-rpath,"$BUILD/lib" -lm || exit 1
exec /usr/bin/python3 "$here/bench.py" "$@"
