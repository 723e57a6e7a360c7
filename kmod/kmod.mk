# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# kmod.mk - build the kernel module (make modules); its tests and static
# checks: selftests/selftests.mk.

KMOD_SRCS := $(wildcard $(CURDIR)/kmod/*.c $(CURDIR)/kmod/*.h $(CURDIR)/kmod/test/*.c \
	$(CURDIR)/kmod/test/*.h) $(CURDIR)/include/uapi/linux/npushm.h

.PHONY: modules clean-modules
# npushm.ko, and npushm_test.ko: the selftests' dma-buf importer (not shipped).
modules: $(CURDIR)/kmod/npushm.ko

$(CURDIR)/kmod/npushm.ko: $(KMOD_SRCS) $(CURDIR)/kmod/Kbuild $(CURDIR)/kmod/test/Kbuild $(CURDIR)/Kbuild
	@test -d "$(KDIR)" || { echo "make modules: no kernel tree at KDIR=$(KDIR); run 'make setup' or set KDIR" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# what Kbuild leaves beside the sources (make clean runs it)
clean-modules:
	rm -f kmod/*.o kmod/.*.cmd kmod/*.ko kmod/*.mod kmod/*.mod.c kmod/.*.d \
		kmod/modules.order modules.order Module.symvers .Module.symvers.cmd .modules.order.cmd
	rm -f kmod/test/*.o kmod/test/.*.cmd kmod/test/*.ko kmod/test/*.mod kmod/test/*.mod.c \
		kmod/test/.*.d kmod/test/modules.order

