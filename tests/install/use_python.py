# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""use_python.py ROOT VERSION - the npushm Python package as installed under
ROOT (the DESTDIR): it must be the copy imported, report VERSION, load its
libraries from ROOT by soname, and load, attach and remove a model on the
posix backend (NPUSHM_SHM_DIR names a scratch tmpfs directory). Also runs one
npushm.tensor operation. Prints one line per check; exits 1 on the first
failure.
"""
import json
import os
import struct
import sys

root, version = sys.argv[1], sys.argv[2]


def check(cond, what):
    print(("ok: " if cond else "FAILED: ") + what)
    if not cond:
        sys.exit(1)


import numpy as np  # noqa: E402
import npushm  # noqa: E402
import npushm.tensor as nt  # noqa: E402

check(os.path.realpath(npushm.__file__).startswith(os.path.realpath(root) + os.sep),
      "npushm imported from the installed tree (%s)" % npushm.__file__)
check(npushm.__version__ == version, "npushm.__version__ is %s" % npushm.__version__)

path = os.path.join(os.environ["NPUSHM_SHM_DIR"], "..", "model-%d.safetensors" % os.getpid())
w = np.arange(12, dtype=np.float32).reshape(3, 4)
header = json.dumps({"w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, w.nbytes]}}).encode()
header += b" " * (-len(header) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + w.tobytes())
name = "install-test-%d" % os.getpid()
try:
    npushm.load(path, name, backend="posix")
    m = npushm.attach(name, backend="posix")
    check(np.array_equal(m["w"].numpy(), w), "a model loaded and attached through the installed package")
    with open("/proc/self/maps") as f:
        libs = {ln.split()[-1] for ln in f if "libnp" in ln}
    check(libs and all(p.startswith(os.path.realpath(root) + os.sep) for p in libs),
          "libnpushm and libnptensor mapped from the installed tree: %s" % ", ".join(sorted(libs)))
    s = nt.asarray(w) + nt.asarray(np.ones(4, dtype=np.float32))
    check(np.array_equal(s.numpy(), w + 1), "npushm.tensor broadcasts through the installed libnptensor")
    m.close()
finally:
    os.unlink(path)
    try:
        npushm.remove(name, backend="posix")
    except npushm.NotFoundError:
        pass
