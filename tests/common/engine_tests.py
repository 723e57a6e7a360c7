# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""engine_tests.py - what the engines' test suites share (apps/bert/tests,
apps/llama/tests; they put tests/common on sys.path):

- the ranks of a tensor-parallel run: the children of a process, whether a
  process has ended, a held --stream server started and waited for
  ('ready'), and the check that every rank ends when its parent gets a
  signal (start_held, ranks_end_with_parent), and a signal sent while a run
  loads its model (signals_during_load);
- the VM suites' case files (kmod_cases.py of each engine: `prepare DIR
  MODELS` natively, the guest runs the cases, `check DIR OUT` natively):
  one TAP line per case from the files the guest wrote (check_cases) and
  the command line (cases_main);
- another local user for the trust tests: OTHER_UID and as_uid(), a
  preexec_fn that becomes it; refuses_planted_model(), the check that an
  engine never runs a model that user put under a file's hash name.
"""
import os
import signal
import subprocess
import sys
import time


# ------------------------------------------------------------------ processes

OTHER_UID = 65534       # another local user (an attacker, or a model's owner): never root


def as_uid(uid):
    """preexec_fn: become @uid (groups and gid too) before exec."""
    def drop():
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    return drop


def refuses_planted_model(npushm, path, prefix, run):
    """A .safetensors MODEL at @path is loaded under @prefix.<its hash>; put a model of
    OTHER_UID under that name first (any bytes could claim the hash), then run(): it must exit
    1 naming that uid and how to remove the name, never run the model. The name is removed
    afterwards."""
    r = subprocess.run([npushm, "hash", path], capture_output=True, text=True, check=True)
    name = prefix + "." + r.stdout.split()[0][:16]
    subprocess.run([npushm, "rm", name], capture_output=True)
    r = subprocess.run([npushm, "load", path, "--name", name, "--mode", "0644", "--no-dedup",
                        "--quiet"], capture_output=True, text=True, preexec_fn=as_uid(OTHER_UID))
    assert r.returncode == 0, r.stderr
    try:
        r = run()
        assert r.returncode == 1, "ran the model another user published under its name"
        assert "holds a model of uid %d" % OTHER_UID in r.stderr, r.stderr
        assert "npushm rm " + name in r.stderr, r.stderr
    finally:
        subprocess.run([npushm, "rm", name], capture_output=True)


def children(pid):
    """The pids of @pid's children (none once it has gone)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def ended(pid):
    """Whether @pid has exited (gone, or a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def start_held(args, env=None, go=False):
    """Start a server run with --stream ... --hold (@args, the whole command) and return its
    Popen once it printed 'ready' (its ranks up); @go: also send the line that starts it."""
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    assert line.strip() == "ready", "no 'ready' from %s: %r %s" % (
        os.path.basename(args[0]), line, p.stderr.read() if p.poll() is not None else "")
    if go:
        p.stdin.write("go\n")
        p.stdin.flush()
    return p


def ranks_end_with_parent(p, ranks, sig, settle=0.0):
    """Send @sig (a name: "SIGTERM") to the parent @p, wait for it, and assert that its
    @ranks end within 20 s (any left are killed). Returns the parent's exit status."""
    time.sleep(settle)
    p.send_signal(getattr(signal, sig))
    p.wait(timeout=30)
    deadline = time.time() + 20
    while time.time() < deadline and not all(ended(r) for r in ranks):
        time.sleep(0.1)
    alive = [r for r in ranks if not ended(r)]
    for r in alive:
        os.kill(r, signal.SIGKILL)
    assert not alive, "ranks %s still running after their parent got %s" % (alive, sig)
    return p.returncode


def signals_during_load(args, sig="SIGINT", delays=(0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16)):
    """Run @args (a run that loads its model from a file) once per delay, each in a private
    posix directory, send @sig (a name) that long after its start, and return
    [(delay, exit status, stderr, what the directory still holds)]."""
    import tempfile

    def default_signals():
        # a test run started in the background of a shell inherits SIGINT ignored: the
        # signal sent before the program installs its handler would be lost, and the
        # run would go on for ever
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)

    out = []
    for delay in delays:
        shm = tempfile.mkdtemp(prefix="engine-sig.", dir="/dev/shm")
        env = dict(os.environ, NPUSHM_BACKEND="posix", NPUSHM_SHM_DIR=shm)
        p = None
        try:
            p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, env=env,
                                 preexec_fn=default_signals, start_new_session=True)
            time.sleep(delay)
            p.send_signal(getattr(signal, sig))
            _, err = p.communicate(timeout=60)
            out.append((delay, p.returncode, err, os.listdir(shm)))
        finally:
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)	# its ranks too
                p.wait()
            subprocess.run(["rm", "-rf", shm])
    return out


# ------------------------------------------------------------------ VM case files

def check_cases(out, program, cases, compare):
    """The TAP lines of the cases the guest ran: @cases lists (NAME, description); for
    each, OUT/NAME.rc (the exit status of @program) and OUT/NAME.log (its output) are
    read and, when it exited 0, compare(NAME, log) gives "" or what differs (it may
    raise OSError for a missing result). Returns 1 if a case failed, else 0."""
    print("1..%d" % len(cases))
    failed = 0
    for i, (name, desc) in enumerate(cases, 1):
        try:
            rc = open(os.path.join(out, name + ".rc")).read().strip()
            log = open(os.path.join(out, name + ".log")).read()
            msg = compare(name, log) if rc == "0" else "%s exited with %s: %s" % (program, rc, log)
        except OSError as e:
            msg = "no result from the VM: %s" % e
        failed += tap_case(i, desc, msg)
    return 1 if failed else 0


def tap_case(i, desc, msg):
    """One TAP line for case @i: ok, or not ok after @msg's lines as comments. 1 if failed."""
    if not msg:
        print("ok %d - %s" % (i, desc))
        return 0
    for line in msg.splitlines():
        print("# " + line)
    print("not ok %d - %s" % (i, desc))
    return 1


def cases_main(prepare, check):
    """`prepare DIR MODELS` or `check DIR OUT` (the exit status of check: 1 if a case
    failed)."""
    if len(sys.argv) == 4 and sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
        sys.exit(0)
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    print("usage: %s prepare DIR MODELS | check DIR OUT" % os.path.basename(sys.argv[0]),
          file=sys.stderr)
    sys.exit(2)
