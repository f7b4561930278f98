#!/usr/bin/env python3
"""Writes tests/fixtures/metrics/*: hypothesis/reference sets and sacreBLEU's corpus BLEU and chrF
for each, which tests/unit/test_metrics.c checks src/eval/metrics.c against.

Usage (from the repository root; needs `pip install sacrebleu` and the Multi30k test set under
data/multi30k (data/get_multi30k.sh) or $MULTI30K_DIR):

    python3 tests/reference/make_metric_fixtures.py

Scores are sacreBLEU's defaults: BLEU() (tokenize 13a, case-sensitive, 4-grams, smooth 'exp',
no effective order) and CHRF() (char order 6, word order 0, beta 2, whitespace removed,
eps_smoothing False), one reference per segment.

Files (UTF-8):
  hyps.txt, refs.txt            the segments of all sets, set after set in the order of
                                expected.txt, one per line ('\\n'-terminated); inside a segment
                                "\\\\" is a backslash, "\\n" a newline, "\\r" a carriage return and
                                "\\u{HEX}" the code point HEX (used for control characters and
                                non-ASCII whitespace so that the files stay readable).
  expected.txt                  '#' comment lines (sacrebleu version, signatures), then one line
                                per set: name n score p1 p2 p3 p4 bp ratio sys_len ref_len chrf
                                (floats as Python repr, i.e. round-trip exact).
Everything is deterministic (random.Random with fixed seeds).
"""
import gzip
import os
import random
import sys

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "metrics")
DATA = os.environ.get("MULTI30K_DIR", "data/multi30k")


def escape(seg: str) -> str:
    out = []
    for ch in seg:
        c = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t" or ch == " ":
            out.append(ch)
        elif c < 0x20 or 0x7F <= c <= 0x9F or ch.isspace() or c in (0x200B, 0xFEFF):
            out.append("\\u{%X}" % c)
        else:
            out.append(ch)
    return "".join(out)


