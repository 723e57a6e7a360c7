#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-blocks.sh - the building-block tests on both GEMM backends: as the
# library picks (oneDNN where libdnnl2 is installed), then with
# NPT_GEMM=openblas (the portable fallback). One TAP stream of both runs
# (tools/tap.sh), each result prefixed with its backend.
#
#   run-blocks.sh TEST-PROGRAM
set -u
bin=${1:?usage: run-blocks.sh TEST-PROGRAM}
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tools/tap.sh"
part picked "$bin"
part openblas env NPT_GEMM=openblas "$bin"
tap_end
