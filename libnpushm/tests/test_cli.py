#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""test_cli.py - the npushm command: every subcommand with --json parsed and
checked against an independent reading of the file (safetensors_ref), the text
output, the error messages and exit statuses, and the progress bar (only on a
terminal). Runs on the backend NPUSHM_BACKEND selects, under pytest
(tools/run-pytest.sh prints its TAP)."""
import json
import os
import pty
import random
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_ref as ref  # noqa: E402
import pytest  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("NPUSHM_BIN") or os.path.join(os.environ.get("BUILD", ROOT + "/build"), "bin", "npushm")
KMOD = os.environ.get("NPUSHM_BACKEND") == "kmod"
TMP = tempfile.mkdtemp(prefix="npushm-cli.")
PFX = "cli%d." % os.getpid()
created = set()


def check(cond, msg="check failed"):
    """Fail the test with `msg` unless `cond` (pytest shows it with the traceback)."""
    if not cond:
        raise AssertionError(msg)


def diag(msg):
    """A note for the suite's log (TAP comment under the test's line)."""
    print(msg, flush=True)


def cli(*args, expect=0):
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True)
    if p.returncode != expect:
        raise AssertionError("npushm %s: exit %d (expected %d)\nstdout: %s\nstderr: %s"
                             % (" ".join(args), p.returncode, expect, p.stdout, p.stderr))
    return p


def cli_json(*args, expect=0):
    p = cli(*args, "--json", expect=expect)
    return json.loads(p.stdout), p


def model_file(name, seed=1, n=6):
    """Six tensors of several dtypes and ranks (pure Python: no NumPy import,
    which costs seconds in the VM)."""
    rng = random.Random(seed)

    def pack(fmt, values):
        return struct.pack("<%d%s" % (len(values), fmt), *values)

    raw = {
        "embeddings.weight": ("F32", [50, 16], pack("f", [rng.gauss(0, 1) for _ in range(800)])),
        "layer.0.bias": ("F16", [16], pack("e", [rng.gauss(0, 1) for _ in range(16)])),
        "layer.0.ids": ("I64", [n], pack("q", list(range(n)))),
        "scalar": ("F64", [], pack("d", [2.5])),
        "empty": ("I32", [0, 3], b""),
        "mask": ("BOOL", [7], bytes(rng.randint(0, 1) for _ in range(7))),
    }
    path = os.path.join(TMP, name)
    ref.write_raw(path, raw, metadata={"format": "pt", "seed": str(seed)})
    return path


def load(path, name, *extra):
    created.add(name)
    return cli_json("load", path, "--name", name, *extra)[0]


def test_load_info_ls_rm_json_agree_with_the_file():
    path = model_file("a.safetensors")
    name = PFX + "a"
    res = load(path, name)
    check(res["name"] == name and res["file"] == path)
    check(res["backend"] == ("kmod" if KMOD else "posix"))
    check(res["tensors"] == 6 and res["source_size"] == os.path.getsize(path))
    check(len(res["hash"]) == 32 and not res["deduplicated"])
    check(res["region_size"] >= res["source_size"] and res["region_size"] % 4096 == 0)
    info, _ = cli_json("info", name)
    check(info["hash"] == res["hash"] and info["region_id"] == res["region_id"])
    check(info["metadata"] == {"format": "pt", "seed": "1"})
    want = ref.read(path)
    names = [t["name"] for t in info["tensors"]]
    check(names == sorted(want), "tensors not in name order: %s" % names)
    for t in info["tensors"]:
        dtype, shape, data = want[t["name"]]
        check(t["dtype"] == dtype and tuple(t["shape"]) == shape, t)
        check(t["nbytes"] == len(data) and t["offset"] % 64 == 0, t)
        strides, acc = [], 1
        for d in reversed(shape):
            strides.insert(0, acc)
            acc *= d
        check(t["strides"] == strides, t)
    ls, _ = cli_json("ls")
    mine = [r for r in ls["regions"] if any(n["name"] == name for n in r["names"])]
    check(len(mine) == 1, "ls lists the model once")
    r = mine[0]
    check(r["sealed"] and r["persistent"] and r["id"] == res["region_id"])
    check(r["model"] == {"hash": res["hash"], "tensors": 6, "source_size": res["source_size"],
                         "layouts": 0, "layouts_made_by": "-", "packed_only_tensors": 0})
    check(r["mappers"] == 0, "nobody maps it (ls does not count itself)")
    check(r["pinned_bytes"] == (0 if KMOD else None), "pinned bytes %r" % r["pinned_bytes"])
    check(r["provider"] == ("sysmem" if KMOD else "shm") and r["device"] is None,
          "provider %r, device %r" % (r["provider"], r["device"]))
    check(any(n["hash_alias"] and n["name"] == "xxh3:" + res["hash"] for n in r["names"]))
    mode = [n["mode"] for n in r["names"] if n["name"] == name][0]
    check(mode == (0o640 if KMOD else 0o440), "mode %o" % mode)
    check(ls["backend"] == res["backend"] and ls["capacity"] > 0)
    out, _ = cli_json("rm", name)
    check(out == {"removed": name})
    ls, _ = cli_json("ls")
    check(not any(n["name"] in (name, "xxh3:" + res["hash"]) for r in ls["regions"] for n in r["names"]),
          "rm removed the name and the alias")


def test_dedup_and_no_dedup():
    path = model_file("d.safetensors", seed=2)
    a = load(path, PFX + "d1")
    b = load(path, PFX + "d2")
    c = load(path, PFX + "d3", "--no-dedup")
    check(b["deduplicated"] and b["region_id"] == a["region_id"])
    check(not c["deduplicated"] and c["region_id"] != a["region_id"])
    ls, _ = cli_json("ls")
    regions = {r["id"]: r for r in ls["regions"]}
    check(sorted(n["name"] for n in regions[a["region_id"]]["names"])
          == sorted([PFX + "d1", PFX + "d2", "xxh3:" + a["hash"]]))
    for n in ("d1", "d2", "d3"):
        cli("rm", PFX + n)
        created.discard(PFX + n)


def xxhsum(data):
    """XXH3-128 of @data as Debian's xxhsum prints it (32 hex digits)."""
    p = subprocess.run(["xxhsum", "-H2"], input=data, capture_output=True, check=True)
    return p.stdout.split()[0].decode()


