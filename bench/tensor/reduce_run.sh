#!/bin/sh
# reduce_run.sh - reductions, layernorm and softmax of the tensor library in both
# reproducibility modes (NPT_REPRO=independent, the default, and =threads), and
# optionally an older build of the library, interleaved round by round in one run
# next to the plain-C read ceiling; prints the range over the rounds of each
# case's median time.
#
#   bench/tensor/reduce_run.sh [-o OLD_LIBDIR] [-t THREADS] [-r ROUNDS] [-s SECONDS]
#   make tensor-reduce-bench
#
# OLD_LIBDIR holds another libnptensor.so (for example one built from an older
# commit) to compare against in the same run.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OLD= T=$(nproc) R=3 S=0.4
while getopts o:t:r:s: opt; do
	case $opt in
	o) OLD=$OPTARG ;;
	t) T=$OPTARG ;;
	r) R=$OPTARG ;;
	s) S=$OPTARG ;;
	*) echo "usage: $0 [-o OLD_LIBDIR] [-t THREADS] [-r ROUNDS] [-s SECONDS]" >&2; exit 2 ;;
	esac
done
[ -f "$BUILD/lib/libnptensor.so" ] || make -C "$ROOT" --no-print-directory "$BUILD/lib/libnptensor.so"
mkdir -p "$BUILD/bench"
cc -O2 -I"$ROOT/tensor/include" -o "$BUILD/bench/reduce_bench" "$ROOT/bench/tensor/reduce_bench.c" \
	-L"$BUILD/lib" -lnptensor -lpthread
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE NPT_NUM_THREADS
export OPENBLAS_NUM_THREADS=$T
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC')  $(uname -r)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
lscpu | grep -i 'cache' | sed 's/^/# /'
echo "# load before: $(uptime | sed 's/.*load average: //'); threads $T; $R rounds, ${S}s per case"
i=1
while [ "$i" -le "$R" ]; do
	if [ -n "$OLD" ]; then
		LD_LIBRARY_PATH=$OLD "$BUILD/bench/reduce_bench" "$T" "$S" >"$out/old.$i"
	fi
	LD_LIBRARY_PATH=$BUILD/lib NPT_REPRO=independent "$BUILD/bench/reduce_bench" "$T" "$S" >"$out/independent.$i"
	LD_LIBRARY_PATH=$BUILD/lib NPT_REPRO=threads "$BUILD/bench/reduce_bench" "$T" "$S" >"$out/threads.$i"
	i=$((i + 1))
done
echo "# load after: $(uptime | sed 's/.*load average: //')"
/usr/bin/python3 - "$out" "$R" ${OLD:+old} <<'PY'
import sys, collections
d, R = sys.argv[1], int(sys.argv[2])
cfgs = (["old"] if "old" in sys.argv[3:] else []) + ["independent", "threads"]
ms = collections.defaultdict(list)
desc, order = {}, []
for c in cfgs:
    for i in range(1, R + 1):
        for line in open("%s/%s.%d" % (d, c, i)):
            k, t, g, s = line.rstrip("\n").split("\t")
            if k not in desc:
                order.append(k)
            desc[k] = s
            ms[k, c].append(float(t))
def rng(v):
    return "%.3f-%.3f" % (min(v), max(v))
hdr = "| case | " + " | ".join("%s ms" % c for c in cfgs)
if "old" in cfgs:
    hdr += " | independent/old | threads/old"
print(hdr + " |")
print("|" + "---|" * (1 + len(cfgs) + (2 if "old" in cfgs else 0)))
for k in order:
    row = "| %s | " % desc[k] + " | ".join(rng(ms[k, c]) for c in cfgs)
    if "old" in cfgs:
        mid = lambda c: sorted(ms[k, c])[len(ms[k, c]) // 2]
        row += " | %.2f | %.2f" % (mid("independent") / mid("old"), mid("threads") / mid("old"))
    print(row + " |")
print("# ms: range over %d rounds of the per-round median; ratios: median of rounds "
      "(< 1: faster than old)" % R)
PY
