#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run.sh - make bench-bert: the BERT-base benchmark (bench.py), npushm engine
# vs PyTorch 1.13 eager in one interleaved run. OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE are unset so that OpenBLAS picks its kernels from the CPU
# (both sides use the same OpenBLAS); the posix backend uses a private tmpfs
# directory. Options go to bench.py (--runs N, --threads N, --quick).
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export BUILD=${BUILD:-$root/build}
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS OMP_NUM_THREADS NPT_NUM_THREADS
if [ "${NPUSHM_BACKEND:-posix}" = posix ] && [ -z "${NPUSHM_SHM_DIR:-}" ]; then
	shm=/dev/shm/npushm-bench-bert.$$
	mkdir -m 0700 "$shm" && export NPUSHM_SHM_DIR=$shm
	trap 'rm -rf "$shm"' EXIT
fi
echo "# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for this run; uptime: $(uptime)"
/usr/bin/python3 "$here/bench.py" "$@"
