#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run.sh - make bench-bert: the BERT benchmark (bench.py), the npushm engine
# against ONNX Runtime and PyTorch in one interleaved run. It first sets up
# what only the benchmark needs, never the tests:
#   - Debian packages python3-onnx, python3-torch, nodejs, npm (apt-get, as
#     root) when missing;
#   - onnxruntime-node $ORT_VERSION from npm into a scratch folder outside the
#     checkout ($NPUSHM_BENCH_CACHE/ort, default /var/cache/npushm/bench-bert),
#     once (--ignore-scripts: the package carries libonnxruntime.so);
#   - the FMA-peak loop (fma_peak.c) into $BUILD/bench/fma-peak.
# Then bench.py runs with the environment as it is and, when that sets
# OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE, with both unset too (bench.py does
# both, interleaved). The posix backend uses a private tmpfs directory.
# Options go to bench.py (--runs N, --threads N, --budget S, --quick,
# --env-coretype NAME, --model PATH).
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export BUILD=${BUILD:-$root/build}
cache=${NPUSHM_BENCH_CACHE:-/var/cache/npushm/bench-bert}
ORT_VERSION=${ORT_VERSION:-1.30.0}
unset OPENBLAS_NUM_THREADS OMP_NUM_THREADS NPT_NUM_THREADS

need=
/usr/bin/python3 -c 'import onnx' 2>/dev/null || need="$need python3-onnx"
/usr/bin/python3 -c 'import torch' 2>/dev/null || need="$need python3-torch"
command -v node >/dev/null 2>&1 || need="$need nodejs"
command -v npm >/dev/null 2>&1 || need="$need npm"
if [ -n "$need" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "bench-bert: needs the Debian packages$need: run as root, or apt-get install$need" >&2
		exit 1
	fi
	echo "bench-bert: installing$need (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >/dev/null
fi

ort=$cache/ort
have=$(node -p "try { require('$ort/node_modules/onnxruntime-node/package.json').version } catch (e) { '' }" \
	2>/dev/null || true)
if [ "$have" != "$ORT_VERSION" ]; then
	echo "bench-bert: installing onnxruntime-node $ORT_VERSION from npm into $ort"
	mkdir -p "$ort"
	[ -f "$ort/package.json" ] || echo '{"name": "npushm-bench-ort", "private": true}' >"$ort/package.json"
	if ! (cd "$ort" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
		"onnxruntime-node@$ORT_VERSION" >/dev/null); then
		echo "bench-bert: npm could not install onnxruntime-node; the ONNX Runtime rows will say so" >&2
	fi
fi
export NPUSHM_BENCH_ORT=$ort

mkdir -p "$BUILD/bench"
cc -O2 -Wall -pthread -DNPUSHM_VERSION="\"$(cat "$root/VERSION")\"" -o "$BUILD/bench/fma-peak" \
	"$here/fma_peak.c"
export FMA_PEAK=$BUILD/bench/fma-peak

if [ "${NPUSHM_BACKEND:-posix}" = posix ] && [ -z "${NPUSHM_SHM_DIR:-}" ]; then
	shm=/dev/shm/npushm-bench-bert.$$
	mkdir -m 0700 "$shm" && export NPUSHM_SHM_DIR=$shm
	trap 'rm -rf "$shm"' EXIT
fi
echo "# OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)} in the" \
	"environment; uptime: $(uptime)"
/usr/bin/python3 "$here/bench.py" "$@"
