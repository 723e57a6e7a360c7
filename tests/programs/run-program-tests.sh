#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-program-tests.sh - suite "programs" (TAP): every program the build
# makes (build/bin, build/tests, build/bench, build/tools) answers --help (exit 0, usage on
# stdout) and --version (exit 0, its name and the version); then every
# example command of the manual pages (docs/man/*.1, EXAMPLES), every
# command quoted in a --help text and every command naming a file quoted in
# a public header's comments is run on a scratch model, so that a wrong
# example fails the test command. The installed programs are checked the same
# way under their installed names by suite "install".
#
#   run-program-tests.sh
#
# Examples run in a scratch directory with the installed programs and
# npushm-bert-gen on PATH, the posix backend in a private
# directory, a small generated BERT model as bert.safetensors (and under
# /models/, which the pages use), ids.npy and mask.npy for it, a small Llama model as
# llama.safetensors with prompt.npy for npushm-llama's examples. A launcher in
# front of a command (torchrun ..., mpirun -np N) is dropped: the command runs
# as the only rank of a one-rank job. npccl-perf gets -t 0.01 (10 ms per size).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$root/build}
VERSION=$(cat "$root/VERSION")
PY=/usr/bin/python3
. "$root/tools/tap.sh"
S=$(mktemp -d /tmp/npushm-programs.XXXXXX)
trap 'rm -rf "$S"' EXIT
log=$S/log
mkdir -p "$log"

# ------------------------------------------------- --help and --version
progs=$(find "$BUILD/bin" "$BUILD/tests" "$BUILD/bench" "$BUILD/tools" -maxdepth 1 -type f -perm -u+x \
	2>/dev/null | LC_ALL=C sort)
[ -n "$progs" ]
result $? "the build made programs to check (run make first)"
for p in $progs; do
	name=${p##*/}
	timeout 30 "$p" --help > "$log/help.out" 2> "$log/help.err" < /dev/null
	hrc=$?
	timeout 30 "$p" --version > "$log/version.out" 2> "$log/version.err" < /dev/null
	vrc=$?
	{
		echo "--help: exit status $hrc, stdout:"
		head -5 "$log/help.out"
		echo "stderr:"
		head -5 "$log/help.err"
		echo "--version: exit status $vrc, stdout:"
		head -3 "$log/version.out"
	} > "$log/$name.txt"
	[ "$hrc" = 0 ] && head -n 1 "$log/help.out" | grep -q "^usage: " && [ "$vrc" = 0 ] &&
		grep -q "$VERSION" "$log/version.out" && grep -qF "$name" "$log/version.out"
	result $? "$name answers --help (usage on stdout) and --version ($VERSION), both with exit status 0" \
		"$log/$name.txt"
done

# ------------------------------------------------------------ examples
# the scratch world: installed names, a model, its inputs
mkdir -p "$S/bin" "$S/models" "$S/shm" "$S/run"
for p in "$BUILD"/bin/* "$BUILD/tools/npushm-bert-gen"; do
	ln -s "$p" "$S/bin/${p##*/}"
done
"$BUILD/tools/npushm-bert-gen" --layers 2 --hidden 64 --heads 4 --ffn 128 --vocab 100 --positions 32 \
	"$S/models/bert.safetensors" > "$log/gen.log" 2>&1 &&
	"$PY" -c 'import numpy as np, sys
d = sys.argv[1]
np.save(d + "/ids.npy", (np.arange(16, dtype=np.int64).reshape(2, 8) * 7) % 100)
np.save(d + "/mask.npy", np.ones((2, 8), dtype=np.int64))' "$S/run" >> "$log/gen.log" 2>&1
result $? "a scratch model (2 layers, hidden 64, 4 heads) and its inputs for the examples" "$log/gen.log"
"$PY" "$root/apps/llama/tools/gen_model.py" --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 128 \
	--vocab 96 --context 64 "$S/models/llama.safetensors" > "$log/gen-llama.log" 2>&1 &&
	"$PY" -c 'import numpy as np, sys
np.save(sys.argv[1] + "/prompt.npy", np.arange(1, 21, dtype=np.int64))' "$S/run" >> "$log/gen-llama.log" 2>&1
result $? "a scratch Llama model (2 layers, hidden 64, 4 heads, 2 KV heads) and a prompt" "$log/gen-llama.log"
port=$((40000 + $$ % 20000))

# reset: a fresh posix backend directory and working directory for each page
reset_world() {
	rm -rf "$S/shm" "$S/run/result"* "$S/run/bert.safetensors" "$S/run/llama.safetensors"
	mkdir -p "$S/shm"
	cp "$S/models/bert.safetensors" "$S/run/bert.safetensors"
	cp "$S/models/llama.safetensors" "$S/run/llama.safetensors"
}

