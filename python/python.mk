# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# python.mk - build rules for python/ (the npushm package). Its pure-Python
# modules need no build; npushm.ccl_torch, the torch.distributed backend,
# has a C++ extension (python/npushm/_npccl_torch.cpp) over libnpccl.
#
#   make ccl-torch    build/lib/_npccl_torch.so (needs libtorch-dev,
#                     python3-pybind11, python3-dev); built by make check,
#                     used by suite ccl-python (ccl/ccl.mk) and make bench-ccl-torch
#
# The package's tests belong to the parts it wraps: libnpushm/tests/test_python.py
# (suite libnpushm), tensor/tests/test_numpy.py (tensor-numpy),
# ccl/tests/python/ (ccl-python).

PY_DIR := $(CURDIR)/python/npushm
PY := /usr/bin/python3
CCL_TORCH_SO := $(LIBDIR)/_npccl_torch.so
CCL_TORCH_CXXFLAGS := -std=c++17 -O2 -fPIC -shared -D_GLIBCXX_USE_CXX11_ABI=1 \
	-DTORCH_API_INCLUDE_EXTENSION_H -DTORCH_EXTENSION_NAME=_npccl_torch \
	-I/usr/include/torch/csrc/api/include -I$(CCL_DIR)/include
$(CCL_TORCH_SO): $(PY_DIR)/_npccl_torch.cpp $(CCL_DIR)/include/npccl.h $(CCL_LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CCL_TORCH_CXXFLAGS) $$($(PY) -m pybind11 --includes) -o $@ $< \
		-L$(LIBDIR) -lnpccl -Wl,--disable-new-dtags,-rpath,$(LIBDIR) -ltorch -ltorch_cpu -lc10 -ltorch_python

.PHONY: ccl-torch
ccl-torch: $(CCL_TORCH_SO)
# in make check's build step, so that suite ccl-python does not wait for it
CHECK_PREBUILD += $(CCL_TORCH_SO)
