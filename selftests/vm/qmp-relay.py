#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
"""qmp-relay.py - on the host, beside a test VM (run-vm.sh with VM_IVSHMEM):
lets a test in the guest drive qemu's monitor, to unplug and plug a device
as an operator would (device_del, device_add).

    qmp-relay.py OUTDIR

The guest writes one QMP command (a JSON object) to OUTDIR/qmp-request, the
result share; this relays it to qemu's QMP socket OUTDIR/qmp.sock, writes
qemu's answer (its "return" or "error" object) to OUTDIR/qmp-reply and
removes the request. Runs until the socket goes away with qemu.
"""
import json
import os
import socket
import sys
import time


def answer(f):
    """The next reply to a command, skipping asynchronous events."""
    while True:
        line = f.readline()
        if not line:
            raise EOFError("qemu closed the monitor")
        msg = json.loads(line)
        if "return" in msg or "error" in msg:
            return msg


def main():
    out = sys.argv[1]
    path, req, rep = (os.path.join(out, n) for n in ("qmp.sock", "qmp-request", "qmp-reply"))
    for _ in range(600):
        if os.path.exists(path):
            break
        time.sleep(0.1)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    f = s.makefile("rw")
    f.readline()  # the greeting
    f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
    f.flush()
    answer(f)
    while True:
        if os.path.exists(req):
            with open(req) as r:
                cmd = r.read()
            os.unlink(req)
            f.write(cmd.strip() + "\n")
            f.flush()
            with open(rep + ".tmp", "w") as w:
                json.dump(answer(f), w)
            os.rename(rep + ".tmp", rep)
        time.sleep(0.1)


if __name__ == "__main__":
    try:
        main()
    except (OSError, EOFError, ValueError):
        pass