# run_example SOURCE COMMAND: one result; exit status 0 wanted
run_example() {
	_src=$1 _cmd=$2
	# a launcher in front is dropped: the command runs as a one-rank job
	_run=$_cmd
	case "$_cmd" in torchrun*|mpirun*|mpiexec*)
		_run=$(printf '%s\n' "$_cmd" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^(npccl-load|npccl-perf|npushm-bert|npushm)$/) break
			for (; i <= NF; i++) printf "%s%s", $i, (i < NF ? " " : "\n") }') ;;
	esac
	_run=$(printf '%s\n' "$_run" | sed "s#/models/#$S/models/#g")
	# the benchmark's sweep as given, at 10 ms per size instead of 0.5 s
	case "$_run" in npccl-perf*) _run="$_run -t 0.01" ;; esac
	port=$((port + 1))
	(cd "$S/run" && PATH="$S/bin:$PATH" NPUSHM_BACKEND=posix NPUSHM_SHM_DIR="$S/shm" \
		RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
		timeout 300 sh -c "$_run") > "$log/example.log" 2>&1
	_rc=$?
	{ echo "ran: $_run"; echo "exit status $_rc"; tail -20 "$log/example.log"; } > "$log/example.txt"
	result $_rc "$_src example: $_cmd" "$log/example.txt"
}

# the EXAMPLES of a manual page: the lines of its .EX/.EE or .nf/.fi blocks,
# roff escapes undone, "\" continuations joined
man_examples() {
	awk '
		/^\.SH/ { ex = ($0 ~ /^\.SH +"?EXAMPLES?"?$/); next }
		ex && /^\.(EX|nf)/ { on = 1; next }
		ex && /^\.(EE|fi)/ { on = 0; next }
		on && !/^\./ { print }' "$1" |
	sed -e 's/\\-/-/g' -e 's/\\(aq/'"'"'/g' -e 's/\\&//g' -e 's/\\e/\\/g' |
	awk '{ if (sub(/\\$/, "")) { buf = buf $0; next } print buf $0; buf = "" }'
}

for page in "$root"/docs/man/*.1; do
	ex=$(man_examples "$page")
	[ -n "$ex" ] || continue
	reset_world
	printf '%s\n' "$ex" > "$S/examples"
	while IFS= read -r line; do
		line=$(printf '%s\n' "$line" | sed 's/^ *//; s/ \{2,\}/ /g')
		[ -n "$line" ] && run_example "${page##*/}" "$line"
	done < "$S/examples"
done

# commands quoted in --help texts (`npushm load FILE --name NAME`), the
# placeholders filled in; a quoted option alone (`npushm load --dtype`) is a
# mention, not an example: only those with a placeholder or a file name run
for p in "$BUILD"/bin/*; do
	"$p" --help 2>/dev/null | grep -o '`[^`]*`' | tr -d '`' |
		grep -E '^(npushm|npushm-bert|npushm-llama|npccl-load|npccl-perf|npushm-bert-gen)( |$)' |
		grep -E '\b(FILE|NAME|MODEL)\b|[^ ]\.[a-z]' |
		sed "s|^|${p##*/} --help|"
done > "$S/help-examples" 2>/dev/null
for c in load ls info rm hash; do
	"$BUILD/bin/npushm" "$c" --help 2>/dev/null | grep -o '`[^`]*`' | tr -d '`' |
		grep -E '^(npushm|npushm-bert|npccl-load|npccl-perf)( |$)' | sed "s|^|npushm $c --help|"
done >> "$S/help-examples"
while IFS= read -r line; do
	src=${line%%--help*}--help
	cmd=${line#*--help}
	reset_world
	cmd=$(printf '%s\n' "$cmd" | sed -E 's/FILE(\.safetensors)?/bert.safetensors/g; s/\b(NAME|MODEL)\b/bert/g')
	run_example "$src" "$cmd"
done < "$S/help-examples"

# commands quoted in the public headers' comments (their tutorials' `npushm
# load bert.safetensors --name bert`): those naming a file run
for h in "$root"/libnpushm/include/*.h "$root"/tensor/include/*.h "$root"/ccl/include/*.h \
	"$root"/apps/*/include/*.h; do
	grep -o '`[^`]*`' "$h" | tr -d '`' |
		grep -E '^(npushm|npushm-bert|npushm-llama|npccl-load|npccl-perf)( |$)' |
		grep -E '[^ ]\.[a-z]' | sed "s|^|${h##*/}: |"
done > "$S/header-examples"
while IFS= read -r line; do
	reset_world
	run_example "${line%%: *}" "${line#*: }"
done < "$S/header-examples"

tap_end
