#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-kmod-vm.sh - suite bert-kmod: the BERT engine on the kmod backend, the
# way every engine's VM suite runs (selftests/vm/engine-kmod.sh). The
# PyTorch reference runs here (kmod_cases.py prepare), the engine in the test
# VM with npushm.ko loaded (kmod-guest.sh: the same small models at tensor
# parallel 1, 2 and 3, two refusals, the C API tests), and the outputs are
# compared here (kmod_cases.py check). One TAP stream; prints one SKIP when
# the module is not built.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
. "$root/selftests/vm/engine-kmod.sh"
engine_kmod_begin bert "BERT engine"
models=$BUILD/bert-test
"$here/make-models.sh" "$BUILD/tools/npushm-bert-gen" "$models" || exit 1

engine_kmod_prepare "$here/kmod_cases.py" "$models"
# the guest writes its results into $out (= the VM's result share), its
# output to $out/bert.tap (comments below when the run failed)
engine_kmod_vm bert "${BERT_VM_TIMEOUT:-400}" "$here/kmod-guest.sh" "$in" "$models" "$out"
grep -h "packed linear weights\|self-check" "$out/gemm.log" 2>/dev/null | sed 's/^/# guest GEMM: /'

engine_kmod_numerics "$here/kmod_cases.py"

[ "$(cat "$out/refuse-id.rc" 2>/dev/null)" = 1 ] &&
	grep -q "token id 100 (sequence 0, position 1) is outside the vocabulary" "$out/refuse-id.log"
result $? "refusals: kmod backend: a token id outside the vocabulary is refused" "$out/refuse-id.log"
[ "$(cat "$out/refuse-tp.rc" 2>/dev/null)" = 1 ] &&
	grep -q "the 4 attention heads do not divide by 3" "$out/refuse-tp.log"
result $? "refusals: kmod backend: --tp 3 of a 4-head model is refused" "$out/refuse-tp.log"

if [ -f "$out/c.tap" ]; then
	cp "$out/c.tap" "$tmp"
	tap_fold "c (kmod)" "$(cat "$out/c.rc" 2>/dev/null || echo 1)" "" < "$tmp"
else
	echo "# no C test output came back from the VM" > "$tmp"
	tap_fold "c (kmod)" 1 "" < "$tmp"
fi
# The guest runs the GEMM a user gets: oneDNN wherever libdnnl.so.2 opens (the
# guest shares this root filesystem), whatever its self-check took from it.
if ! /sbin/ldconfig -p | grep -q "libdnnl.so.2 "; then
	tap_skip "the guest's GEMM is oneDNN" "libdnnl.so.2 is not installed"
elif grep -q "^packed linear weights .*(onednn " "$out/gemm.log" 2>/dev/null; then
	result 0 "the guest's GEMM is oneDNN"
else
	sed 's/^/# /' "$out/gemm.log" 2>/dev/null
	result 1 "the guest's GEMM is oneDNN"
fi
engine_kmod_end
