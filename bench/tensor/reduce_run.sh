#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# reduce_run.sh - reductions, layernorm and softmax of the tensor library in both
# reproducibility modes (independent, the default, and threads) and optionally an
# older build, loaded side by side in one process and called in turn (the host is
# shared: every configuration meets the same load), next to the plain-C read
# ceiling; several rounds (processes), each case's times given as ranges.
#
#   bench/tensor/reduce_run.sh [-o OLD_LIB.so] [-t THREADS] [-r ROUNDS] [-s SECONDS]
#   make bench-tensor-reduce
#
# OLD_LIB.so is another libnptensor.so (for example one built from an older commit).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OLD= T=$(nproc) R=3 S=1
while getopts o:t:r:s: opt; do
	case $opt in
	o) OLD=$OPTARG ;;
	t) T=$OPTARG ;;
	r) R=$OPTARG ;;
	s) S=$OPTARG ;;
	*) echo "usage: $0 [-o OLD_LIB.so] [-t THREADS] [-r ROUNDS] [-s SECONDS]" >&2; exit 2 ;;
	esac
done
[ -f "$BUILD/lib/libnptensor.so" ] || make -C "$ROOT" --no-print-directory "$BUILD/lib/libnptensor.so"
mkdir -p "$BUILD/bench"
cc -O2 -I"$ROOT/tensor/include" -o "$BUILD/bench/reduce_bench" "$ROOT/bench/tensor/reduce_bench.c" \
	-ldl -lpthread
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE NPT_NUM_THREADS NPT_REPRO
export OPENBLAS_NUM_THREADS=$T
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# one private copy per configuration: the loader would share one file's instance
cp "$BUILD/lib/libnptensor.so" "$out/independent.so"
cp "$BUILD/lib/libnptensor.so" "$out/threads.so"
set -- "$out/independent.so=independent" "$out/threads.so=threads"
if [ -n "$OLD" ]; then
	cp "$OLD" "$out/old.so"
	set -- "$out/old.so" "$@"
fi
echo "# $(date -u '+%Y-%m-%d %H:%M UTC')  $(uname -r)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
lscpu | grep -i 'cache' | sed 's/^/# /'
echo "# load before: $(uptime | sed 's/.*load average: //'); $T threads; $R rounds of ${S}s per case"
i=1
while [ "$i" -le "$R" ]; do
	"$BUILD/bench/reduce_bench" "$T" "$S" "$@" >"$out/round.$i"
	i=$((i + 1))
done
echo "# load after: $(uptime | sed 's/.*load average: //')"
/usr/bin/python3 - "$out" "$R" ${OLD:+old} <<'PY'
import sys, collections
d, R, has_old = sys.argv[1], int(sys.argv[2]), "old" in sys.argv[3:]
mins, meds = collections.defaultdict(list), collections.defaultdict(list)
desc, order, cfgs, nbytes = {}, [], [], {}
for i in range(1, R + 1):
    for line in open("%s/round.%d" % (d, i)):
        case, cfg, mn, md, reps, b, text = line.rstrip("\n").split("\t")
        cfg = cfg.split(":")[-1]
        if has_old and cfg == "default":
            cfg = "old"
        if case not in desc:
            order.append(case)
        if cfg not in cfgs and case != "ceiling":
            cfgs.append(cfg)
        desc[case], nbytes[case] = text, float(b)
        mins[case, cfg].append(float(mn))
        meds[case, cfg].append(float(md))
med = lambda v: sorted(v)[len(v) // 2]
print("| case | " + " | ".join("%s: median ms (range), best" % c for c in cfgs) +
      "".join(" | %s / old (median, best)" % c for c in cfgs if c != "old") + " |")
print("|" + "---|" * (1 + len(cfgs) + (len(cfgs) - 1 if has_old else 0)))
for case in order:
    if case == "ceiling":
        m = meds[case, "plain C"]
        print("| %s | %.3f (%.3f-%.3f), best %.3f = %.1f GB/s |" % (
            desc[case], med(m), min(m), max(m), min(mins[case, "plain C"]),
            nbytes[case] / min(mins[case, "plain C"]) / 1e6) + " |" * (len(cfgs) - 1 +
                                                                       (len(cfgs) - 1 if has_old else 0)))
        continue
    row = "| %s | " % desc[case] + " | ".join(
        "%.3f (%.3f-%.3f), %.3f" % (med(meds[case, c]), min(meds[case, c]), max(meds[case, c]),
                                    min(mins[case, c])) for c in cfgs)
    if has_old:
        row += "".join(" | %.2f, %.2f" % (med(meds[case, c]) / med(meds[case, "old"]),
                                          min(mins[case, c]) / min(mins[case, "old"]))
                       for c in cfgs if c != "old")
    print(row + " |")
print("# median: median over rounds of each round's median; range: of those medians; best: "
      "fastest single call; ratios < 1: faster than old")
PY
