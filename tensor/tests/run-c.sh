#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-c.sh - suite tensor-c: the C tests of libnptensor (test_tensor), then
# the layering of its objects (check-layers.sh) and its exports against
# nptensor.h (check-exports.sh). One TAP stream.
#
#   run-c.sh TEST_BINARY OBJDIR LIBRARY
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tools/tap.sh"
part "" "$1"
part layers "$root/tensor/tests/check-layers.sh" "$2"
part exports "$root/tensor/tests/check-exports.sh" "$3"
tap_end
