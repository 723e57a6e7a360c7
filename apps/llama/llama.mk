# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# llama.mk - build and test rules for apps/llama/ (libnpllama: a Llama-style
# decoder served from a shared npushm model, projections on libnptensor, the
# KV cache of each sequence in an npushm region, tensor parallel over libnpccl).
#
#   make              build/lib/libnpllama.so (+ .a), build/bin/npushm-llama
#   make check-llama  against the plain-PyTorch reference and the refusals,
#                     posix backend (models from apps/llama/tools/gen_model.py)
#   make check-llama-kmod  the same small models on the kmod backend, in the VM
#   make demo-llama   N serving workers on one shared copy, and a shared prompt
#                     prefix's time to first token (apps/llama/demo/; about 35 s on
#                     2 cores: make demo runs it last, natively)
# (its benchmark: make bench-llama, bench/bench.mk)

LLAMA_DIR := $(CURDIR)/apps/llama
LLAMA_OBJDIR := $(BUILD)/obj/llama
LLAMA_SRCS := $(wildcard $(LLAMA_DIR)/src/*.c)
LLAMA_OBJS := $(patsubst $(LLAMA_DIR)/src/%.c,$(LLAMA_OBJDIR)/%.o,$(LLAMA_SRCS))
LLAMA_LIB := $(LIBDIR)/libnpllama.so
LLAMA_ALIB := $(LIBDIR)/libnpllama.a
LLAMA_CLI := $(BINDIR)/npushm-llama
LLAMA_INCS := -I$(LLAMA_DIR)/include -I$(CURDIR)/apps/common -I$(CURDIR)/tensor/include -I$(CURDIR)/libnpushm/include \
	-I$(CURDIR)/ccl/include
LLAMA_CFLAGS := $(BASE_CFLAGS) $(CFLAGS) $(LLAMA_INCS)

USER_TARGETS += $(LLAMA_LIB) $(LLAMA_ALIB) $(LLAMA_CLI)

# attention runs per head and position: vectorised (target_clones) at -O3
$(LLAMA_OBJDIR)/attend.o: LLAMA_CFLAGS += -O3

$(LLAMA_OBJDIR)/%.o: $(LLAMA_DIR)/src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LLAMA_CFLAGS) -MMD -MP -fvisibility=hidden -c $< -o $@

$(LLAMA_LIB): $(LLAMA_OBJS) $(LLAMA_DIR)/libnpllama.map $(TENSOR_LIB) $(CCL_LIB) $(LIBNPUSHM_SO)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(LLAMA_OBJS) -Wl,-soname,libnpllama.so.1 \
		-Wl,--version-script=$(LLAMA_DIR)/libnpllama.map -Wl,--no-undefined \
		-L$(LIBDIR) -lnptensor -lnpccl -lnpushm -Wl,-rpath,'$$ORIGIN' -ljson-c -lm
	ln -sf libnpllama.so $@.1

# one object, internal names local (the top Makefile's static_archive)
$(LLAMA_ALIB): $(LLAMA_OBJS)
	$(call static_archive,$(LLAMA_OBJS))

# the .npy reader and writer are apps/common/npy.c (bert.mk's APPS_NPY_O); --dtype
# packs with the packer of `npushm load --dtype` (libnpushm.mk's LIBNPUSHM_PACK_O)
$(LLAMA_CLI): $(wildcard $(LLAMA_DIR)/cli/*.c $(LLAMA_DIR)/cli/*.h $(CURDIR)/apps/common/*.h) \
		$(APPS_NPY_O) $(CURDIR)/apps/common/npy.h \
		$(LIBNPUSHM_PACK_O) $(LIBNPUSHM_PACK_H) $(LLAMA_LIB) $(CURDIR)/VERSION
	@mkdir -p $(dir $@)
	$(CC) $(LLAMA_CFLAGS) -DNPUSHM_VERSION_STRING='"$(shell cat $(CURDIR)/VERSION)"' \
		-I$(LIBNPUSHM_DIR)/cli -o $@ $(wildcard $(LLAMA_DIR)/cli/*.c) \
		$(APPS_NPY_O) $(LIBNPUSHM_PACK_O) \
		-L$(LIBDIR) -lnpllama -lnptensor -lnpccl -lnpushm -Wl,-rpath,'$$ORIGIN/../lib' -lm

-include $(LLAMA_OBJS:.o=.d)

CHECK_SUITES += llama llama-kmod
.PHONY: check-llama check-llama-kmod
check-llama: $(LLAMA_LIB) $(LLAMA_CLI) $(LIBNPUSHM_CLI)
	@tools/run-suite llama apps/llama/tests/run-tests.sh

check-llama-kmod: $(LLAMA_LIB) $(LLAMA_CLI) $(LIBNPUSHM_CLI)
	@tools/run-suite llama-kmod apps/llama/tests/run-kmod-vm.sh

.PHONY: demo-llama
demo-llama: $(LLAMA_CLI) $(LIBNPUSHM_CLI)
	@/usr/bin/python3 apps/llama/demo/demo.py $(LLAMA_DEMO_ARGS)
