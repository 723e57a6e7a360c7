# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# bert.mk - build and test rules for apps/bert/ (libnpbert: BERT inference from a
# shared npushm model, computed with libnptensor, tensor parallel with libnpccl).
#
#   make                  build/lib/libnpbert.so (+ .a), build/bin/npushm-bert (the command),
#                         build/tools/npushm-bert-gen (deterministic test models),
#                         build/tests/bert-test (the C API tests)
#   make check-bert       against the PyTorch reference and the error cases, posix backend
#   make check-bert-kmod  the engine on the kmod backend, in the VM
#   make run-demo         the serving demo (make demo = setup + build + this);
#                         NPUSHM_BACKEND=kmod runs it in the VM with the module;
#                         BERT_DEMO_ARGS="--workers 2 ..." passes options to demo.py

BERT_DIR := $(CURDIR)/apps/bert
BERT_OBJDIR := $(BUILD)/obj/bert
BERT_SRCS := $(wildcard $(BERT_DIR)/src/*.c)
BERT_OBJS := $(patsubst $(BERT_DIR)/src/%.c,$(BERT_OBJDIR)/%.o,$(BERT_SRCS))
BERT_LIB := $(LIBDIR)/libnpbert.so
BERT_ALIB := $(LIBDIR)/libnpbert.a
BERT_CLI := $(BINDIR)/npushm-bert
BERT_GEN := $(TOOLDIR)/npushm-bert-gen
BERT_TEST := $(TESTDIR)/bert-test
BERT_INCS := -I$(BERT_DIR)/include -I$(CURDIR)/apps/common -I$(CURDIR)/tensor/include -I$(CURDIR)/ccl/include \
	-I$(CURDIR)/libnpushm/include
BERT_CFLAGS := $(BASE_CFLAGS) $(CFLAGS) $(BERT_INCS)
BERT_LIBS := -L$(LIBDIR) -lnpbert -lnptensor -lnpccl -lnpushm -Wl,-rpath,'$$ORIGIN/../lib' -lm

USER_TARGETS += $(BERT_LIB) $(BERT_ALIB) $(BERT_CLI) $(BERT_GEN) $(BERT_TEST)
HARNESS_BINS += $(BERT_TEST)

$(BERT_OBJDIR)/%.o: $(BERT_DIR)/src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -MMD -MP -fvisibility=hidden -c $< -o $@

# the weight scan is one OR-reduction left to the vectoriser (-O2's cheap cost
# model leaves it scalar)
$(BERT_OBJDIR)/finite.o: BERT_CFLAGS += -O3

$(BERT_LIB): $(BERT_OBJS) $(BERT_DIR)/libnpbert.map $(TENSOR_LIB) $(CCL_LIB) $(LIBNPUSHM_SO)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(BERT_OBJS) -Wl,-soname,libnpbert.so.1 \
		-Wl,--version-script=$(BERT_DIR)/libnpbert.map -Wl,--no-undefined \
		-L$(LIBDIR) -lnptensor -lnpccl -lnpushm -Wl,-rpath,'$$ORIGIN' -ljson-c -lm
	ln -sf libnpbert.so $@.1

# one object, internal names local (the top Makefile's static_archive)
$(BERT_ALIB): $(BERT_OBJS)
	$(call static_archive,$(BERT_OBJS))

# The .npy reader and writer of both commands (apps/common/npy.c, linked by
# npushm-llama too) and the command's memory figures (npushm-bench-weights'
# too), as objects the others link.
APPS_NPY_O := $(BUILD)/obj/apps/common/npy.o
BERT_MEMSTAT_O := $(BERT_OBJDIR)/cli/memstat.o
$(APPS_NPY_O): $(CURDIR)/apps/common/npy.c $(CURDIR)/apps/common/npy.h
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -c $< -o $@
$(BERT_MEMSTAT_O): $(BERT_OBJDIR)/cli/%.o: $(BERT_DIR)/cli/%.c $(BERT_DIR)/cli/%.h
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -c $< -o $@

# --dtype packs with the packer of `npushm load --dtype` (libnpushm.mk's
# LIBNPUSHM_PACK_O)
BERT_CLI_SRCS := $(filter-out $(BERT_DIR)/cli/memstat.c,$(wildcard $(BERT_DIR)/cli/*.c))
$(BERT_CLI): $(BERT_CLI_SRCS) $(wildcard $(BERT_DIR)/cli/*.h $(CURDIR)/apps/common/*.h) \
		$(APPS_NPY_O) $(BERT_MEMSTAT_O) \
		$(LIBNPUSHM_PACK_O) $(LIBNPUSHM_PACK_H) $(BERT_LIB) $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -DNPUSHM_VERSION_STRING='"$(shell cat $(CURDIR)/VERSION)"' \
		-I$(LIBNPUSHM_DIR)/cli -o $@ $(BERT_CLI_SRCS) $(APPS_NPY_O) $(BERT_MEMSTAT_O) \
		$(LIBNPUSHM_PACK_O) $(BERT_LIBS) -pthread

$(BERT_GEN): $(BERT_DIR)/tools/gen_model.c $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -DNPUSHM_VERSION='"$(shell cat $(CURDIR)/VERSION)"' -o $@ $<

# The C API tests use kselftest_harness.h (extracted by tools/setup.sh).
$(BERT_TEST): $(BERT_DIR)/tests/test_npbert.c $(BERT_LIB) $(TEST_USAGE)
	@test -f $(SELFTEST_HARNESS)/kselftest_harness.h || \
		{ echo "bert: kselftest_harness.h missing; run 'make setup'" >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) $(BERT_CFLAGS) -Wno-sign-compare -I$(SELFTEST_HARNESS) -o $@ $< $(TEST_USAGE_LINK) $(BERT_LIBS) -lpthread

-include $(BERT_OBJS:.o=.d)

CHECK_SUITES += bert bert-kmod
.PHONY: check-bert check-bert-kmod
check-bert: $(BERT_LIB) $(BERT_CLI) $(BERT_GEN) $(BERT_TEST) $(LIBNPUSHM_CLI)
	@tools/run-suite bert apps/bert/tests/run-tests.sh

check-bert-kmod: $(BERT_LIB) $(BERT_CLI) $(BERT_GEN) $(BERT_TEST) $(LIBNPUSHM_CLI)
	@tools/run-suite bert-kmod apps/bert/tests/run-kmod-vm.sh

# ---------------------------------------------------------------------- demo
# make demo (top level) = setup + build + run-demo. Posix backend natively;
# NPUSHM_BACKEND=kmod runs it in the VM with the module (5 GiB of guest
# memory for the private-copy row; a lighter stream: the guest CPU is emulated).
BERT_DEMO_MODEL := $(BUILD)/bert/bert-base.safetensors
BERT_DEMO_ARGS ?=
BERT_DEMO_KMOD_ARGS ?= --batches 1 --batch 1 --min-len 8 --max-len 8

.PHONY: run-demo
run-demo: $(BERT_CLI) $(BERT_GEN) $(LIBNPUSHM_CLI)
	@mkdir -p $(BUILD)/bert
	@test -f $(BERT_DEMO_MODEL) || { echo "writing $(BERT_DEMO_MODEL) (BERT-base shape, deterministic values)..."; \
		$(BERT_GEN) $(BERT_DEMO_MODEL); }
ifeq ($(NPUSHM_BACKEND),kmod)
	@test -f kmod/npushm.ko || { echo "run-demo: kmod/npushm.ko is not built; run make modules" >&2; exit 1; }
	@echo "run-demo: booting the VM with the npushm module (the guest CPU is emulated: minutes)..."
	@mkdir -p $(BUILD)/vm/bert-demo && rm -f $(BUILD)/vm/bert-demo/demo.txt
	@VM_QUIET=1 selftests/vm/run-vm.sh -m 5G -t 1800 -o $(BUILD)/vm/bert-demo -- \
		env NPUSHM_TEST_PARAMS="capacity=1G uid_quota=0" selftests/vm/with-module.sh \
		sh -c 'NPUSHM_BACKEND=kmod /usr/bin/python3 apps/bert/demo/demo.py --model $(BERT_DEMO_MODEL) \
			--workdir $(BUILD)/vm/bert-demo $(BERT_DEMO_KMOD_ARGS) $(BERT_DEMO_ARGS) \
			> $(BUILD)/vm/bert-demo/demo.txt 2>&1'; \
		rc=$$?; cat $(BUILD)/vm/bert-demo/demo.txt; exit $$rc
else
	@/usr/bin/python3 apps/bert/demo/demo.py --model $(BERT_DEMO_MODEL) $(BERT_DEMO_ARGS)
endif
