#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run.sh - the tensor benchmark: four cases of issue 4 against NumPy, numexpr,
# PyTorch and a STREAM-style add, same thread count for everyone, one run.
#
#   bench/tensor/run.sh            (or: make bench-tensor)
#   NPT_BENCH_THREADS=1 bench/tensor/run.sh
#
# Unsets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (see DESIGN.md) and pins every
# library to the same thread count through the environment and the APIs.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
T=${NPT_BENCH_THREADS:-$(nproc)}
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export OMP_NUM_THREADS=$T OPENBLAS_NUM_THREADS=$T MKL_NUM_THREADS=$T NUMEXPR_NUM_THREADS=$T \
	NUMEXPR_MAX_THREADS=$T NPT_NUM_THREADS=$T
mkdir -p "$BUILD/bench"
cc -O3 -pthread -o "$BUILD/bench/stream_add" "$ROOT/bench/tensor/stream_add.c"
[ -f "$BUILD/lib/libnptensor.so" ] || make -C "$ROOT" --no-print-directory "$BUILD/lib/libnptensor.so"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC')  $(uname -r)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg); threads: $T; OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset"
PYTHONPATH=$ROOT/python NPUSHM_LIBDIR=$BUILD/lib \
	/usr/bin/python3 "$ROOT/bench/tensor/bench.py" --threads "$T" --stream "$BUILD/bench/stream_add" "$@"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
