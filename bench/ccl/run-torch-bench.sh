#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-torch-bench.sh - torch.distributed all_reduce with backend npccl against gloo, 2 processes
# pinned to cores 0 and 1, float32, 8 B to 256 MiB, plus all_gather and broadcast at 1 and
# 16 MiB, and the same all_reduce as a direct npccl call (npushm.ccl) for the torch layer's
# overhead; RUNS runs (default 3), reported as ranges (bench/ccl/torch_summary.py).
#
#   bench/ccl/run-torch-bench.sh [RUNS]        (after make && make ccl-torch)
#
# Output: the tables on stdout, raw JSON in build/bench/ccl-torch/. Check `uptime` first.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/bench/ccl-torch
RUNS=${1:-3}
PY=/usr/bin/python3
mkdir -p "$OUT"
rm -f "$OUT"/run-*.json
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
[ -f "$BUILD/lib/_npccl_torch.so" ] || { echo "build/lib/_npccl_torch.so missing: make ccl-torch" >&2; exit 1; }
echo "# run-torch-bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -r)"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
lscpu | grep -E "Model name|L1d|L2|L3" | sed 's/^/# /'
for i in $(seq 1 "$RUNS"); do
	port=$((30000 + ($$ + i) % 20000))
	for r in 1 0; do
		RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
			taskset -c $r "$PY" "$ROOT/bench/ccl/torch_bench.py" "$OUT/run-$i.json" \
			>"$OUT/run-$i.rank$r.log" 2>&1 &
	done
	wait
	[ -f "$OUT/run-$i.json" ] || { echo "run $i failed:"; cat "$OUT/run-$i.rank0.log"; exit 1; }
	echo "# run $i done, load $(cut -d' ' -f1 /proc/loadavg)"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" "$ROOT/bench/ccl/torch_summary.py" "$OUT"/run-*.json
