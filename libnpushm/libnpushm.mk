# libnpushm.mk - build and test rules for libnpushm/ (filled in by the libnpushm work).
