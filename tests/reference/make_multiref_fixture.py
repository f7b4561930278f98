#!/usr/bin/env python3
"""Writes tests/fixtures/metrics/multiref.txt: hypothesis sets scored against several references
per segment by sacreBLEU, which tests/unit/test_metrics_refs.c checks src/eval/metrics.c's
bleu_corpus_refs and chrf_corpus_refs against.

Usage (from the repository root; needs `pip install sacrebleu==2.6.0` and the Multi30k test set
under data/multi30k, data/get_multi30k.sh):

    python3 tests/reference/make_multiref_fixture.py

Scores are sacreBLEU's defaults, BLEU() and CHRF(), given every reference stream (none None).
File format (UTF-8, no tab inside a segment):
  '#' comment lines (sacrebleu version, signatures), then per set:
  set NAME NREFS N
  N lines: hypothesis TAB reference 1 TAB ... TAB reference NREFS
  expect score p1 p2 p3 p4 bp ratio sys_len ref_len chrf   (floats as Python repr)
Everything is deterministic (random.Random with fixed seeds).
"""
import gzip
import os
import random

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "metrics", "multiref.txt")
DATA = os.path.join(ROOT, "data", "multi30k", "test_2016_flickr.en.gz")


def perturb(rng, s, p):
    """Drops, repeats, swaps or replaces words of s, each with probability p."""
    w = s.split()
    out = []
    for i, t in enumerate(w):
        r = rng.random()
        if r < p / 4:
            continue
        if r < p / 2:
            out += [t, t]
        elif r < 3 * p / 4 and out:
            out.insert(len(out) - 1, t)
        elif r < p:
            out.append(rng.choice(["a", "the", "man", "dog", "is", ",", ".", "Ünïcode", "5-6"]))
        else:
            out.append(t)
    return " ".join(out) if out else s


def main():
    refs = [l.decode("utf-8").rstrip("\n") for l in gzip.open(DATA)]
    sets = []
    rng = random.Random(40)
    # two references: the test set's and a paraphrase-like perturbation of it
    seg = refs[:120]
    sets.append(("two_refs", [perturb(rng, s, 0.3) for s in seg], [seg, [perturb(rng, s, 0.2) for s in seg]]))
    # four references, short hypotheses with repeated n-grams (clipping at the largest count)
    seg = refs[200:260]
    r4 = [seg] + [[perturb(rng, s, 0.35) for s in seg] for _ in range(3)]
    hyps = [" ".join((s.split()[:3]) * 2) for s in seg]
    sets.append(("four_refs_repeats", hyps, r4))
    # closest reference length: the hypothesis as long as one reference is short of another
    hyps, ra, rb = [], [], []
    for k, s in enumerate(refs[300:340]):
        w = s.split()
        hyps.append(" ".join(w))
        ra.append(" ".join(w[: max(1, len(w) - 2)]))
        rb.append(" ".join(w + ["and", "more"][: 2 if k % 2 else 1] * 1) + (" extra" if k % 3 == 0 else ""))
    sets.append(("length_ties", hyps, [ra, rb]))
    # chrF: equal references (the first of equals), one empty reference string among them
    seg = refs[400:430]
    r2 = [s if i % 3 else "" for i, s in enumerate(seg)]
    sets.append(("equal_and_empty", [perturb(rng, s, 0.25) for s in seg], [seg, list(seg), r2]))
    # one reference: the single-reference functions' numbers again
    seg = refs[500:540]
    sets.append(("one_ref", [perturb(rng, s, 0.3) for s in seg], [seg]))

    with open(OUT, "w", encoding="utf-8") as f:
        f.write(f"# sacrebleu {sacrebleu.__version__}; BLEU() and CHRF() defaults, every reference given\n")
        for name, hyps, rs in sets:
            for x in [*hyps] + [t for r in rs for t in r]:
                assert "\t" not in x and "\n" not in x
            bm, cm = BLEU(), CHRF()
            b = bm.corpus_score(hyps, rs)
            c = cm.corpus_score(hyps, rs)
            f.write(f"# {name}: BLEU {bm.get_signature()} chrF {cm.get_signature()}\n")
            f.write(f"set {name} {len(rs)} {len(hyps)}\n")
            for i, h in enumerate(hyps):
                f.write("\t".join([h] + [r[i] for r in rs]) + "\n")
            vals = [b.score] + list(b.precisions) + [b.bp, b.ratio, b.sys_len, b.ref_len, c.score]
            f.write("expect " + " ".join(repr(float(v)) for v in vals) + "\n")


if __name__ == "__main__":
    main()
