# kmod.mk - build the kernel module (make modules) and check it statically.

KMOD_SRCS := $(wildcard $(CURDIR)/kmod/*.c $(CURDIR)/kmod/*.h) $(CURDIR)/include/uapi/linux/npushm.h

.PHONY: modules static-check check-static
modules: $(CURDIR)/kmod/npushm.ko

$(CURDIR)/kmod/npushm.ko: $(KMOD_SRCS) $(CURDIR)/kmod/Kbuild $(CURDIR)/Kbuild
	@test -d "$(KDIR)" || { echo "make modules: no kernel tree at KDIR=$(KDIR); run 'make setup' or set KDIR" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

CHECK_SUITES += static
check-static:
	@tools/run-suite static selftests/static-checks.sh
