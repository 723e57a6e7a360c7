#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-blocks.sh - the building-block tests on both GEMM backends: as the
# library picks (oneDNN where libdnnl2 is installed), then with
# NPT_GEMM=openblas (the portable fallback). One TAP stream of both runs.
set -u
bin=$1
echo "# GEMM backend: as picked at run time"
"$bin"
rc1=$?
echo "# GEMM backend: NPT_GEMM=openblas"
NPT_GEMM=openblas "$bin"
rc2=$?
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ]