def test_hash_is_xxh3_over_8mib_blocks_as_xxhsum_computes():
    """The content hash, recomputed with the xxhash command line tool: XXH3-128
    of the XXH3-128 digests of the file's 8 MiB blocks (the last one short)."""
    rng = random.Random(9)
    n = (17 << 20) + 12
    raw = {"w": ("U8", [n], rng.randbytes(n))}
    path = os.path.join(TMP, "blocks.safetensors")
    ref.write_raw(path, raw)
    res = load(path, PFX + "blocks")
    with open(path, "rb") as f:
        whole = f.read()
    block = 8 << 20
    digests = [xxhsum(whole[i:i + block]) for i in range(0, len(whole), block)]
    check(len(digests) == 3)
    check(res["hash"] == xxhsum(bytes.fromhex("".join(digests))),
          "hash %s, xxhsum over the blocks gives something else" % res["hash"])
    check(res["hash"] != xxhsum(whole), "the hash is over the blocks, not the whole file")
    # `npushm hash` gives the same without loading, for this and a small file.
    small = model_file("small.safetensors", seed=3)
    p = cli("hash", path, small)
    small_hash = xxhsum(bytes.fromhex(xxhsum(open(small, "rb").read())))
    check(p.stdout == "%s  %s\n%s  %s\n" % (res["hash"], path, small_hash, small), repr(p.stdout))
    out, _ = cli_json("hash", path)
    check(out == {"files": [{"file": path, "hash": res["hash"]}]}, out)
    p = cli("hash", *[small] * 9)
    check(p.stdout == ("%s  %s\n" % (small_hash, small)) * 9, "nine operands: %r" % p.stdout)
    cli("rm", PFX + "blocks")
    created.discard(PFX + "blocks")


def small_tmpfs_pages():
    """Whether the posix backend's tmpfs gives a 64 MiB file small pages, as
    the library decides it (st_blksize)."""
    d = os.environ.get("NPUSHM_SHM_DIR", "/dev/shm")
    fd, f = tempfile.mkstemp(dir=d)
    try:
        os.ftruncate(fd, 64 << 20)
        return os.fstat(fd).st_blksize <= 4096
    finally:
        os.close(fd)
        os.unlink(f)


def test_big_load_on_small_pages_says_how_to_go_faster():
    """A load of 64 MiB or more on a tmpfs with 4 KiB pages warns (after the
    command, on stderr) and names the fix; --quiet and --json keep stdout clean."""
    n = 64 << 20
    path = os.path.join(TMP, "big64.safetensors")
    ref.write_raw(path, {"w": ("U8", [n], b"\x01" * n)})
    name = PFX + "big64"
    created.add(name)
    p = cli("load", path, "--name", name, "--no-dedup")
    warned = "huge=within_size" in p.stderr
    if KMOD or not small_tmpfs_pages():
        check(not warned, "no warning where the region gets big pages: %r" % p.stderr)
    else:
        check(p.stderr.startswith("npushm: warning: ") and "4 KiB pages" in p.stderr
              and "npushm-load(1)" in p.stderr, repr(p.stderr))
        check(p.stdout.startswith("loaded '%s'" % name), repr(p.stdout))
    cli("rm", name)
    p = cli("load", path, "--name", name, "--no-dedup", "--quiet")
    check(p.stderr == "" and p.stdout == "", "--quiet: %r %r" % (p.stdout, p.stderr))
    cli("rm", name)
    out, p = cli_json("load", path, "--name", name, "--no-dedup")
    check(out["name"] == name, "stdout is the JSON alone")
    check(("huge=within_size" in p.stderr) == warned, repr(p.stderr))
    cli("rm", name)
    created.discard(name)


