# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""kmod_cases.py - the cases of the BERT engine's kmod suite (run-kmod-vm.sh).

PyTorch is too slow to start under the VM's emulated CPU, so the reference
runs natively: `prepare DIR` writes padded batches and the reference's
outputs for them, plus DIR/cases.txt (one "NAME MODEL TP" line per engine
run the guest makes); after the VM has written OUT/NAME.hidden.npy,
OUT/NAME.pooled.npy and OUT/NAME.rc, `check DIR OUT` prints one TAP line per
case (agreement within 1e-4 of the reference's largest magnitude).
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "common"))

import bert_ref  # noqa: E402
import engine_tests  # noqa: E402
from test_bert import batch  # noqa: E402

# (name, model, tp, batch kind, vocab, positions)
CASES = [
    ("tiny-tp1-right", "tiny", 1, "right-padded", 100, 32),
    ("tiny-tp1-left", "tiny", 1, "left-padded", 100, 32),
    ("tiny-tp2-mixed", "tiny", 2, "mixed", 100, 32),
    ("tiny3-tp3-right", "tiny3", 3, "right-padded", 120, 40),
]


def prepare(d, models):
    import torch
    torch.set_num_threads(1)
    os.makedirs(d, exist_ok=True)
    refs = {}
    with open(os.path.join(d, "cases.txt"), "w") as f:
        for i, (name, model, tp, kind, vocab, pos) in enumerate(CASES):
            if model not in refs:
                w, meta = bert_ref.read_safetensors(os.path.join(models, model + ".safetensors"))
                refs[model] = bert_ref.Bert(w, bert_ref.bert_heads(meta, w))
            ids, types, mask = batch(kind, vocab, pos, seed=100 + i)
            for part, a in (("ids", ids), ("types", types), ("mask", mask)):
                np.save(os.path.join(d, "%s.%s.npy" % (name, part)), a)
            h, p = refs[model](torch.from_numpy(ids), torch.from_numpy(types), torch.from_numpy(mask))
            np.save(os.path.join(d, name + ".ref.hidden.npy"), h.numpy())
            np.save(os.path.join(d, name + ".ref.pooled.npy"), p.numpy())
            f.write("%s %s %d\n" % (name, model, tp))


def check(d, out):
    def compare(name, log):
        msg = ""
        for part in ("hidden", "pooled"):
            got = np.load(os.path.join(out, "%s.%s.npy" % (name, part)))
            want = np.load(os.path.join(d, "%s.ref.%s.npy" % (name, part)))
            err = float(np.abs(got.astype(np.float64) - want).max())
            ref = float(np.abs(want).max())
            if got.shape != want.shape or not err <= 1e-4 * ref:
                msg += "%s: shape %s vs %s, max error %.3g vs largest %.3g; " % (
                    part, got.shape, want.shape, err, ref)
        return msg
    return engine_tests.check_cases(out, "npushm-bert", [
        (name, "kmod backend, %s at tp %d (%s) matches PyTorch" % (model, tp, kind))
        for name, model, tp, kind, _, _ in CASES], compare)


if __name__ == "__main__":
    engine_tests.cases_main(prepare, check)
