# ccl.mk - build and test rules for ccl/ (filled in by the ccl work).
