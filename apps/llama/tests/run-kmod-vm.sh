#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-kmod-vm.sh - suite llama-kmod: the Llama engine on the kmod backend, in
# the test VM with npushm.ko loaded. The PyTorch reference runs here
# (kmod_cases.py prepare), the engine in the VM (kmod-guest.sh: f32 at
# tensor parallel 1 and 2, a prefix published by one process and attached by
# others at TP 1 and 2, a model of the same shapes that never attaches it, a
# refusal), and the outputs are compared here (kmod_cases.py check). One TAP
# stream; one SKIP when the module is not built.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$root/build}
PY=/usr/bin/python3
export BUILD
cd "$root" || exit 1
. "$root/tools/tap.sh"
if [ ! -f kmod/npushm.ko ]; then
	tap_skip "Llama engine on kmod" "kmod/npushm.ko is not built (make modules)"
	tap_end
	exit 0
fi
in=$BUILD/vm/llama-in
out=$BUILD/vm/llama
models=$BUILD/llama-test
rm -rf "$in" "$out"
mkdir -p "$in" "$out"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

if ! "$PY" "$here/kmod_cases.py" prepare "$in" "$models" > "$tmp" 2>&1 ||
   ! "$PY" -c 'import numpy as np, sys; np.save(sys.argv[1], np.array([5, 96, 7]))' \
	"$in/bad.prompt.npy" >> "$tmp" 2>&1; then
	result 1 "the PyTorch reference for the kmod cases" "$tmp"
	tap_end
	exit 1
fi
selftests/vm/vm-suite.sh llama -t "${LLAMA_VM_TIMEOUT:-500}" -- "$here/kmod-guest.sh" "$in" \
	"$models" "$out" > "$tmp" 2>&1
vmrc=$?
[ "$vmrc" = 0 ] || sed 's/^/# /' "$tmp" | tail -20
[ -f "$out/guest-errors" ] && sed 's/^/# /' "$out/guest-errors"

"$PY" "$here/kmod_cases.py" check "$in" "$out" > "$tmp" 2>&1
tap_fold numerics $? "" < "$tmp"

grep -q "^npllama-kv\." "$out/ls.txt" 2>/dev/null
result $? "kmod backend: npushm ls lists the published prefix" "$out/ls.txt"
[ "$(cat "$out/refuse-id.rc" 2>/dev/null)" = 1 ] &&
	grep -q "id 96, outside the vocabulary 0..95" "$out/refuse-id.log" && [ ! -f "$out/bad.ids.npy" ]
result $? "kmod backend: a token id outside the vocabulary is refused" "$out/refuse-id.log"
[ "$vmrc" = 0 ]
result $? "the VM ran to the end and the module unloaded cleanly (status $vmrc)"
tap_end
