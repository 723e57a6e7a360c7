# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# engine-kmod.sh - what the engines' VM suites share (sourced; POSIX sh):
# apps/bert/tests/run-kmod-vm.sh and apps/llama/tests/run-kmod-vm.sh run
# their engine on the kmod backend in the test VM the same way: the PyTorch
# reference natively (too slow to start under the VM's emulated CPU), the
# engine in the VM through a guest script that writes its results into the
# VM's result share, the comparison natively again, one TAP stream.
#
# On the host (the suite's runner; $root set, tools/tap.sh's counters used):
#   engine_kmod_begin NAME WHAT  cd to $root; BUILD and PY; one SKIP line and
#                                exit 0 when kmod/npushm.ko is not built; $in
#                                ($BUILD/vm/NAME-in: what the guest reads) and
#                                $out ($BUILD/vm/NAME: what it writes), emptied;
#                                $tmp, removed at exit
#   engine_kmod_prepare CASES ARGS...  `CASES prepare $in ARGS...` (kmod_cases.py:
#                                the reference's outputs and in/cases.txt); on
#                                failure one failing result with its output, exit 1
#   engine_kmod_vm NAME SECONDS GUEST ARGS...  selftests/vm/vm-suite.sh runs
#                                GUEST ARGS in the VM with the module loaded;
#                                $vmrc its status (the end of its output and
#                                $out/guest-errors as comments)
#   engine_kmod_numerics CASES   `CASES check $in $out`, folded into the stream
#   engine_kmod_end              the VM's status as the last result; tap_end
# In the guest (the GUEST script, which sources this file from its $root):
#   engine_guest_begin GUEST IN MODELS OUT  $in, $models, $out from the
#                                arguments (a usage message naming GUEST when
#                                one is missing); BUILD, $bin ($BUILD/bin);
#                                NPUSHM_BACKEND=kmod exported
#   engine_guest_load PREFIX FILES MODEL...  npushm load FILESMODEL.safetensors
#                                --name PREFIX-MODEL on the kmod backend
#                                ($out/load-MODEL.log; a failure noted in
#                                $out/guest-errors)
#   engine_guest_remove PREFIX MODEL...   npushm rm PREFIX-MODEL (so that the
#                                module can be unloaded)

engine_kmod_begin() {
	cd "$root" || exit 1
	BUILD=${BUILD:-$root/build}
	PY=/usr/bin/python3
	export BUILD
	. "$root/tools/tap.sh"
	if [ ! -f kmod/npushm.ko ]; then
		tap_skip "$2 on kmod" "kmod/npushm.ko is not built (make modules)"
		tap_end
		exit 0
	fi
	in=$BUILD/vm/$1-in
	out=$BUILD/vm/$1
	rm -rf "$in" "$out"
	mkdir -p "$in" "$out"
	tmp=$(mktemp)
	trap 'rm -f "$tmp"' EXIT
}

engine_kmod_prepare() {
	_cases=$1
	shift
	if ! "$PY" "$_cases" prepare "$in" "$@" > "$tmp" 2>&1; then
		result 1 "the PyTorch reference for the kmod cases" "$tmp"
		tap_end
		exit 1
	fi
}

engine_kmod_vm() {
	_name=$1 _secs=$2
	shift 2
	selftests/vm/vm-suite.sh "$_name" -t "$_secs" -- "$@" > "$tmp" 2>&1
	vmrc=$?
	[ "$vmrc" = 0 ] || sed 's/^/# /' "$tmp" | tail -20
	[ ! -f "$out/guest-errors" ] || sed 's/^/# /' "$out/guest-errors"
}

engine_kmod_numerics() {
	"$PY" "$1" check "$in" "$out" > "$tmp" 2>&1
	tap_fold numerics $? "" < "$tmp"
}

engine_kmod_end() {
	[ "$vmrc" = 0 ]
	result $? "the VM ran to the end and the module unloaded cleanly (status $vmrc)"
	tap_end
}

engine_guest_begin() {
	in=${2:?usage: $1 IN MODELS OUT}
	models=${3:?usage: $1 IN MODELS OUT}
	out=${4:?usage: $1 IN MODELS OUT}
	BUILD=${BUILD:-$root/build}
	bin=$BUILD/bin
	export BUILD NPUSHM_BACKEND=kmod
}

engine_guest_load() {
	_prefix=$1 _files=$2
	shift 2
	for _m; do
		"$BUILD/bin/npushm" load "$_files$_m.safetensors" \
			--name "$_prefix-$_m" > "$out/load-$_m.log" 2>&1 ||
			echo "load of $_m failed" >> "$out/guest-errors"
	done
}

engine_guest_remove() {
	_prefix=$1
	shift
	for _m; do
		"$BUILD/bin/npushm" rm "$_prefix-$_m" >> "$out/load-$_m.log" 2>&1
	done
}
