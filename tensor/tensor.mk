# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# tensor.mk - build and test rules for tensor/ (libnptensor: strided views,
# NumPy broadcasting, fused lazy evaluation, buffer reuse).
#
#   make                      builds build/lib/libnptensor.so (+ .a) and the C tests
#                             (build/tests/tensor-test, tensor-blocks-test)
#   make check-tensor-c       C unit and negative tests (kselftest_harness.h, TAP) and the
#                             layering of the sources (tests/check-layers.sh)
#   make check-tensor-numpy   differential test against NumPy 1.24 (TAP)
#   make check-tensor-blocks  take, linear, attention against naive references (TAP)
#   make tensor-sweep         the same differential test with many more cases (opt-in)

TENSOR_DIR := $(CURDIR)/tensor
TENSOR_OBJDIR := $(BUILD)/obj/tensor
TENSOR_SRCS := $(wildcard $(TENSOR_DIR)/src/*.c $(TENSOR_DIR)/src/*/*.c)
TENSOR_OBJS := $(patsubst $(TENSOR_DIR)/src/%.c,$(TENSOR_OBJDIR)/%.o,$(TENSOR_SRCS))
TENSOR_LIB := $(LIBDIR)/libnptensor.so
TENSOR_ALIB := $(LIBDIR)/libnptensor.a
TENSOR_TEST := $(TESTDIR)/tensor-test
# -O3 and a dynamic cost model so GCC vectorises the kernels (runtime alias
# checks allowed); no -march: AVX2 clones come from target_clones.
# -ffp-contract=off keeps float results bit-identical to NumPy's.
TENSOR_CFLAGS := $(CFLAGS) $(BASE_CFLAGS) -O3 -fvect-cost-model=dynamic -ffp-contract=off \
	-fvisibility=hidden -I$(TENSOR_DIR)/include -I$(TENSOR_DIR)/src -MMD -MP
TENSOR_LDLIBS := -lopenblas -lmvec -lm -lpthread

USER_TARGETS += $(TENSOR_LIB) $(TENSOR_ALIB) $(TENSOR_TEST)
CHECK_SUITES += tensor-c tensor-numpy

$(TENSOR_OBJDIR)/%.o: $(TENSOR_DIR)/src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TENSOR_CFLAGS) -c $< -o $@

$(TENSOR_LIB): $(TENSOR_OBJS) $(TENSOR_DIR)/libnptensor.map
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(TENSOR_OBJS) -Wl,--version-script=$(TENSOR_DIR)/libnptensor.map \
		-Wl,-soname,libnptensor.so.1 $(TENSOR_LDLIBS)
	ln -sf libnptensor.so $@.1

# one object, internal names local (the top Makefile's static_archive)
$(TENSOR_ALIB): $(TENSOR_OBJS)
	$(call static_archive,$(TENSOR_OBJS))

# The C tests use the kernel's kselftest_harness.h (make setup extracts it).
HARNESS_BINS += $(TENSOR_TEST)
$(TENSOR_TEST): $(TENSOR_DIR)/tests/test_tensor.c $(TENSOR_LIB) $(TEST_USAGE)
	@test -f $(SELFTEST_HARNESS)/kselftest_harness.h || \
		{ echo "tensor: kselftest_harness.h missing; run 'make setup'" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -I$(TENSOR_DIR)/include -I$(SELFTEST_HARNESS) -o $@ $< $(TEST_USAGE_LINK) \
		-L$(LIBDIR) -lnptensor -Wl,-rpath,$(LIBDIR) -lm -lpthread

-include $(TENSOR_OBJS:.o=.d)

# The model building blocks (take, linear, attention): kselftest-harness tests.
TENSOR_BLOCKS_TEST := $(TESTDIR)/tensor-blocks-test
USER_TARGETS += $(TENSOR_BLOCKS_TEST)
HARNESS_BINS += $(TENSOR_BLOCKS_TEST)
CHECK_SUITES += tensor-blocks

$(TENSOR_BLOCKS_TEST): $(TENSOR_DIR)/tests/test_blocks.c $(TENSOR_LIB) $(TEST_USAGE)
	@test -f $(BUILD)/linux-source/tools/testing/selftests/kselftest_harness.h || \
		{ echo "tensor: kselftest_harness.h missing; run 'make setup'" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -Wno-sign-compare -I$(TENSOR_DIR)/include \
		-I$(BUILD)/linux-source/tools/testing/selftests -o $@ $< $(TEST_USAGE_LINK) -L$(LIBDIR) -lnptensor \
		-Wl,-rpath,$(LIBDIR) -lm -lpthread

.PHONY: check-tensor-blocks
check-tensor-blocks: $(TENSOR_BLOCKS_TEST)
	@tools/run-suite tensor-blocks $(TENSOR_DIR)/tests/run-blocks.sh $(TENSOR_BLOCKS_TEST)

.PHONY: check-tensor-c check-tensor-numpy tensor-sweep
check-tensor-c: $(TENSOR_TEST)
	@tools/run-suite tensor-c $(TENSOR_DIR)/tests/run-c.sh $(TENSOR_TEST) $(TENSOR_OBJDIR) $(TENSOR_LIB)

check-tensor-numpy: $(TENSOR_LIB)
	@tools/run-suite tensor-numpy env PYTHONPATH=$(CURDIR)/python \
		NPUSHM_LIBDIR=$(LIBDIR) /usr/bin/python3 $(TENSOR_DIR)/tests/test_numpy.py

tensor-sweep: $(TENSOR_LIB)
	env PYTHONPATH=$(CURDIR)/python NPUSHM_LIBDIR=$(LIBDIR) \
		NPT_TEST_CASES=$${NPT_TEST_CASES:-20000} /usr/bin/python3 $(TENSOR_DIR)/tests/test_numpy.py

# (its benchmarks: make bench-tensor, bench-tensor-reduce, bench-gemm; bench/bench.mk)