def unescape(line: str) -> str:
    out, i = [], 0
    while i < len(line):
        ch = line[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = line[i + 1]
        if nxt == "\\":
            out.append("\\")
            i += 2
        elif nxt == "n":
            out.append("\n")
            i += 2
        elif nxt == "r":
            out.append("\r")
            i += 2
        elif nxt == "u":
            j = line.index("}", i)
            out.append(chr(int(line[i + 3:j], 16)))
            i = j + 1
        else:
            raise ValueError(line)
    return "".join(out)


def write_segments(path, segs):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for s in segs:
            f.write(escape(s) + "\n")
    with open(path, encoding="utf-8", newline="\n") as f:
        back = [unescape(x) for x in f.read().split("\n")[:-1]]
    assert back == list(segs), path


# ----------------------------------------------------------------------------- perturbations

UNICODE_SWAPS = [("a", "ä"), ("o", "ö"), ("u", "ü"), ("ss", "ß"), ("e", "é"), ("i", "ï")]
EXTRA_WORDS = ["café", "naïve", "Straße", "—", "–", "“quoted”", "‘single’", "…", "über", "«ja»",
               "€5", "°C", "Ωmega", "🙂", "日本"]


def perturb(line: str, rng: random.Random, vocab) -> str:
    words = line.split()
    r = rng.random()
    if r < 0.08:
        return line  # unchanged
    if r < 0.09:
        return ""  # empty hypothesis
    if rng.random() < 0.35 and len(words) > 2:  # drop a word
        del words[rng.randrange(len(words))]
    if rng.random() < 0.3 and len(words) > 2:  # swap neighbours
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    if rng.random() < 0.25 and words:  # change case
        i = rng.randrange(len(words))
        words[i] = rng.choice([str.upper, str.lower, str.capitalize, str.swapcase])(words[i])
    if rng.random() < 0.25 and words:  # substitute a corpus word
        words[rng.randrange(len(words))] = rng.choice(vocab)
    if rng.random() < 0.1 and words:  # duplicate a word
        i = rng.randrange(len(words))
        words.insert(i, words[i])
    if rng.random() < 0.15 and words:  # unicode letters
        i = rng.randrange(len(words))
        a, b = rng.choice(UNICODE_SWAPS)
        words[i] = words[i].replace(a, b, 1)
    if rng.random() < 0.12:  # unicode word / symbol
        words.insert(rng.randrange(len(words) + 1), rng.choice(EXTRA_WORDS))
    if rng.random() < 0.05 and len(words) > 4:  # truncate
        words = words[: len(words) // 2]
    out = " ".join(words)
    p = rng.random()  # punctuation
    if p < 0.1:
        out = out.rstrip(".")
    elif p < 0.15:
        out = out.rstrip(".") + "!"
    elif p < 0.2:
        out = out.rstrip(".") + " ."
    elif p < 0.25:
        out = out.replace(" ", ", ", 1)
    elif p < 0.28:
        out = "\"" + out + "\""
    elif p < 0.3:
        out = out + "..."
    elif p < 0.32:
        out = out.replace(" ", "-", 1)
    return out


def read_gz_lines(name, count):
    with gzip.open(os.path.join(DATA, name), "rt", encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(count)]


# ----------------------------------------------------------------------------- sets

def build_sets():
    sets = []
    refs_en = read_gz_lines("test_2016_flickr.en.gz", 300)
    vocab = sorted({w for l in refs_en for w in l.split()})
    rng = random.Random(20240601)
    sets.append(("multi30k_en", [perturb(l, rng, vocab) for l in refs_en], refs_en))

    refs_de = read_gz_lines("test_2016_flickr.de.gz", 60)
    vocab_de = sorted({w for l in refs_de for w in l.split()})
    rng = random.Random(7)
    sets.append(("multi30k_de", [perturb(l, rng, vocab_de) for l in refs_de], refs_de))

    short = refs_en[:5]
    sets.append(("perfect", list(short), list(short)))
    sets.append(("no_match", ["xyz qqq", "vvv www", "kkk"], ["A dog runs.", "Big blue sea", "The end"]))
    sets.append(("no_match_chars", ["xyz", "qqq"], ["abc", "def"]))
    sets.append(("empty_hyp_lines", ["", refs_en[1], "", refs_en[3][:20], ""], refs_en[:5]))
    sets.append(("all_empty_hyps", ["", "", ""], refs_en[:3]))
    sets.append(("empty_refs", ["a cat sits", "", "some words here ."], ["", "", "some words there ."]))
    sets.append(("all_empty", ["", ""], ["", ""]))
    sets.append(("whitespace_only", ["   ", "\t", "a b"], [" ", "  \u00a0", "a b"]))
    sets.append(("single_short", ["Hi there."], ["Hi there!"]))
    sets.append(("single_word", ["dog"], ["dog"]))
    sets.append(("single_short_3tok", ["the dog barks"], ["the dog barks"]))
    sets.append(("longer_hyps",
                 [l + " and then some more words are added at the end ." for l in refs_en[10:20]],
                 refs_en[10:20]))
    sets.append(("shorter_hyps", [" ".join(l.split()[:3]) for l in refs_en[20:30]], refs_en[20:30]))
    # exp smoothing: unigrams and bigrams match, no 3-gram or 4-gram matches
    sets.append(("exp_smoothing", ["a b c d e f", "g h i j"], ["a b x c d y e f", "g h z i j"]))
    sets.append(("exp_smoothing_4only", ["a b c x d e f g"], ["a b c y d e f h"]))
    sets.append(("chrf_short_ref", ["abcdefgh", "xy", "ab cd"], ["ab", "xyzuvw", "abc"]))
    sets.append(("case_change", [l.upper() for l in refs_en[30:35]] + [l.lower() for l in refs_en[35:40]],
                 refs_en[30:40]))

    punct_pairs = [
        ("It's a-b test, isn't it?", "It's a - b test , isn't it ?"),
        ("It costs $5.00 in the U.S. today.", "It costs $ 5.00 in the U.S. today ."),
        ("He said \"hello\" and left...", "He said “hello” and left…"),
        ("Numbers: 1,000,000 and 3.14 and 3-4 and 10-20%.", "Numbers : 1,000,000 and 3.14 and 3 - 4 ."),
        ("e.g. etc. i.e., a.b.c.", "e.g. etc. i.e. , a.b.c."),
        ("Tom &amp; Jerry &lt;3 &quot;cats&quot; &gt; dogs &amp;lt;", "Tom & Jerry <3 \"cats\" > dogs &lt;"),
        ("<skipped> word <skip<skipped>ped> x", "word x"),
        ("hyphen-\nated line\nbreak", "hyphenated line break"),
        ("--\n\nodd", "- odd"),
        ("{braces} [brackets] (parens) <angle> |pipe| ~tilde^ `tick` _under_ @at #hash",
         "{ braces } [ brackets ] ( parens )"),
        ("a/b\\c*d+e=f;g:h", "a / b \\ c * d + e = f ; g : h"),
        ("Die Straße ist schön, nicht wahr? „Ja“, sagte er – müde.",
         "Die Strasse ist schön , nicht wahr ? \"Ja\" , sagte er - müde ."),
        ("Größe: 5.5 m. Übung macht den Meister.", "Grösse: 5,5 m . Übung macht den Meister ."),
        ("Ü.Ä,ö.ß,x", "Ü . Ä , ö . ß , x"),
        ("٣.٤ and ٣,x and 3.x and x.3 and ,5 .5", "٣ . ٤ and 3.x"),
        ("trailing spaces   \t \u00a0\u3000", "trailing spaces"),
        ("nbsp\u00a0inside\u2009thin\u3000ideo\u200bzero\x1cfs\x85nel\u2028ls",
         "nbsp inside thin ideo\u200bzero fs nel ls"),
        ("tabs\tand\r\ncrlf\rcr", "tabs and crlf cr"),
        ("emoji 🙂🙂 and 日本語 text", "emoji 🙂 and 日本語 text"),
        ("5-year-old boy's toy; 1990-2000", "5 - year-old boy ' s toy ; 1990 - 2000"),
        ("'single' quotes ''double'' ``tex''", "' single ' quotes"),
        ("...,,,...", ". . . , , ,"),
        ("end.", "end ."),
        ("a.", "a ."),
        (".", "."),
        ("  leading and   multiple   spaces  ", "leading and multiple spaces"),
        ("end-\n", "end-"),
        ("a&b c&d &amp", "a & b c & d & amp"),
        ("Mr. Smith's U.S.A. trip cost $1,234.56!", "Mr . Smith's U.S.A. trip cost $ 1,234.56 !"),
    ]
    for i, (h, r) in enumerate(punct_pairs):
        sets.append((f"punct_{i:02d}", [h], [r]))
        sets.append((f"punct_{i:02d}_self", [h], [h]))
    sets.append(("punct_all", [h for h, _ in punct_pairs], [r for _, r in punct_pairs]))
    return sets


def fmt(x: float) -> str:
    return repr(float(x))


def main():
    os.makedirs(OUT, exist_ok=True)
    sets = build_sets()
    names = [n for n, _, _ in sets]
    assert len(set(names)) == len(names)
    bleu, chrf = BLEU(), CHRF()
    lines = [
        f"# written by tests/reference/make_metric_fixtures.py with sacrebleu {sacrebleu.__version__}"
        f" (python {sys.version.split()[0]})",
        "# fields: name n score p1 p2 p3 p4 bp ratio sys_len ref_len chrf",
    ]
    all_hyps, all_refs = [], []
    for name, hyps, refs in sets:
        assert len(hyps) == len(refs)
        b = bleu.corpus_score(hyps, [refs])
        c = chrf.corpus_score(hyps, [refs])
        all_hyps += hyps
        all_refs += refs
        vals = [b.score] + list(b.precisions) + [b.bp, b.ratio]
        lines.append(" ".join([name, str(len(hyps))] + [fmt(v) for v in vals] +
                              [str(b.sys_len), str(b.ref_len), fmt(c.score)]))
    write_segments(os.path.join(OUT, "hyps.txt"), all_hyps)
    write_segments(os.path.join(OUT, "refs.txt"), all_refs)
    lines.insert(2, f"# BLEU signature: {bleu.get_signature()}")
    lines.insert(3, f"# chrF signature: {chrf.get_signature()}")
    with open(os.path.join(OUT, "expected.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(sets)} sets to {OUT}")


if __name__ == "__main__":
    main()
