# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# bench.mk - the benchmarks of bench/ (not tests: they print tables; method and
# results in bench/README.md). Every one is make bench-<thing>:
#
#   make bench-kmod           npushm regions vs memfd and POSIX shm, in the VM
#   make bench-kmod-providers a region on the node:1 and PCI BAR providers vs sysmem, in the VM
#   make bench-weights        N workers sharing one model vs private copies and file mmap
#   make bench-tensor         npushm.tensor vs NumPy, numexpr, PyTorch
#   make bench-tensor-reduce  reductions, layernorm, softmax in both reproducibility
#                             modes (OLD=lib.so compares with another build)
#   make bench-gemm           GFLOP/s of the GEMM on BERT's shapes against an FMA loop
#                             (npushm-bench-gemm, bench/gemm)
#   make bench-bert           BERT-base: npushm engine vs ONNX Runtime and PyTorch
#   make bench-llama          the Llama decoder: decode and prompt speed per dtype against
#                             the read bandwidth and llama.cpp, 4 workers, shared-prefix
#                             TTFT (bench/llama; BENCH_ARGS="--layers 4" for a smaller model)
#   make bench-ccl            npccl vs Open MPI and MPICH, intra-host and over veth (root)
#   make bench-ccl-targets    npccl's private-buffer targets vs the better MPI and memcpy
#   make bench-ccl-det        deterministic reductions vs the default, shm and TCP
#   make bench-ccl-rdma       RDMA transport vs TCP between soft-RoCE hosts, in the VM (root)
#   make bench-ccl-copy       private buffers on one host: single copy through npushm
#                             spaces vs cross-memory attach vs two copies, in the VM (root)
#   make bench-ccl-torch      torch.distributed backend npccl vs gloo
# BENCH_ARGS go to the script or program of the one named (bench/*/run*.sh,
# npushm-bench-gemm, ...).
#
# Built here (make builds them too): the benchmark programs
# build/bench/npushm-bench-<thing> (kmod, weights, gemm) and npccl-perf, the
# collective benchmark (bench/ccl), which is installed: build/bin/npccl-perf.
# The scripts build their peers (MPI builds of the same harness, memcpy and
# read-bandwidth loops, the FMA-peak loop) into build/bench too.

BENCH_DIR := $(CURDIR)/bench
BENCH_VERSION_FLAG = -DNPUSHM_VERSION='"$(shell cat $(CURDIR)/VERSION)"'

# ------------------------------------------------------------------ kmod
BENCH_KMOD := $(BENCH_BINDIR)/npushm-bench-kmod
USER_TARGETS += $(BENCH_KMOD)
$(BENCH_KMOD): $(BENCH_DIR)/kmod/npushm_bench.c $(CURDIR)/include/uapi/linux/npushm.h $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -D_GNU_SOURCE -I$(CURDIR)/include/uapi $(BENCH_VERSION_FLAG) -o $@ $<

# --------------------------------------------------------------- weights
# memory figures with npushm-bert's memstat.o (apps/bert/cli, built by bert.mk)
BENCH_WEIGHTS := $(BENCH_BINDIR)/npushm-bench-weights
USER_TARGETS += $(BENCH_WEIGHTS)
$(BENCH_WEIGHTS): $(BENCH_DIR)/weights/weights_bench.c $(BERT_MEMSTAT_O) $(BERT_DIR)/cli/memstat.h \
		$(LIBNPUSHM_SO) $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(LIBNPUSHM_CFLAGS) -I$(BERT_DIR)/cli $(BENCH_VERSION_FLAG) -o $@ $< \
		$(BERT_MEMSTAT_O) -L$(LIBDIR) -lnpushm -Wl,-rpath,$(LIBDIR) -lm -pthread

# ------------------------------------------------------------------ gemm
# GFLOP/s of libnptensor's GEMM on BERT's linear shapes against the FMA peak of
# the same run (a measuring tool, not a test)
BENCH_GEMM := $(BENCH_BINDIR)/npushm-bench-gemm
USER_TARGETS += $(BENCH_GEMM)
$(BENCH_GEMM): $(BENCH_DIR)/gemm/gemm_bench.c $(TENSOR_LIB) $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -O2 $(BENCH_VERSION_FLAG) -I$(TENSOR_DIR)/include -o $@ $< \
		-L$(LIBDIR) -lnptensor -Wl,-rpath,$(LIBDIR) -lpthread

# ------------------------------------------------------------------- ccl
# npccl-perf: the collective benchmark harness with the npccl backend (the
# same harness is built against MPI by the bench-ccl scripts); installed
BENCH_CCL_PERF := $(BINDIR)/npccl-perf
USER_TARGETS += $(BENCH_CCL_PERF)
$(BENCH_CCL_PERF): $(BENCH_DIR)/ccl/perf.c $(BENCH_DIR)/ccl/backend.h $(BENCH_DIR)/ccl/backend_npccl.c \
		$(CCL_LIB) $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(CCL_TEST_CFLAGS) -O2 $(BENCH_VERSION_FLAG) -o $@ $(BENCH_DIR)/ccl/perf.c \
		$(BENCH_DIR)/ccl/backend_npccl.c -L$(LIBDIR) -lnpccl -Wl,-rpath,'$$ORIGIN/../lib' -lm

# ---------------------------------------------------------------- targets
BENCH_ARGS ?=

.PHONY: bench-kmod bench-kmod-providers bench-weights bench-tensor bench-tensor-reduce bench-gemm \
	bench-bert bench-ccl bench-ccl-targets bench-ccl-det bench-ccl-rdma bench-ccl-copy bench-ccl-torch bench-llama
bench-kmod: $(BENCH_KMOD) modules
	@bench/kmod/run.sh $(BENCH_ARGS)

bench-kmod-providers: $(BENCH_KMOD) modules
	@bench/kmod/providers.sh

bench-weights: $(BENCH_WEIGHTS)
	@bench/weights/run.sh $(BENCH_ARGS)

bench-tensor: $(TENSOR_LIB)
	$(BENCH_DIR)/tensor/run.sh $(BENCH_ARGS)

bench-tensor-reduce: $(TENSOR_LIB)
	BUILD=$(BUILD) $(BENCH_DIR)/tensor/reduce_run.sh $(if $(OLD),-o $(OLD)) $(BENCH_ARGS)

bench-gemm: $(BENCH_GEMM)
	$(BENCH_GEMM) $(BENCH_ARGS)

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

bench-llama: $(LLAMA_CLI) $(LIBNPUSHM_CLI)
	@bench/llama/run.sh $(BENCH_ARGS)

bench-ccl-torch: $(CCL_LIB) ccl-torch
	@bench/ccl/run-torch-bench.sh $(BENCH_ARGS)
