# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# bench.mk - the benchmarks of bench/ (not tests: they print tables; method and
# results in bench/README.md). Every one is make bench-<thing>:
#
#   make bench-kmod           npushm regions vs memfd and POSIX shm, in the VM
#   make bench-weights        N workers sharing one model vs private copies and file mmap
#   make bench-tensor         npushm.tensor vs NumPy, numexpr, PyTorch
#   make bench-tensor-reduce  reductions, layernorm, softmax in both reproducibility
#                             modes (OLD=lib.so compares with another build)
#   make bench-gemm           GFLOP/s of the GEMM on BERT's shapes against an FMA loop
#                             (npt-gemm-bench, tensor/tools)
#   make bench-bert           BERT-base: npushm engine vs ONNX Runtime and PyTorch
#   make bench-ccl            npccl vs Open MPI and MPICH, intra-host and over veth (root)
#   make bench-ccl-targets    npccl's private-buffer targets vs the better MPI and memcpy
#   make bench-ccl-det        deterministic reductions vs the default, shm and TCP
#   make bench-ccl-rdma       RDMA transport vs TCP between soft-RoCE hosts, in the VM (root)
#   make bench-ccl-copy       private buffers on one host: single copy through npushm
#                             spaces vs cross-memory attach vs two copies, in the VM (root)
#   make bench-ccl-torch      torch.distributed backend npccl vs gloo
# BENCH_ARGS go to the script of the one named (bench/ccl/run-*.sh, bench/bert/run.sh,
# npt-gemm-bench).
#
# Built here (make builds them too): build/bench/npushm_bench (bench/kmod),
# build/bin/npushm-bench-weights (bench/weights) and build/bin/ccl-perf
# (bench/ccl; installed as npccl-perf).

BENCH_DIR := $(CURDIR)/bench
BENCH_VERSION_FLAG = -DNPUSHM_VERSION='"$(shell cat $(CURDIR)/VERSION)"'

# ------------------------------------------------------------------ kmod
BENCH_KMOD := $(BUILD)/bench/npushm_bench
$(BENCH_KMOD): $(BENCH_DIR)/kmod/npushm_bench.c $(CURDIR)/include/uapi/linux/npushm.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -D_GNU_SOURCE -I$(CURDIR)/include/uapi -o $@ $<

# --------------------------------------------------------------- weights
# memstat.c: npushm-bert's memory figures (apps/bert/cli)
BENCH_WEIGHTS := $(BINDIR)/npushm-bench-weights
BENCH_MEMSTAT_DIR := $(CURDIR)/apps/bert/cli
USER_TARGETS += $(BENCH_WEIGHTS)
$(BENCH_WEIGHTS): $(BENCH_DIR)/weights/weights_bench.c $(BENCH_MEMSTAT_DIR)/memstat.c \
		$(BENCH_MEMSTAT_DIR)/memstat.h $(LIBNPUSHM_SO) $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(LIBNPUSHM_CFLAGS) -I$(BENCH_MEMSTAT_DIR) $(BENCH_VERSION_FLAG) -o $@ $< \
		$(BENCH_MEMSTAT_DIR)/memstat.c -L$(LIBDIR) -lnpushm $(LIBNPUSHM_RPATH) -lm -pthread

# ------------------------------------------------------------------- ccl
# ccl-perf: the benchmark harness with the npccl backend
BENCH_CCL_PERF := $(BINDIR)/ccl-perf
USER_TARGETS += $(BENCH_CCL_PERF)
$(BENCH_CCL_PERF): $(BENCH_DIR)/ccl/perf.c $(BENCH_DIR)/ccl/backend.h $(BENCH_DIR)/ccl/backend_npccl.c \
		$(CCL_LIB) $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -O2 $(BENCH_VERSION_FLAG) -o $@ $(BENCH_DIR)/ccl/perf.c \
		$(BENCH_DIR)/ccl/backend_npccl.c -L$(LIBDIR) -lnpccl -Wl,-rpath,'$$ORIGIN/../lib' -lm

# ---------------------------------------------------------------- targets
BENCH_ARGS ?=

.PHONY: bench-kmod bench-weights bench-tensor bench-tensor-reduce bench-gemm bench-bert bench-ccl \
	bench-ccl-targets bench-ccl-det bench-ccl-rdma bench-ccl-copy bench-ccl-torch
bench-kmod: $(BENCH_KMOD) modules
	@bench/kmod/run.sh $(BENCH_ARGS)

bench-weights: $(BENCH_WEIGHTS)
	@bench/weights/run.sh $(BENCH_ARGS)

bench-tensor: $(TENSOR_LIB)
	$(BENCH_DIR)/tensor/run.sh $(BENCH_ARGS)

bench-tensor-reduce: $(TENSOR_LIB)
	BUILD=$(BUILD) $(BENCH_DIR)/tensor/reduce_run.sh $(if $(OLD),-o $(OLD)) $(BENCH_ARGS)

bench-gemm: $(GEMM_BENCH)
	$(GEMM_BENCH) $(BENCH_ARGS)

bench-bert: $(BERT_LIB) $(BERT_CLI) $(BERT_GEN) $(LIBNPUSHM_CLI)
	@bench/bert/run.sh $(BENCH_ARGS)

bench-ccl: $(CCL_LIB) $(BENCH_CCL_PERF)
	@bench/ccl/run-ccl-perf.sh $(BENCH_ARGS)

bench-ccl-targets: $(CCL_LIB) $(BENCH_CCL_PERF)
	@bench/ccl/run-ccl-targets.sh $(BENCH_ARGS)

bench-ccl-det: $(CCL_LIB) $(BENCH_CCL_PERF)
	@bench/ccl/run-det-bench.sh $(BENCH_ARGS)

bench-ccl-rdma: $(CCL_LIB) $(BENCH_CCL_PERF) modules
	@bench/ccl/run-rdma-bench.sh $(BENCH_ARGS)

bench-ccl-copy: $(CCL_LIB) $(BENCH_CCL_PERF) modules
	@bench/ccl/run-copy-bench.sh $(BENCH_ARGS)

bench-ccl-torch: $(CCL_LIB) $(CCL_TORCH_SO)
	@bench/ccl/run-torch-bench.sh $(BENCH_ARGS)