def test_load_dtype_f32_packs_the_linear_weights():
    """load --dtype f32: 2-D float32 '*.weight' tensors outside the embeddings get a
    layout packed for this CPU (libnptensor/oneDNN); ls and info show them; the hash
    is not the file's."""
    rng = random.Random(4)
    raw = {
        "embeddings.weight": ("F32", [50, 16], struct.pack("<800f", *[rng.gauss(0, 1) for _ in range(800)])),
        "dense.weight": ("F32", [32, 16], struct.pack("<512f", *[rng.gauss(0, 1) for _ in range(512)])),
        "dense.bias": ("F32", [32], struct.pack("<32f", *[rng.gauss(0, 1) for _ in range(32)])),
    }
    path = os.path.join(TMP, "dense.safetensors")
    ref.write_raw(path, raw, metadata={"format": "pt"})
    name = PFX + "dense"
    res = load(path, name, "--dtype", "f32")
    check(res["dtype"] == "f32")
    info, _ = cli_json("info", name)
    if not info["layouts"]:
        # the GEMM runs on OpenBLAS here (no libdnnl2): nothing to pack, the plain model
        check(res["hash"] == cli("hash", path).stdout.split()[0])
    else:
        check([l["tensor"] for l in info["layouts"]] == ["dense.weight"], info["layouts"])
        lay = info["layouts"][0]
        check(lay["tag"].startswith("onednn-") and "/f32/k16.n32/" in lay["tag"], lay["tag"])
        check(lay["offset"] % 64 == 0 and lay["nbytes"] >= 32 * 16 * 4 and len(lay["hash"]) == 32)
        check(res["hash"] != cli("hash", path).stdout.split()[0], "the hash covers the layouts")
        ls, _ = cli_json("ls")
        mine = [r for r in ls["regions"] if any(n["name"] == name for n in r["names"])]
        check(mine and mine[0]["model"]["layouts"] == 1, mine)
        check(mine[0]["model"]["layouts_made_by"].startswith("1 onednn-"), mine)
        p = cli("info", name)
        check("PACKED LAYOUT OF" in p.stdout and lay["tag"] in p.stdout, p.stdout)
    if info["layouts"]:
        # int8: the same weight quantised (scales + s8 panels), another model, another hash
        name8 = PFX + "dense8"
        res8 = load(path, name8, "--dtype", "int8")
        info8, _ = cli_json("info", name8)
        check([l["tensor"] for l in info8["layouts"]] == ["dense.weight"], info8["layouts"])
        tag8 = info8["layouts"][0]["tag"]
        check("/s8/k16.n32/" in tag8 and tag8.endswith("/scales-per-n"), tag8)
        check(info8["layouts"][0]["nbytes"] >= 32 * 16 + 32 * 4)
        check(res8["hash"] not in (res["hash"], cli("hash", path).stdout.split()[0]))
        cli("rm", name8)
        created.discard(name8)
    p = cli("load", path, "--name", name, "--dtype", "f16", expect=2)
    check("--dtype 'f16'" in p.stderr and "bf16" in p.stderr and "int8" in p.stderr, p.stderr)
    p = cli("ls", "--dtype", "f32", expect=2)
    check("belong to load" in p.stderr, p.stderr)
    cli("rm", name)
    created.discard(name)


def test_text_output():
    path = model_file("t.safetensors", seed=3)
    name = PFX + "t"
    p = cli("load", path, "--name", name, "--mode", "0644")
    created.add(name)
    check(p.stdout.startswith("loaded '%s' from %s: 6 tensors" % (name, path)), p.stdout)
    check(p.stderr == "", "no progress bar when stderr is not a terminal: %r" % p.stderr)
    p = cli("ls")
    line = [l for l in p.stdout.splitlines() if l.startswith(name)]
    check(line and " model " in line[0] and " yes " in line[0], p.stdout)
    check(p.stdout.splitlines()[0].split() == ["NAME", "KIND", "SIZE", "HASH", "TENSORS", "SEALED",
                                                "PROCS", "PINNED", "PROVIDER", "LAYOUTS"], p.stdout)
    check(line[0].rstrip().endswith(" 0 B sysmem   -" if KMOD else " ? shm      -"),
          "pinned, provider, layouts: %r" % line[0])
    p = cli("info", name)
    check("embeddings.weight" in p.stdout and "[50, 16]" in p.stdout and "F32" in p.stdout, p.stdout)
    p = cli("rm", name)
    created.discard(name)
    check(p.stdout == "removed '%s'\n" % name)


