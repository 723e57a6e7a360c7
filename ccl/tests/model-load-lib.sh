# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# model-load-lib.sh - the cluster model load tests (npccl_model_load through
# npccl-load and the Python binding), sourced by model-load-test.sh (ranks as
# TCP "hosts" on this machine, each with its own POSIX shared-memory
# directory) and by rdma/rdma-guest.sh (soft-RoCE hosts in the test VM, each
# with its own npushm module instance).
#
# The caller sets BIN, ML_OUT (scratch directory), ML_ADDR (the address
# rank 0 listens on), ML_PORT (first port to use), sources tools/tap.sh
# (the results are its `result` lines), defines
#   ml_exec H CMD...       run CMD as a process of host H (npushm directory
#                          of host H in the environment)
# and calls ml_tests "H H H" (the hosts of a 3-rank layout, one rank each).
# ML_QUICK=1 (the VM, where every process start is slow) runs only the
# cases that depend on the transport: the load, a rank killed
# mid-broadcast, a copy damaged on arrival; the others (name taken,
# mismatched names, the Python API) are the same logic on any transport.

ML_NPUSHM=${ML_NPUSHM:-$BUILD/bin/npushm}

# ml_make_file PATH KIB: a safetensors file of one U8 tensor (KIB KiB)
ml_make_file() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import json, struct, sys
n = int(sys.argv[2]) * 1024
data = bytes((i * 7 + i // 4096) & 0xff for i in range(n))
hdr = json.dumps({"w": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]},
                  "__metadata__": {"test": "cluster-load"}}).encode()
hdr += b" " * (-len(hdr) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(hdr)) + hdr + data)
PY
}

# ml_launch NAME "H H ..." CMD...: rank r on host H_r; output NAME.r, status NAME.r.rc
ml_launch() {
	_mn=$1 _ml=$2
	shift 2
	ML_PORT=$((ML_PORT + 1))
	_mw=$(echo $_ml | wc -w)
	_mr=0 _mp=""
	for _mh in $_ml; do
		( RANK=$_mr WORLD_SIZE=$_mw MASTER_ADDR=$ML_ADDR MASTER_PORT=$ML_PORT \
			ml_exec "$_mh" timeout -k 5 180 "$@" >"$ML_OUT/$_mn.$_mr" 2>&1
		  echo $? >"$ML_OUT/$_mn.$_mr.rc" ) &
		_mp="$_mp $!"
		_mr=$((_mr + 1))
	done
	for _p in $_mp; do wait "$_p"; done
}

# ml_names H: every name on host H (model names, aliases, staging names)
ml_names() { ml_exec "$1" "$ML_NPUSHM" ls --all 2>/dev/null; }
# ml_hash_on H NAME: the content hash of model NAME on host H ("" if none)
ml_hash_on() {
	ml_exec "$1" "$ML_NPUSHM" --json info "$2" 2>/dev/null | sed -n 's/.*"hash":"\([0-9a-f]*\)".*/\1/p'
}

# ml_published NAME HASH "H ...": NAME with HASH on every host, no staging name left
ml_published() {
	_bad=""
	for _mh in $3; do
		[ "$(ml_hash_on "$_mh" "$1")" = "$2" ] || _bad="$_bad host $_mh: no '$1' with hash $2;"
		ml_names "$_mh" | grep -q npccl-staging && _bad="$_bad host $_mh: a staging name is left;"
	done
	echo "$_bad"
}
# ml_nothing NAME "H ...": neither NAME nor any staging name on any host
ml_nothing() {
	_bad=""
	for _mh in $2; do
		ml_names "$_mh" | grep -q -e "$1" -e npccl-staging && _bad="$_bad host $_mh: $(ml_names "$_mh" | tr '\n' ' ');"
	done
	echo "$_bad"
}
ml_rm_all() {	# NAME "H ...": clean up after a case
	for _mh in $2; do ml_exec "$_mh" "$ML_NPUSHM" rm "$1" >/dev/null 2>&1; done
}
ml_rcs() { cat "$ML_OUT/$1".*.rc | tr '\n' ' '; }

