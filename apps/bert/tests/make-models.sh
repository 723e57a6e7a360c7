#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# make-models.sh - write the small deterministic models the engine's C tests
# and VM tests use (npushm-bert-gen), each only if it is not there yet:
# tiny (2 layers, hidden 64, 4 heads), tiny3 (heads and FFN divide by 3),
# nopool (tiny without a pooler), big (hidden 512: several GEMM blocks).
#
#   make-models.sh NPUSHM-BERT-GEN DIR
gen=${1:?usage: make-models.sh NPUSHM-BERT-GEN DIR}
dir=${2:?usage: make-models.sh NPUSHM-BERT-GEN DIR}
mkdir -p "$dir" || exit 1
model() {
	name=$1
	shift
	[ -f "$dir/$name.safetensors" ] || "$gen" "$@" "$dir/$name.safetensors" || exit 1
}
model tiny --layers 2 --hidden 64 --heads 4 --ffn 256 --vocab 100 --positions 32
model tiny3 --layers 2 --hidden 96 --heads 6 --ffn 384 --vocab 120 --positions 40 --seed 7
model nopool --layers 2 --hidden 64 --heads 4 --ffn 256 --vocab 100 --positions 32 --no-pooler
model big --layers 2 --hidden 512 --heads 8 --ffn 2048 --vocab 100 --positions 32