def test_errors_say_what_to_do():
    p = cli("info", "bert", expect=1)
    check(p.stderr == "npushm: model 'bert' not found: no region published under that name; "
          "run `npushm load FILE --name bert` first\n", repr(p.stderr))
    err, p = cli_json("info", "bert", expect=1)
    check(err["error"]["status"] == "NOT_FOUND" and "npushm load" in err["error"]["message"])
    err, _ = cli_json("rm", PFX + "nothing", expect=1)
    check(err["error"]["status"] == "NOT_FOUND")
    # nothing to remove: not the advice to load it first
    check(err["error"]["message"] == "cannot remove '%snothing': no model or region is published under "
          "that name (removed already?); `npushm ls --all` lists the names" % PFX, err["error"]["message"])
    bad = os.path.join(TMP, "bad.safetensors")
    with open(bad, "wb") as f:
        f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":[1,2,3]}   ")
    err, p = cli_json("load", bad, "--name", PFX + "bad", expect=1)
    check(err["error"]["status"] == "FORMAT")
    check(err["error"]["message"] == "'%s' is not a valid safetensors file: tensor 'a': the value is a JSON array, "
          "not an object with dtype, shape and data_offsets" % bad, err["error"]["message"])
    check(p.stderr.startswith("npushm: '%s' is not a valid" % bad))
    err, _ = cli_json("load", os.path.join(TMP, "missing"), "--name", PFX + "m", expect=1)
    check(err["error"]["status"] == "NOT_FOUND" and "cannot open" in err["error"]["message"])
    err, _ = cli_json("hash", os.path.join(TMP, "missing"), expect=1)
    check(err["error"] == {"status": "NOT_FOUND", "message": "cannot open '%s' (No such file or directory)"
                           % os.path.join(TMP, "missing")}, err)
    p = cli("hash", TMP, expect=1)
    check(p.stderr == "npushm: '%s' is not a regular file\n" % TMP and p.stdout == "", repr(p.stderr))
    ls, _ = cli_json("ls")
    check(not any(n["name"].startswith(PFX + "bad") for r in ls["regions"] for n in r["names"]))
    path = model_file("e.safetensors", seed=4)
    load(path, PFX + "e")
    err, _ = cli_json("load", model_file("e2.safetensors", seed=5), "--name", PFX + "e", expect=1)
    check(err["error"]["status"] == "EXISTS" and "npushm rm %se" % PFX in err["error"]["message"]
          and "--replace" in err["error"]["message"], err)
    cli("rm", PFX + "e")
    created.discard(PFX + "e")


