#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# kmod-guest.sh - inside the test VM, with npushm.ko loaded (run-kmod-vm.sh):
# the BERT engine on the kmod backend. Loads the test models into module
# regions, runs npushm-bert on every case of IN/cases.txt (outputs, exit
# status and messages into OUT, compared with PyTorch natively afterwards),
# checks two refusals, runs the C API tests (OUT/c.tap), and removes the
# models so that the module can be unloaded.
#
# The engine runs the GEMM a user gets: oneDNN with the kernels it picks for
# the emulated CPU. qemu 7.2's '-cpu max' emulates AVX2 wrongly for oneDNN
# 2.6.3's tanh (by up to 0.49, the pooler's activation), which libnptensor's
# GEMM self-check finds and works around; the cases' pooled outputs show that
# it does, and --info's line in OUT/gemm.log says what the check found. The C
# API tests (they test the kmod backend, not the GEMM) run on OpenBLAS: under
# TCG oneDNN's kernels for their many shapes take minutes (over 180 s for
# weights_read_in_place alone), past the suite's time.
#
#   kmod-guest.sh IN MODELS OUT
root=$(cd "$(dirname "$0")/../../.." && pwd)
. "$root/selftests/vm/engine-kmod.sh"
engine_guest_begin kmod-guest.sh "$@"

engine_guest_load bert "$models/" tiny tiny3
# which GEMM the guest runs, and what its self-check found (a note for the log)
"$bin/npushm-bert" --info bert-tiny > "$out/gemm.log" 2>&1
while read -r name model tp; do
	"$bin/npushm-bert" --ids "$in/$name.ids.npy" --types "$in/$name.types.npy" \
		--mask "$in/$name.mask.npy" --tp "$tp" --out "$out/$name" "bert-$model" \
		> "$out/$name.log" 2>&1
	echo $? > "$out/$name.rc"
done < "$in/cases.txt"

# refusals: a token id outside the vocabulary, a split that does not divide
printf '5 100 7\n' > "$out/bad.txt"
"$bin/npushm-bert" --text "$out/bad.txt" bert-tiny > "$out/refuse-id.log" 2>&1
echo $? > "$out/refuse-id.rc"
printf '5 6 7\n' > "$out/ok.txt"
"$bin/npushm-bert" --text "$out/ok.txt" --tp 3 bert-tiny > "$out/refuse-tp.log" 2>&1
echo $? > "$out/refuse-tp.rc"

NPT_GEMM=openblas BERT_TEST_DIR=$models "$BUILD/tests/bert-test" > "$out/c.tap" 2>&1
echo $? > "$out/c.rc"

engine_guest_remove bert tiny tiny3
exit 0
