# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""kmod_cases.py - the cases of the Llama engine's kmod suite (run-kmod-vm.sh).

PyTorch is too slow to start under the VM's emulated CPU, so the reference
runs here: `prepare DIR MODELS` writes the models (gen_model.py, the issue's
small configuration: 2 layers, hidden 64, 4 heads, 2 KV heads; and one of
the same shapes with other values), the prompts (and bad.prompt.npy, an id
outside the vocabulary) and the reference's tokens and logits, plus
DIR/cases.txt: one "NAME MODEL PROMPT STEPS FLAGS..." line
per npushm-llama run the guest makes, in order (the prefix cases depend on
an earlier run's publish). After the VM has written OUT/NAME.ids.npy,
OUT/NAME.logits.npy, OUT/NAME.rc and OUT/NAME.log, `check DIR OUT` prints
one TAP line per case: f32 logits within 1e-4 of the reference's largest
magnitude at every step and the greedy tokens identical, the prefix
attached (or, for the other model, not) as the case says.
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "common"))
import engine_tests  # noqa: E402
import llama_ref  # noqa: E402

GEN = os.path.join(HERE, "..", "tools", "gen_model.py")
SMALL = ["--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--ffn", "128",
         "--vocab", "96", "--context", "64"]
MODELS = {"tiny": SMALL, "other": SMALL + ["--seed", "9"]}
TOL = 1e-4
STEPS = 16

# name, model, prompt (seed, length, shares the first 24 tokens of prompt "long"), flags,
# the prefix line wanted ("" for none)
CASES = [
    ("tp1", "tiny", "short", [], ""),
    ("tp2", "tiny", "short", ["--tp", "2"], ""),
    ("publish", "tiny", "long", ["--publish-prefix"], "prefix: published 16 tokens as "),
    ("attach", "tiny", "shares", ["--attach-prefix"], "prefix: attached 16 tokens"),
    ("attach-tp2", "tiny", "shares", ["--attach-prefix", "--tp", "2"],
     "prefix: attached 16 tokens"),
    ("other-model", "other", "shares", ["--attach-prefix"], "prefix: attached 0 tokens"),
]


def prompts():
    rng = np.random.default_rng(40)
    long = rng.integers(0, 96, 20, dtype=np.int64)
    return {"short": rng.integers(0, 96, 7, dtype=np.int64), "long": long,
            "shares": np.concatenate([long[:17], rng.integers(0, 96, 6, dtype=np.int64)])}


def prepare(d, models):
    import torch
    torch.set_num_threads(1)
    os.makedirs(d, exist_ok=True)
    os.makedirs(models, exist_ok=True)
    refs = {}
    for name, args in MODELS.items():
        path = os.path.join(models, "kmod-" + name + ".safetensors")
        if not os.path.exists(path):
            subprocess.run(["/usr/bin/python3", GEN] + args + [path], check=True)
        w, meta = llama_ref.read_safetensors(path)
        refs[name] = llama_ref.Llama(w, meta)
    ps = prompts()
    for p, ids in ps.items():
        np.save(os.path.join(d, p + ".prompt.npy"), ids)
    np.save(os.path.join(d, "bad.prompt.npy"), np.array([5, 96, 7]))   # 96: outside the vocabulary
    with open(os.path.join(d, "cases.txt"), "w") as f:
        for name, model, prompt, flags, _ in CASES:
            ids, logits = refs[model].generate(ps[prompt], STEPS)
            np.save(os.path.join(d, name + ".ref.ids.npy"), np.asarray(ids, dtype=np.int64))
            np.save(os.path.join(d, name + ".ref.logits.npy"), np.asarray(logits))
            f.write(" ".join([name, model, prompt, str(STEPS)] + flags) + "\n")


def check(d, out):
    def compare(name, log):
        line = next(c[4] for c in CASES if c[0] == name)
        msg = ""
        ids = np.load(os.path.join(out, name + ".ids.npy"))
        logits = np.load(os.path.join(out, name + ".logits.npy"))
        want_ids = np.load(os.path.join(d, name + ".ref.ids.npy"))
        want = np.load(os.path.join(d, name + ".ref.logits.npy"))
        if list(ids) != list(want_ids):
            msg += "tokens %s, reference %s; " % (list(ids), list(want_ids))
        if logits.shape != want.shape:
            msg += "logits of shape %s, reference %s; " % (logits.shape, want.shape)
        else:
            for s in range(want.shape[0]):
                err = float(np.abs(logits[s] - want[s]).max())
                if not err <= TOL * float(np.abs(want[s]).max()):
                    msg += "step %d differs by %.3g; " % (s, err)
        if line and not any(ln.startswith(line) for ln in log.splitlines()):
            msg += "no line '%s' in: %s" % (line, log)
        return msg
    return engine_tests.check_cases(out, "npushm-llama", [
        (name, "kmod backend: %s (%s model, %s)%s matches PyTorch" % (
            name, model, " ".join(flags) or "tp 1", ", " + line.strip() if line else ""))
        for name, model, _, flags, line in CASES], compare)


if __name__ == "__main__":
    engine_tests.cases_main(prepare, check)
