#!/usr/bin/env python3
"""Writes tests/fixtures/bootstrap/*: two systems' hypotheses, their references, a matrix of
bootstrap resample indices, and what sacreBLEU's paired bootstrap (`--paired-bs`) computes from
them, which tests/unit/test_significance.c checks src/eval/significance.c against.

Usage (from the repository root; needs `pip install sacrebleu numpy` and the Multi30k test set
under data/multi30k (data/get_multi30k.sh) or $MULTI30K_DIR):

    python3 tests/reference/make_bootstrap_fixture.py

Two checks are prepared:
  1. exact: sacreBLEU's own functions (BLEU sufficient statistics, _compute_score_from_stats,
     estimate_ci, _compute_p_value) applied to the resamples in idx.txt, exactly as its
     _paired_bs_test applies them to the resamples it draws: our statistics given the same
     indices must agree to rounding;
  2. seeded: sacreBLEU's _paired_bs_test itself (1000 resamples, its default seed 12345), whose
     indices come from numpy's generator: ours draws others, so the C test compares the figures
     within stated sampling tolerances.

Files:
  hyps_base.txt, hyps_sys.txt, refs.txt   one segment per line (UTF-8, no escapes needed)
  idx.txt       one resample per line: n space-separated 0-based segment indices
  expected.txt  '#' comments, then "key value" lines (floats as Python repr)
Deterministic: random.Random(7) for the noise, numpy.random.default_rng(12345) for idx.txt.
"""
import gzip
import os
import random

import numpy as np
import sacrebleu
from sacrebleu.metrics import BLEU
from sacrebleu.significance import _compute_p_value, _paired_bs_test, estimate_ci

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "bootstrap")
DATA = os.environ.get("MULTI30K_DIR", "data/multi30k")
N, R_EXACT, R_SEEDED = 120, 200, 1000


def noisy(rng, seg, p):
    """Drops, duplicates or swaps words with probability p each: a plausible bad translation."""
    w = seg.split()
    out = []
    for t in w:
        u = rng.random()
        if u < p:
            continue
        out.append(t)
        if u > 1 - p / 2:
            out.append(t)
    for i in range(len(out) - 1):
        if rng.random() < p / 2:
            out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def main():
    with gzip.open(os.path.join(DATA, "test_2016_flickr.en.gz"), "rt", encoding="utf-8") as f:
        refs = [l.rstrip("\n") for l in f][:N]
    rng = random.Random(7)
    base = [noisy(rng, r, 0.20) for r in refs]
    sys_ = [noisy(rng, r, 0.18) for r in refs]
    os.makedirs(OUT, exist_ok=True)
    for name, segs in (("refs", refs), ("hyps_base", base), ("hyps_sys", sys_)):
        with open(os.path.join(OUT, name + ".txt"), "w", encoding="utf-8") as f:
            f.write("".join(s + "\n" for s in segs))

    metric = BLEU()
    bl_stats = np.array(metric._extract_corpus_statistics(base, [refs]), dtype="float32")
    sy_stats = np.array(metric._extract_corpus_statistics(sys_, [refs]), dtype="float32")
    bl_full = metric._compute_score_from_stats(bl_stats.sum(0)).score
    sy_full = metric._compute_score_from_stats(sy_stats.sum(0)).score

    idx = np.random.default_rng(12345).choice(N, size=(R_EXACT, N), replace=True)
    with open(os.path.join(OUT, "idx.txt"), "w") as f:
        for row in idx:
            f.write(" ".join(str(int(i)) for i in row) + "\n")
    b = np.array([metric._compute_score_from_stats(s.sum(0)).score for s in bl_stats[idx]])
    s = np.array([metric._compute_score_from_stats(x.sum(0)).score for x in sy_stats[idx]])
    sys_mean, sys_ci = estimate_ci(s)
    base_mean, base_ci = estimate_ci(b)
    absd = np.abs(s - b)
    p = _compute_p_value(absd - absd.mean(), abs(bl_full - sy_full))

    # sacreBLEU's own paired-bs run (its indices, its default seed)
    _, res = _paired_bs_test({"BLEU": (bl_stats.tolist(), metric._compute_score_from_stats(
        bl_stats.sum(0)))}, "sys", sys_, [refs], {"BLEU": metric}, n_samples=R_SEEDED,
        seed=12345)
    r = res["BLEU"]

    with open(os.path.join(OUT, "expected.txt"), "w") as f:
        f.write(f"# sacrebleu {sacrebleu.__version__}, numpy {np.__version__}\n")
        f.write(f"# {metric.get_signature()}\n")
        f.write(f"n {N}\nresamples {R_EXACT}\n")
        f.write(f"base_bleu {bl_full!r}\nsys_bleu {sy_full!r}\n")
        f.write(f"base_mean {float(base_mean)!r}\nbase_ci {float(base_ci)!r}\n")
        f.write(f"sys_mean {float(sys_mean)!r}\nsys_ci {float(sys_ci)!r}\n")
        f.write(f"p {float(p)!r}\n")
        f.write(f"seeded_resamples {R_SEEDED}\n")
        f.write(f"seeded_sys_mean {float(r.mean)!r}\nseeded_sys_ci {float(r.ci)!r}\n")
        f.write(f"seeded_p {float(r.p_value)!r}\n")
    print(f"base {bl_full:.2f} sys {sy_full:.2f}; exact: mean {sys_mean:.2f} ± {sys_ci:.2f} "
          f"p {p:.4f}; seeded: mean {r.mean:.2f} ± {r.ci:.2f} p {r.p_value:.4f}")


if __name__ == "__main__":
    main()
