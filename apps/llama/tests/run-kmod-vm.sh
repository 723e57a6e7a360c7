#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-kmod-vm.sh - suite llama-kmod: the Llama engine on the kmod backend, in
# the test VM with npushm.ko loaded, the way every engine's VM suite runs
# (selftests/vm/engine-kmod.sh). The PyTorch reference runs here
# (kmod_cases.py prepare), the engine in the VM (kmod-guest.sh: f32 at
# tensor parallel 1 and 2, a prefix published by one process and attached by
# others at TP 1 and 2, a model of the same shapes that never attaches it, a
# refusal), and the outputs are compared here (kmod_cases.py check). One TAP
# stream; one SKIP when the module is not built.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
. "$root/selftests/vm/engine-kmod.sh"
engine_kmod_begin llama "Llama engine"
models=$BUILD/llama-test

engine_kmod_prepare "$here/kmod_cases.py" "$models"
engine_kmod_vm llama "${LLAMA_VM_TIMEOUT:-500}" "$here/kmod-guest.sh" "$in" "$models" "$out"
engine_kmod_numerics "$here/kmod_cases.py"

grep -q "^npllama-kv\." "$out/ls.txt" 2>/dev/null
result $? "kmod backend: npushm ls lists the published prefix" "$out/ls.txt"
[ "$(cat "$out/refuse-id.rc" 2>/dev/null)" = 1 ] &&
	grep -q "id 96, outside the vocabulary 0..95" "$out/refuse-id.log" && [ ! -f "$out/bad.ids.npy" ]
result $? "kmod backend: a token id outside the vocabulary is refused" "$out/refuse-id.log"
engine_kmod_end
