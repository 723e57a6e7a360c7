# tensor.mk - build and test rules for tensor/ (filled in by the tensor work).
