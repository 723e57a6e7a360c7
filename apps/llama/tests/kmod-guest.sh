#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# kmod-guest.sh - inside the test VM, with npushm.ko loaded (run-kmod-vm.sh):
# the Llama engine on the kmod backend. Loads the two small models into
# module regions, runs npushm-llama on every case of IN/cases.txt in order,
# each its own process (tokens, logits, exit status and output into OUT,
# compared with PyTorch natively afterwards); notes what `npushm ls` lists
# after the publish (OUT/ls.txt), checks the refusal of an id outside the
# vocabulary, and removes the models and the prefixes so that the module
# can be unloaded.
#
#   kmod-guest.sh IN MODELS OUT
root=$(cd "$(dirname "$0")/../../.." && pwd)
. "$root/selftests/vm/engine-kmod.sh"
engine_guest_begin kmod-guest.sh "$@"

engine_guest_load llama "$models/kmod-" tiny other
while read -r name model prompt steps flags; do
	# shellcheck disable=SC2086
	"$bin/npushm-llama" "llama-$model" --ids "$in/$prompt.prompt.npy" --max-new "$steps" \
		--out "$out/$name.ids.npy" --logits "$out/$name.logits.npy" $flags \
		> "$out/$name.log" 2>&1
	echo $? > "$out/$name.rc"
	[ "$name" = publish ] && "$bin/npushm" ls > "$out/ls.txt" 2>&1
done < "$in/cases.txt"

"$bin/npushm-llama" llama-tiny --ids "$in/bad.prompt.npy" --max-new 2 --out "$out/bad.ids.npy" \
	> "$out/refuse-id.log" 2>&1
echo $? > "$out/refuse-id.rc"

"$bin/npushm" ls 2>/dev/null | awk 'NR > 1 && $1 ~ /^npllama-kv\./ { print $1 }' |
	while read -r p; do "$bin/npushm" rm "$p"; done
engine_guest_remove llama tiny other
exit 0
