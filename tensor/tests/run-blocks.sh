#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-blocks.sh - the building-block tests on each path the library can take:
# as it picks (oneDNN where libdnnl2 is installed, the CPU's best vector
# kernels), with its hand-written kernels held to AVX2 (NPT_KERNEL_ISA=avx2:
# an AVX2-only machine's kernels), without them (NPT_KERNEL_ISA=c: packed
# products and attention on oneDNN's GEMMs), then the portable fallback
# (NPT_GEMM=openblas as well). One TAP stream of the runs (tools/tap.sh),
# each result prefixed with its path.
#
#   run-blocks.sh TEST-PROGRAM
set -u
bin=${1:?usage: run-blocks.sh TEST-PROGRAM}
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tools/tap.sh"
part picked "$bin"
part avx2 env NPT_KERNEL_ISA=avx2 "$bin"
part onednn env NPT_KERNEL_ISA=c "$bin"
part portable env NPT_GEMM=openblas NPT_KERNEL_ISA=c "$bin"
tap_end
