#!/usr/bin/env python3
"""ct2_compare.py — the greedy translations of `trainer translate` and of CTranslate2 on the same
lines must be equal (tests/slow/ct2_roundtrip.sh runs it on a model tools/export_ctranslate2.py
exported).

    python3 tests/slow/ct2_compare.py TRAINER CKPT CT2_DIR SRC_FILE [N]

Inputs: the trainer binary, the checkpoint, the CTranslate2 folder exported from it, a text file
of source lines (the first N are used, default all). The SentencePiece model is the one stored in
the checkpoint (read through tools/export_ctranslate2.py's reader), so both sides segment alike.

How: `trainer translate` (greedy) once on all lines; CTranslate2's translate_batch with
beam_size=1 on the SentencePiece pieces of each line, as the trainer decodes: the whole source
(max_input_length=0, no cut), at most 2·S + 10 output tokens, no minimum length
(min_decoding_length=0; CTranslate2's default of 1 forbids an empty translation), ending at
</s> or <pad> (the trainer's translation also ends at a <pad>). A line's pieces are decoded to
text as the trainer decodes its ids (the same SentencePiece model; <pad>, <s>, </s> dropped),
and the texts must be equal. The trainer caps a batch's translations at 2·S + 10 of the batch's
longest source, so a line whose greedy translation has not ended within its own 2·S + 10 is
translated again by the trainer alone and compared up to that length.

Output: one line per difference and a summary "ct2_compare: E of N lines equal (C capped at
2·S + 10)". Exit 0 when every line is equal, 1 otherwise; errors (a tool that does not run) exit
2. Sources: src/eval/translate.c (batching, the 2·S + 10 limit),
src/eval/decode.c (greedy from BOS), CTranslate2's translate_batch documentation.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

import export_ctranslate2 as ex  # noqa: E402

SPECIALS = (ex.TOKEN_PAD, ex.TOKEN_BOS, ex.TOKEN_EOS)  # dropped by spm_decode (src/data/spm.cc)


def trainer_translate(trainer, ckpt, lines):
    p = subprocess.run([trainer, "translate", "--checkpoint", ckpt],
                       input="".join(l + "\n" for l in lines), capture_output=True, text=True)
    if p.returncode != 0:
        print("ct2_compare: trainer translate exited %d:\n%s" % (p.returncode, p.stderr[-2000:]))
        sys.exit(2)
    out = p.stdout.split("\n")
    if len(out) != len(lines) + 1 or out[-1] != "":
        print("ct2_compare: trainer translate wrote %d lines for %d" % (len(out) - 1, len(lines)))
        sys.exit(2)
    return out[:-1]


def main():
    if len(sys.argv) not in (5, 6):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    trainer, ckpt_path, ct2_dir, src = sys.argv[1:5]
    import ctranslate2
    import sentencepiece as spm
    with open(src, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(sys.argv) == 6:
        lines = lines[:int(sys.argv[5])]
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(ex.Checkpoint(ckpt_path).read("spm"))
    ours = trainer_translate(trainer, ckpt_path, lines)
    tr = ctranslate2.Translator(ct2_dir, device="cpu", inter_threads=1, intra_threads=1)
    sources = [sp.encode(l, out_type=str) for l in lines]
    longest = max(len(s) for s in sources)
    res = tr.translate_batch(sources, beam_size=1, max_input_length=0,
                             max_decoding_length=2 * longest + 10, min_decoding_length=0,
                             end_token=["</s>", "<pad>"], return_end_token=True)
    equal = capped = 0
    for i, (line, s, r) in enumerate(zip(lines, sources, res)):
        cap = 2 * len(s) + 10
        hyp = r.hypotheses[0]
        want = ours[i]
        if len(s) == 0:  # the trainer translates an empty source to nothing
            hyp = []
        elif len(hyp) >= cap and hyp[cap - 1] not in ("</s>", "<pad>"):
            capped += 1  # not ended within 2·S + 10: the trainer alone on this line
            hyp = hyp[:cap]
            want = trainer_translate(trainer, ckpt_path, [line])[0]
        ids = []
        for p in hyp:
            t = sp.piece_to_id(p)
            if t == ex.TOKEN_EOS or t == ex.TOKEN_PAD:
                break
            if t not in SPECIALS:
                ids.append(t)
        got = sp.decode(ids)
        if got == want:
            equal += 1
        else:
            print("line %d differs:\n  source   %s\n  trainer  %s\n  ct2      %s\n  pieces   %s"
                  % (i + 1, line, want, got, " ".join(hyp)))
    print("ct2_compare: %d of %d lines equal (%d capped at 2·S + 10); CTranslate2 %s"
          % (equal, len(lines), capped, ctranslate2.__version__))
    return 0 if equal == len(lines) else 1


if __name__ == "__main__":
    sys.exit(main())