ml_tests() {
	_hosts=$1
	_file=$ML_OUT/model.safetensors
	ml_make_file "$_file" 5000	# two chunks of at most 4 MiB
	_want=$("$ML_NPUSHM" hash "$_file" | cut -d' ' -f1)

	# 1. the CLI on every rank: the model on every host, same hash
	ml_launch load "$_hosts" "$BIN/npccl-load" --json cl-model "$_file"
	_bad=$(ml_published cl-model "$_want" "$_hosts")
	if [ "$(ml_rcs load)" = "0 0 0 " ] && [ -z "$_bad" ] && grep -q '"published":3' "$ML_OUT/load.0"; then
		result 0 "cluster load (npccl-load on 3 hosts): 'cl-model' published on every host with the root's content hash $_want, verified on arrival; no staging name left"
	else
		result 1 "cluster load on 3 hosts (exit $(ml_rcs load);$_bad)"
		cat "$ML_OUT"/load.[0-9] | sed 's/^/# /' | cut -c1-400 | tail -8
	fi

	# 2. the name is taken on the last host: refused everywhere, nothing published
	[ "${ML_QUICK:-0}" = 1 ] || ml_case_taken "$_hosts" "$_file"
	ml_case_killed "$_hosts" "$_file"
	ml_case_corrupt "$_hosts" "$_file"
	[ "${ML_QUICK:-0}" = 1 ] || ml_case_mismatch "$_hosts" "$_file"
	[ "${ML_QUICK:-0}" = 1 ] || ml_case_python "$_hosts" "$_file" "$_want"
	[ "${ML_QUICK:-0}" = 1 ] || ml_case_stale "$_hosts" "$_file"
	ml_rm_all cl-model "$_hosts"
}

ml_case_stale() {
	_hosts=$1 _file=$2
	# 7. a staging copy left by a loader that died before its publish (its pid
	#    is gone) is removed by the next cluster load on that host
	sh -c 'exit 0' &
	_dead=$!
	wait "$_dead"
	_h1=$(echo $_hosts | cut -d' ' -f1)
	ml_exec "$_h1" "$ML_NPUSHM" load "$_file" --name "npccl-staging.$_dead.left" --quiet >/dev/null 2>&1
	_before=$(ml_names "$_h1" | grep -c "npccl-staging.$_dead")
	ml_launch stale "$_hosts" "$BIN/npccl-load" cl-stale "$_file"
	_after=$(ml_names "$_h1" | grep -c "npccl-staging")
	if [ "$_before" = 1 ] && [ "$_after" = 0 ] && [ "$(ml_rcs stale)" = "0 0 0 " ]; then
		result 0 "a staging copy left by a dead loader (pid $_dead) is removed by the next cluster load on its host"
	else
		result 1 "stale staging copy (before $_before, after $_after, exit $(ml_rcs stale))"
		ml_exec "$_h1" "$ML_NPUSHM" rm "npccl-staging.$_dead.left" >/dev/null 2>&1
	fi
	ml_rm_all cl-stale "$_hosts"
}

ml_case_taken() {
	_hosts=$1 _file=$2
	ml_launch again "$_hosts" "$BIN/npccl-load" cl-model2 "$_file"	# dedup: a new name on the same bytes
	ml_rm_all cl-model2 "$(echo $_hosts | cut -d' ' -f1-2)"
	ml_launch taken "$_hosts" "$BIN/npccl-load" cl-model2 "$_file"
	_bad=$(ml_nothing cl-model2 "$(echo $_hosts | cut -d' ' -f1-2)")
	if [ "$(ml_rcs taken)" = "1 1 1 " ] && [ -z "$_bad" ] &&
	   [ "$(grep -l "already published" "$ML_OUT"/taken.[0-9] | wc -l)" = 3 ]; then
		result 0 "cluster load refused on every rank when the name is taken on one host (the error names that host and rank); nothing published elsewhere"
	else
		result 1 "name taken on one host (exit $(ml_rcs taken);$_bad)"
		cat "$ML_OUT"/taken.[0-9] | sed 's/^/# /' | cut -c1-400 | tail -6
	fi
	ml_rm_all cl-model2 "$_hosts"
}

