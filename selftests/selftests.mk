# selftests.mk - the module's kselftest-harness tests and the VM runner.