def no_terminal_controls(text):
    """No byte a terminal acts on (C0 but newline, DEL, C1 in UTF-8)."""
    return not any((ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f for c in text)


def test_names_from_a_model_cannot_drive_the_terminal():
    """Whoever loads a model or writes a file chooses its tensor names and
    metadata: info and the error messages print their control characters
    (escape sequences that retitle the window, clear the screen, hide text)
    as \\xNN, and --json keeps the names exact."""
    evil = "w\x1b]0;owned\x07\x1b[2J\u009b1m"
    path = os.path.join(TMP, "evil.safetensors")
    header = json.dumps({evil: {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                         "__metadata__": {"k\x1b[8m": "v\x7f"}}).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    name = PFX + "evil"
    load(path, name, "--mode", "0644")
    p = cli("info", name)
    check(no_terminal_controls(p.stdout), repr(p.stdout))
    check("w\\x1b]0;owned\\x07\\x1b[2J\\xc2\\x9b1m " in p.stdout, repr(p.stdout))
    info, _ = cli_json("info", name)
    check(info["tensors"][0]["name"] == evil, info["tensors"][0])
    cli("rm", name)
    created.discard(name)
    bad = os.path.join(TMP, "evil-bad.safetensors")
    header = json.dumps({evil: {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}).encode()
    with open(bad, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    p = cli("load", bad, "--name", PFX + "evil-bad", expect=1)
    check(no_terminal_controls(p.stderr) and "tensor 'w\\x1b]0;owned" in p.stderr, repr(p.stderr))
    p = cli("info", "x\x1b[2J", expect=1)
    check(no_terminal_controls(p.stderr) and "x\\x1b[2J" in p.stderr, repr(p.stderr))


def test_json_is_utf8_for_file_names_that_are_not():
    """File names are bytes: one that is no UTF-8 (latin-1 'caf\\xe9') still
    gives a JSON document a strict UTF-8 reader takes, with the byte written
    \\xe9, in results, errors and usage errors."""
    name = os.path.join(TMP, "caf\udce9.safetensors")   # the byte 0xe9
    shutil.copy(model_file("u.safetensors", seed=9), name)
    missing = os.fsencode(os.path.join(TMP, "gon\udce9"))
    for args, rc in (([b"hash", os.fsencode(name)], 0), ([b"hash", missing], 1),
                     ([b"load", missing, b"--name", b"x"], 1), ([b"frob\xe9"], 2)):
        p = subprocess.run([BIN.encode()] + args + [b"--json"], capture_output=True)
        check(p.returncode == rc, (args, p.returncode, p.stderr))
        doc = json.loads(p.stdout.decode("utf-8"))     # strict: no stray bytes
        check("\\xe9" in json.dumps(doc), doc)


def sparse_model(name, nbytes, fill=0):
    """A valid safetensors file of one U8 tensor of @nbytes, sparse (no data
    written but the last byte): cheap to create, costly to copy."""
    path = os.path.join(TMP, name)
    header = json.dumps({"w": {"dtype": "U8", "shape": [nbytes], "data_offsets": [0, nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.seek(8 + len(header) + nbytes - 1)
        f.write(bytes([fill]))
    return path


def test_load_per_node_publishes_a_copy_per_node_and_rm_removes_them():
    path = model_file("pn.safetensors", seed=7)
    name = PFX + "pn"
    a = load(path, name, "--per-node")
    check(a["per_node"] and not a["deduplicated"])
    names = region_names()
    copies = sorted(n for n in names if n.startswith(name + "@node"))
    diag("copies: %s" % copies)
    check(copies and names[copies[0]]["id"] == a["region_id"], "the first node's copy is NAME's")
    check(len({names[c]["id"] for c in copies}) == len(copies), "one region per node")
    info, _ = cli_json("info", name)
    check(info["hash"] == a["hash"] and info["node"] >= -1)
    again = load(path, name, "--per-node")
    check(again["already_loaded"])
    cli("rm", name)
    created.discard(name)
    names = region_names(all_=False)
    check(name not in names and not [n for n in names if n.startswith(name + "@node")],
          "rm removes every copy")
    p = cli("ls", "--per-node", expect=2)
    check("--per-node" in p.stderr and "load" in p.stderr)


def region_names(all_=True):
    ls, _ = cli_json("ls", *(["--all"] if all_ else []))
    return {n["name"]: r for r in ls["regions"] for n in r["names"]}


def test_load_checks_the_name_first_same_content_is_done():
    """A name that already holds the file's content: success at once, nothing
    copied (already_loaded); other content: EXISTS before anything is copied,
    even for a file far too big to copy; --replace moves the name."""
    a = model_file("n1.safetensors", seed=11)
    b = model_file("n2.safetensors", seed=12)
    name = PFX + "n"
    first = load(a, name)
    check(not first["already_loaded"])
    again = load(a, name)
    check(again["already_loaded"] and again["region_id"] == first["region_id"]
          and again["hash"] == first["hash"], again)
    p = cli("load", a, "--name", name)
    check(p.stdout.startswith("'%s' already holds %s" % (name, a)) and "nothing to do" in p.stdout, p.stdout)
    err, p = cli_json("load", b, "--name", name, expect=1)
    check(err["error"]["status"] == "EXISTS" and "other content" in err["error"]["message"]
          and "--replace" in err["error"]["message"], err)
    # 64 GiB of (sparse) data: more than any pool or tmpfs here, so copying
    # first would end in NO_SPACE (or take minutes), not in EXISTS at once.
    huge = sparse_model("huge.safetensors", 64 << 30)
    err, p = cli_json("load", huge, "--name", name, expect=1)
    check(err["error"]["status"] == "EXISTS" and "another size" in err["error"]["message"], err)
    check(region_names()[name]["id"] == first["region_id"], "the name still holds the first model")
    # Same content, other mode: not silently accepted.
    err, _ = cli_json("load", a, "--name", name, "--mode", "0600", expect=1)
    check(err["error"]["status"] == "EXISTS" and "mode" in err["error"]["message"], err)
    # --replace: the name moves to the new model; the old one's alias goes with it.
    rep = load(b, name, "--replace")
    check(not rep["already_loaded"] and rep["region_id"] != first["region_id"], rep)
    names = region_names()
    check(names[name]["id"] == rep["region_id"], "the name is on the new model")
    check("xxh3:" + first["hash"] not in names, "the replaced model's alias went with its last name")
    again = load(b, name, "--replace")
    check(again["already_loaded"] and again["region_id"] == rep["region_id"], again)
    cli("rm", name)
    created.discard(name)


def test_hash_goes_on_past_missing_files_like_sha256sum():
    a = model_file("h1.safetensors", seed=21)
    missing = os.path.join(TMP, "no-such-file")
    p = cli("hash", missing, a, TMP, a, expect=1)
    want = cli("hash", a).stdout
    check(p.stdout == want * 2, "the readable files are still hashed: %r" % p.stdout)
    check("cannot open '%s'" % missing in p.stderr and "'%s' is not a regular file" % TMP in p.stderr
          and "2 of 4 files could not be hashed" in p.stderr, p.stderr)
    out, _ = cli_json("hash", missing, a, expect=1)
    check([f["file"] for f in out["files"]] == [a] and out["errors"][0]["file"] == missing
          and out["errors"][0]["status"] == "NOT_FOUND" and out["error"]["status"] == "NOT_FOUND", out)


def test_a_fifo_is_refused_not_waited_on():
    """A named pipe nobody writes to is not a model file: load and hash say
    so at once instead of blocking in open() for ever."""
    fifo = os.path.join(TMP, "pipe.safetensors")
    os.mkfifo(fifo)
    name = PFX + "fifo"
    created.add(name)
    for args in (["hash", fifo], ["load", fifo, "--name", name]):
        p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=30)
        check(p.returncode == 1 and "'%s' is not a regular file" % fifo in p.stderr, (args, p.returncode, p.stderr))
    check(name not in region_names(), "nothing published")


def test_ls_json_gives_modes_in_octal_too():
    name = PFX + "oct"
    load(model_file("o.safetensors", seed=31), name, "--mode", "0644")
    r = region_names(all_=False)[name]
    n = [x for x in r["names"] if x["name"] == name][0]
    want = 0o644 if KMOD else 0o444
    check(n["mode"] == want and n["mode_octal"] == "%04o" % want, n)
    cli("rm", name)
    created.discard(name)


def as_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def test_ls_as_another_user_says_permission_hides_the_manifest():
    if os.geteuid() != 0:
        pytest.skip("needs root to run ls as another user")
    name = PFX + "priv"
    load(model_file("p.safetensors", seed=41), name, "--mode", "0600")
    p = subprocess.run([BIN, "ls"], capture_output=True, text=True, preexec_fn=as_nobody)
    check(p.returncode == 0, p.stderr)
    line = [l for l in p.stdout.splitlines() if l.startswith(name)]
    check(line and line[0].split()[1] == "region*", p.stdout)
    check("may not read th" in p.stdout and "hidden\n  by permission" in p.stdout, p.stdout)
    p = subprocess.run([BIN, "ls", "--json"], capture_output=True, text=True, preexec_fn=as_nobody)
    r = {n["name"]: x for x in json.loads(p.stdout)["regions"] for n in x["names"]}[name]
    check(r["readable"] is False and r["model"] is None, r)
    r = region_names(all_=False)[name]
    check(r["readable"] is True and r["model"] is not None, "root reads it")
    cli("rm", name)
    created.discard(name)


def test_load_over_another_users_name_advises_another_name():
    """A user cannot remove or replace another user's name (the directory is
    sticky): loading over one says to choose another name, not to rm it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run load as another user")
    path = model_file("o.safetensors", seed=42)
    os.chmod(TMP, 0o755)
    os.chmod(path, 0o644)
    for mode in ("0600", "0644"):
        name = PFX + "theirs" + mode
        load(path, name, "--mode", mode)
        p = subprocess.run([BIN, "load", path, "--name", name, "--json"], capture_output=True, text=True,
                           preexec_fn=as_nobody)
        msg = json.loads(p.stdout)["error"]["message"]
        check(p.returncode == 1 and json.loads(p.stdout)["error"]["status"] == "EXISTS", p.stdout)
        check("choose another --name (only its owner (uid 0) or root may remove or replace it)" in msg
              and "npushm rm" not in msg, msg)
        cli("rm", name)
        created.discard(name)


def region_file(name):
    if KMOD:
        return os.path.join(os.environ.get("NPUSHM_DIR") or "/run/npushm", name)
    return os.path.join(os.environ.get("NPUSHM_SHM_DIR") or "/dev/shm", "npushm." + name)


def test_ls_all_shows_removed_models_still_mapped():
    import mmap
    name = PFX + "gone"
    res = load(model_file("g.safetensors", seed=51), name)
    with open(region_file(name), "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    try:
        cli("rm", name)
        created.discard(name)
        ls, _ = cli_json("ls", "--all")
        r = [x for x in ls["regions"] if x["id"] == res["region_id"]]
        check(len(r) == 1 and r[0]["names"] == [] and r[0]["mappers"] == 1
              and r[0]["size"] == res["region_size"], ls)
        ls, _ = cli_json("ls")
        check(not any(x["id"] == res["region_id"] for x in ls["regions"]), "plain ls leaves it out")
        p = cli("ls")
        check("without a name still mapped" in p.stdout and "ls --all" in p.stdout, p.stdout)
        p = cli("ls", "--all")
        check("(no name)" in p.stdout, p.stdout)
    finally:
        m.close()
    ls, _ = cli_json("ls", "--all")
    check(not any(x["id"] == res["region_id"] for x in ls["regions"]), "gone once unmapped")


def test_shm_dir_that_does_not_exist_is_named():
    env = dict(os.environ, NPUSHM_SHM_DIR="/nonexistent/npushm", NPUSHM_BACKEND="posix")
    p = subprocess.run([BIN, "ls"], capture_output=True, text=True, env=env)
    check(p.returncode == 1 and "NPUSHM_SHM_DIR is '/nonexistent/npushm'" in p.stderr
          and "unset it" in p.stderr and "or set NPUSHM_SHM_DIR" not in p.stderr, p.stderr)
    p = subprocess.run([BIN, "ls", "--json"], capture_output=True, text=True, env=env)
    err = json.loads(p.stdout)["error"]
    check(p.returncode == 1 and err["status"] == "NO_DEVICE" and "NPUSHM_SHM_DIR is" in err["message"], err)


def test_help_and_version_for_every_command():
    p = cli("--version")
    version = open(os.path.join(ROOT, "VERSION")).read().strip()
    check(p.stdout == "npushm %s\n" % version, p.stdout)
    for cmd in ("load", "ls", "info", "rm", "hash", "help"):
        for args in ([cmd, "--help"], ["help", cmd], ["--help", cmd]):
            p = cli(*args)
            check(p.stdout.startswith("usage: npushm %s" % cmd) and "Exit status:" in p.stdout, (args, p.stdout))
    check("--replace" in cli("load", "--help").stdout)
    p = cli("--help")
    check(p.stdout.startswith("usage: npushm") and "Exit status: 0 success, 1 failure" in p.stdout, p.stdout)
    err, _ = cli_json("help", "frobnicate", expect=2)
    check(err["error"]["status"] == "USAGE", err)


def test_manual_pages_agree_with_the_help():
    """What npushm(1) and npushm-load(1) say where --help says it too: how
    --backend auto chooses (a mounted npushm filesystem at $NPUSHM_DIR, not
    /dev/npushm) and the bf16x3 error bound."""
    import re

    def page(name):
        text = subprocess.run(["man", "-l", os.path.join(ROOT, "docs", "man", name)], capture_output=True,
                              text=True, env=dict(os.environ, MANWIDTH="200")).stdout
        return re.sub(r"\s+", " ", re.sub(r"\u2010\s*", "", text))
    npushm1 = page("npushm.1")
    check("NPUSHM_DIR" in cli("--help").stdout and "$NPUSHM_DIR (default /run/npushm)" in npushm1
          and "when /dev/npushm exists" not in npushm1, npushm1)
    bound = re.search(r"less than (2\^-\d+)", page("npushm-load.1")).group(1)
    check("< %s of its terms" % bound in cli("load", "--help").stdout, bound)


def test_usage_errors_are_json_with_json():
    for args in (["frobnicate"], ["load", "x.safetensors"], ["ls", "--bogus"], ["ls", "extra"],
                 ["load", "f", "--mode"], ["info", "--all", "x"], ["--backend", "gpu", "ls"]):
        p = cli(*args, "--json", expect=2)
        err = json.loads(p.stdout)["error"]
        check(err["status"] == "USAGE" and err["message"] and err["usage"].startswith("usage: npushm"), (args, err))
        check(p.stderr.startswith("npushm: " + err["message"]), (args, p.stderr))
    p = cli("ls", "--bogus", expect=2)
    check(p.stdout == "" and "usage: npushm ls" in p.stderr, "without --json nothing on stdout")


def test_messages_name_no_repository_path_or_c_function():
    """What a user of the command sees speaks of commands, options and
    variables, not of the source tree or the C API."""
    import re
    bad = os.path.join(TMP, "bad2.safetensors")
    with open(bad, "wb") as f:
        f.write(b"\x08\x00\x00\x00\x00\x00\x00\x00{\"a\":1}")
    runs = [["info", "nothing-here"], ["rm", "nothing-here"], ["load", bad, "--name", PFX + "x"],
            ["hash", "/nonexistent"], ["--backend", "kmod", "ls"], ["frobnicate"], ["load", "--help"],
            ["--help"]]
    for args in runs:
        p = subprocess.run([BIN] + args, capture_output=True, text=True)
        text = p.stdout + p.stderr
        check(not re.search(r"\bnpushm_[a-z_]+\b|\b[\w/-]+\.(c|h|ko)\b|\b(docs|kmod|libnpushm|tools)/", text),
              (args, text))


def test_usage_errors_exit_2():
    for args in ([], ["frobnicate"], ["load", "x.safetensors"], ["load", "--name", "x"],
                 ["load", "f", "--name", "x", "--mode", "0777"], ["load", "f", "--name", "x", "--mode", "abc"],
                 ["load", "f", "--name", "x", "--mode", "0"], ["load", "f", "--name", "x", "--mode", "0200"],
                 ["load", "f", "--name", "x", "--mode", "0222"],
                 ["info"], ["rm"], ["ls", "extra"], ["--backend", "gpu", "ls"], ["info", "a", "b"], ["hash"]):
        p = cli(*args, expect=2)
        check(p.stderr.startswith("npushm: ") and "usage:" in p.stderr, (args, p.stderr))
    p = cli("--help")
    check(p.stdout.startswith("usage: npushm"))


def test_progress_bar_only_on_a_terminal():
    path = os.path.join(TMP, "big.safetensors")
    ref.write_raw(path, {"w": ("F32", [1024, 1024], struct.pack("<f", 1.0) * (1024 * 1024))})
    name = PFX + "tty"
    created.add(name)
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(BIN, [BIN, "load", path, "--name", name])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    check(os.WEXITSTATUS(status) == 0, out)
    text = out.decode(errors="replace")
    check("100% " in text and "[####" in text and "/s" in text, "progress bar drawn: %r" % text[:300])
    check("loaded '%s'" % name in text)
    # With --json on the same terminal: no bar, only the JSON document.
    cli("rm", name)
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(BIN, [BIN, "load", path, "--name", name, "--json"])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    check(b"#" not in out and json.loads(out.decode())["name"] == name, out[:300])
    cli("rm", name)
    created.discard(name)


def test_backend_option_selects_the_backend():
    ls, _ = cli_json("--backend", "posix", "ls")
    check(ls["backend"] == "posix")
    if KMOD:
        ls, _ = cli_json("--backend", "kmod", "ls")
        check(ls["backend"] == "kmod")
    elif not os.path.exists("/dev/npushm"):
        err, _ = cli_json("--backend", "kmod", "ls", expect=1)
        check(err["error"]["status"] == "NO_DEVICE" and "modprobe npushm" in err["error"]["message"])


def teardown_module(module):
    """Remove what a failed test left published, and the scratch directory."""
    for name in created:
        subprocess.run([BIN, "rm", name], capture_output=True)
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", __file__]))


def test_rm_takes_several_names_and_goes_on_past_a_missing_one():
    """`npushm rm A B C` removes each name as rm(1) does: one that does not exist is
    reported on stderr, the others are still removed, and the exit status is 1."""
    path = model_file("rm-many.safetensors", seed=31)
    a, b, missing = PFX + "rm-a", PFX + "rm-b", PFX + "rm-missing"
    load(path, a)
    load(path, b)
    p = cli("rm", a, missing, b, expect=1)
    created.discard(a)
    created.discard(b)
    check(p.stdout == "removed '%s'\nremoved '%s'\n" % (a, b), repr(p.stdout))
    check("cannot remove '%s'" % missing in p.stderr and
          "1 of 3 names could not be removed" in p.stderr, repr(p.stderr))
    check(cli("info", a, expect=1) and cli("info", b, expect=1))
    # JSON: the names removed, and the failures one by one
    load(path, a)
    load(path, b)
    out, p = cli_json("rm", a, b)
    created.discard(a)
    created.discard(b)
    check(out == {"removed": [a, b]}, out)
    load(path, a)
    out, p = cli_json("rm", missing, a, expect=1)
    created.discard(a)
    check(out["removed"] == [a] and out["error"]["status"] == "NOT_FOUND" and
          out["error"]["message"].startswith("cannot remove '%s'" % missing) and
          [e["name"] for e in out["errors"]] == [missing], out)
    load(path, a)
    out, p = cli_json("rm", missing, a, missing + "2", expect=1)
    created.discard(a)
    check(out["removed"] == [a] and
          out["error"]["message"].startswith("2 of 3 names could not be removed; the first: ") and
          [e["name"] for e in out["errors"]] == [missing, missing + "2"], out)
    # no name at all is a usage error
    p = cli("rm", expect=2)
    check("rm takes one or more NAMEs" in p.stderr, p.stderr)