ml_case_killed() {
	_hosts=$1 _file=$2
	# 3. a rank killed mid-broadcast (before the second chunk): the others fail
	#    naming it, no host has the model or a staging copy
	ml_launch killed "$_hosts" env NPCCL_FAULT_INJECT=loadkill:1:1 NPCCL_TIMEOUT_MS=10000 \
		"$BIN/npccl-load" cl-model3 "$_file"
	_bad=$(ml_nothing cl-model3 "$_hosts")
	_named=$(grep -l "rank 1.*nothing is published\|nothing is published.*rank 1" "$ML_OUT"/killed.[02] | wc -l)
	if [ "$(cat "$ML_OUT/killed.1.rc")" = 137 ] && [ "$_named" = 2 ] && [ -z "$_bad" ]; then
		result 0 "cluster load with rank 1 killed mid-broadcast: both survivors fail naming rank 1, no host has the model or a staging copy"
	else
		result 1 "rank killed mid-broadcast (exit $(ml_rcs killed), $_named of 2 survivors name rank 1;$_bad)"
		cat "$ML_OUT"/killed.[0-9] | sed 's/^/# /' | cut -c1-400 | tail -6
	fi

}

ml_case_corrupt() {
	_hosts=$1 _file=$2
	# 4. one host's copy damaged on arrival: its content hash differs from the
	#    root's, the load fails on every rank naming that host, nothing published
	ml_launch corrupt "$_hosts" env NPCCL_FAULT_INJECT=loadcorrupt:2:1 \
		"$BIN/npccl-load" cl-model4 "$_file"
	_bad=$(ml_nothing cl-model4 "$_hosts")
	if [ "$(ml_rcs corrupt)" = "1 1 1 " ] && [ -z "$_bad" ] &&
	   [ "$(grep -l "rank 2 .*content hash on arrival" "$ML_OUT"/corrupt.[0-9] | wc -l)" = 3 ]; then
		result 0 "cluster load with rank 2's copy damaged on arrival: its content hash differs from the root's, every rank fails naming rank 2, nothing published on any host"
	else
		result 1 "copy damaged on arrival (exit $(ml_rcs corrupt);$_bad)"
		cat "$ML_OUT"/corrupt.[0-9] | sed 's/^/# /' | cut -c1-400 | tail -6
	fi

}

ml_case_mismatch() {
	_hosts=$1 _file=$2
	# 5. mismatched names: refused everywhere, nothing published
	ml_launch mism "$_hosts" sh -c "exec \"$BIN/npccl-load\" cl-m\$RANK \"$_file\""
	_bad=$(ml_nothing "cl-m[0-9]" "$_hosts")
	if [ "$(ml_rcs mism)" = "1 1 1 " ] && [ -z "$_bad" ] && grep -q "mismatched calls" "$ML_OUT/mism.0"; then
		result 0 "cluster load with different names on the ranks: mismatched calls on every rank, nothing published"
	else
		result 1 "mismatched names (exit $(ml_rcs mism);$_bad)"
		cat "$ML_OUT"/mism.[0-9] | sed 's/^/# /' | cut -c1-300 | tail -6
	fi

}

ml_case_python() {
	_hosts=$1 _file=$2 _want=$3
	# 6. the Python API (two hosts)
	_two=$(echo $_hosts | cut -d' ' -f1-2)
	ml_launch py "$_two" /usr/bin/python3 -c "
import os, sys
sys.path.insert(0, '$root/python')
from npushm import ccl
c = ccl.Communicator.from_env()
r = c.load_model('cl-py', '$_file' if c.rank == 0 else None)
assert r['published'] == 2 and r['hash'] == '$_want', r
try:
    c.load_model('cl-py', '$_file' if c.rank == 0 else None)
    raise SystemExit('a second load of a taken name succeeded')
except ccl.CclError as e:
    assert 'already published' in str(e), e
print('pyload ok', r['report'])
c.destroy()
"
	_bad=$(ml_published cl-py "$_want" "$_two")
	if [ "$(ml_rcs py)" = "0 0 " ] && [ -z "$_bad" ]; then
		result 0 "cluster load from Python (Communicator.load_model): published on both hosts with the root's hash; a second load of the taken name raises CclError"
	else
		result 1 "cluster load from Python (exit $(ml_rcs py);$_bad)"
		cat "$ML_OUT"/py.[0-9] | sed 's/^/# /' | tail -8
	fi
	ml_rm_all cl-py "$_hosts"
}
