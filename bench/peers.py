#!/usr/bin/env python3
"""peers.py — the Python parts of bench/compare_peers.sh (not a program of its own).

    python3 bench/peers.py spm-extract --checkpoint CK --out FILE
    python3 bench/peers.py ct2 --model DIR --spm FILE --input FILE --output FILE
                               [--batch N] [--compute-type T] [--beam K] [--length-penalty A]
    python3 bench/peers.py score --spm FILE --ref FILE --base NAME NAME=FILE...
    python3 bench/peers.py onmt-data --spm FILE --src FILE --tgt FILE --max-len N
                                     --out-src FILE --out-tgt FILE [--vocab FILE]
    python3 bench/peers.py encode --spm FILE --input FILE --output FILE
    python3 bench/peers.py decode --spm FILE --input FILE --output FILE
    python3 bench/peers.py onmt-train --minutes M -- ONMT_TRAIN_ARGS...

spm-extract: the SentencePiece model stored in a trainer checkpoint (its "spm" record, read and
checked by tools/export_ctranslate2.py's reader) written to FILE.

ct2: translates --input (plain or gzip, one sentence a line) with CTranslate2 on one thread
(intra_threads = inter_threads = 1) as `trainer translate --beam K` does (docs/export.md): the
lines sorted by their number of source pieces and cut into batches of N; each batch's limit
2·S + 10 steps (S its longest source, the limit counting </s>), as the trainer's batches are
limited; no start or end token on the source, min_decoding_length 0, the whole source
(max_input_length 0), </s> or <pad> ends a hypothesis; beam_size K with length_penalty A and
return_end_token, so that the length the penalty divides by counts </s> as the trainer's |Y|
does; an empty line translates to an empty line without decoding. Prints one JSON line:
{"load_s", "translate_s", "lines", "compute_type"} (the model load and the translate_batch calls,
perf_counter seconds).

score: sacreBLEU's corpus BLEU (its defaults: 13a tokenisation, exponential smoothing) of each
NAME=FILE against --ref, its line count, its target tokens (every line encoded with --spm and
its pieces counted, + 1 a line for </s>: the decoder steps, counted the same way for every
output), and the lines equal to --base's output. Prints one line a NAME:
"NAME bleu=B lines=N tokens=T equal=E" (equal: the lines equal to the base's, "-" for the base).

onmt-data: the training pairs of the trainer's corpus as OpenNMT-py reads them: both sides
encoded with the trainer's SentencePiece model into pieces separated by spaces, the pairs
filtered as the trainer filters them (1 to --max-len pieces a side, src/data/batch.c
batch_filter); --vocab FILE gets the model's pieces other than the four special ones
(<pad> <unk> <s> </s>: OpenNMT-py adds its own <blank> <unk> <s> </s>), one a line, so that
both models have the same V. With --batch-tokens B: the trainer's batches an epoch at B tokens
(src/data/batch.c batch_plan, the same filtered pairs) and the OpenNMT-py batch_size whose
batches an epoch are nearest to it (its batch_iter simulated on the corpus as one sorted bucket),
printed as "trainer_tokens_per_step=X" and "onmt_batch_size=N". encode / decode: the same encoding of one file, and pieces back
to text.

onmt-train: runs OpenNMT-py's onmt_train with ONMT_TRAIN_ARGS, stopped by wall time: M minutes
after its training loop starts (onmt.trainer.Trainer.train called; as the trainer's
train.max_hours counts from its own loop's start, after loading and encoding the data), at the
first step that ends after that, the weights are saved as OpenNMT-py saves them at the end of
training (the moving average when -average_decay is set) and it exits 0 with the line
"onmt-train: stopped after step N at X s of training". Needs OpenNMT-py 3.5.1.

Errors: a missing file or module ends with a message naming it (exit 1).
"""

import argparse
import gzip
import json
import os
import sys
import time

T0 = time.perf_counter()
HERE = os.path.dirname(os.path.abspath(__file__))


def die(msg):
    print("peers.py: " + msg, file=sys.stderr)
    sys.exit(1)


def read_lines(path):
    """Every line of a plain or gzip text file, without its newline."""
    try:
        with open(path, "rb") as f:
            magic = f.read(2)
        opener = gzip.open if magic == b"\x1f\x8b" else open
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="\n") as f:
            return [line.rstrip("\n").rstrip("\r") for line in f]
    except OSError as e:
        die("%s: cannot be read (%s)" % (path, e.strerror))


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")


def load_spm(path):
    try:
        import sentencepiece as spm
    except ImportError:
        die("%s cannot import sentencepiece; run bash scripts/setup.sh" % sys.executable)
    if not os.path.isfile(path):
        die("%s: no such SentencePiece model" % path)
    return spm.SentencePieceProcessor(model_file=path)


def cmd_spm_extract(a):
    sys.path.insert(0, os.path.join(HERE, "..", "tools"))
    import export_ctranslate2 as ex
    try:
        ck = ex.Checkpoint(a.checkpoint)
        if "spm" not in ck.records:
            die("checkpoint %s has no SentencePiece model (no \"spm\" record)" % a.checkpoint)
        data = ck.read("spm")
    except ex.ExportError as e:
        die(str(e))
    with open(a.out, "wb") as f:
        f.write(data)


def cmd_ct2(a):
    try:
        import ctranslate2
    except ImportError:
        die("%s cannot import ctranslate2; run bash scripts/setup.sh" % sys.executable)
    sp = load_spm(a.spm)
    src = [sp.encode(line, out_type=str) for line in read_lines(a.input)]
    t = time.perf_counter()
    tr = ctranslate2.Translator(a.model, device="cpu", compute_type=a.compute_type,
                                intra_threads=1, inter_threads=1)
    load_s = time.perf_counter() - t
    out = [""] * len(src)
    order = sorted((i for i in range(len(src)) if src[i]), key=lambda i: (len(src[i]), i))
    t = time.perf_counter()
    for k in range(0, len(order), a.batch):
        idx = order[k:k + a.batch]
        batch = [src[i] for i in idx]
        limit = 2 * max(len(s) for s in batch) + 10
        res = tr.translate_batch(batch, beam_size=a.beam, length_penalty=a.length_penalty,
                                 patience=1, max_batch_size=0, max_input_length=0,
                                 min_decoding_length=0, max_decoding_length=limit,
                                 end_token=["</s>", "<pad>"], return_end_token=True,
                                 num_hypotheses=1)
        for i, r in zip(idx, res):
            hyp = r.hypotheses[0]
            while hyp and hyp[-1] in ("</s>", "<pad>"):
                hyp = hyp[:-1]
            out[i] = sp.decode(hyp)
    translate_s = time.perf_counter() - t
    write_lines(a.output, out)
    print(json.dumps({"load_s": round(load_s, 4), "translate_s": round(translate_s, 4),
                      "lines": len(src), "compute_type": tr.compute_type}))


def cmd_score(a):
    try:
        import sacrebleu
    except ImportError:
        die("%s cannot import sacrebleu (pip install sacrebleu)" % sys.executable)
    sp = load_spm(a.spm)
    ref = read_lines(a.ref)
    outs = []
    for item in a.hyps:
        name, eq, path = item.partition("=")
        if not eq:
            die("score: '%s' is not NAME=FILE" % item)
        outs.append((name, read_lines(path)))
    base = dict(outs).get(a.base)
    for name, hyp in outs:
        if len(hyp) != len(ref):
            die("score: %s has %d lines, the reference %d" % (name, len(hyp), len(ref)))
        bleu = sacrebleu.corpus_bleu(hyp, [ref])
        tokens = sum(len(sp.encode(h)) + 1 for h in hyp)
        equal = "-" if name == a.base or base is None else str(
            sum(x == y for x, y in zip(hyp, base)))
        print("%s bleu=%.2f lines=%d tokens=%d equal=%s" % (name, bleu.score, len(hyp), tokens,
                                                            equal))


def cmd_onmt_data(a):
    sp = load_spm(a.spm)
    src, tgt = read_lines(a.src), read_lines(a.tgt)
    if len(src) != len(tgt):
        die("onmt-data: %s has %d lines, %s %d" % (a.src, len(src), a.tgt, len(tgt)))
    lens = []
    with open(a.out_src, "w", encoding="utf-8") as fs, open(a.out_tgt, "w", encoding="utf-8") as ft:
        for s, t in zip(src, tgt):
            ps, pt = sp.encode(s, out_type=str), sp.encode(t, out_type=str)
            if not (1 <= len(ps) <= a.max_len and 1 <= len(pt) <= a.max_len):
                continue
            fs.write(" ".join(ps) + "\n")
            ft.write(" ".join(pt) + "\n")
            lens.append((len(ps), len(pt)))
    kept = len(lens)
    if a.vocab:
        specials = {"<pad>", "<unk>", "<s>", "</s>"}
        pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
        write_lines(a.vocab, [p for p in pieces if p not in specials])
    print("onmt-data: %d of %d pairs kept (1 to %d pieces a side), V = %d"
          % (kept, len(src), a.max_len, sp.get_piece_size()))
    if a.batch_tokens and kept:
        lens.sort()
        nb = trainer_batches(lens, a.batch_tokens)
        bs = onmt_batch_size(lens, nb, a.batch_tokens)
        tokens = sum(s + t + 1 for s, t in lens)
        print("onmt-data: the trainer's batches of %d tokens: %d an epoch, "
              "trainer_tokens_per_step=%.0f; OpenNMT-py onmt_batch_size=%d: %d batches an epoch"
              % (a.batch_tokens, nb, tokens / nb, bs, onmt_batches(lens, bs)))


def trainer_batches(lens, batch_tokens):
    """Batches an epoch of the trainer (src/data/batch.c batch_plan): the pairs sorted by
    (source, target) length, each batch the longest run with B · (S + T) <= batch_tokens, S and T
    its longest source and target, T counting </s>."""
    nb, k, n = 0, 0, len(lens)
    while k < n:
        first, S, T = k, 0, 0
        while k < n:
            S2, T2 = max(S, lens[k][0]), max(T, lens[k][1] + 1)
            if k > first and (k - first + 1) * (S2 + T2) > batch_tokens:
                break
            S, T, k = S2, T2, k + 1
        nb += 1
    return nb


def onmt_batches(lens, batch_size):
    """Batches an epoch of OpenNMT-py 3.5 (onmt/inputters/dynamic_iterator.py batch_iter, the
    whole corpus one bucket sorted by length, batch_type tokens): a batch grows while
    B · max(S, T + 2) (its longest, the target with <s> and </s>) stays <= batch_size; the
    example that passes it starts the next batch."""
    nb, count, maxlen = 0, 0, 0
    for s, t in lens:
        count, maxlen = count + 1, max(maxlen, s, t + 2)
        if count * maxlen >= batch_size:
            if count * maxlen > batch_size and count > 1:
                nb, count, maxlen = nb + 1, 1, max(s, t + 2)
            else:
                nb, count, maxlen = nb + 1, 0, 0
    return nb + (count > 0)


def onmt_batch_size(lens, target, hi):
    """The OpenNMT-py batch_size in 1..4·hi whose batches an epoch are nearest target (the
    smaller of two as near)."""
    lo, top = 1, 4 * hi
    while lo < top:  # the smallest size with at most target batches (fewer as it grows)
        mid = (lo + top) // 2
        if onmt_batches(lens, mid) <= target:
            top = mid
        else:
            lo = mid + 1
    best = lo
    if lo > 1 and abs(onmt_batches(lens, lo - 1) - target) <= abs(onmt_batches(lens, lo) - target):
        best = lo - 1
    return best


def cmd_encode(a):
    sp = load_spm(a.spm)
    write_lines(a.output, [" ".join(sp.encode(line, out_type=str)) for line in read_lines(a.input)])


def cmd_decode(a):
    sp = load_spm(a.spm)
    write_lines(a.output, [sp.decode(line.split()) for line in read_lines(a.input)])


def cmd_onmt_train(a, rest):
    try:
        import onmt.trainer
        from onmt.bin.train import _get_parser, train as onmt_run
    except ImportError as e:
        die("%s cannot import OpenNMT-py (%s)" % (sys.executable, e))
    opt, unknown = _get_parser().parse_known_args(rest)
    if unknown:  # onmt_train itself ignores them; a misspelt option would change the recipe
        die("onmt-train: OpenNMT-py does not know %s" % " ".join(unknown))
    budget = 60.0 * a.minutes
    state = {}

    class Stop(Exception):
        pass

    train = onmt.trainer.Trainer.train
    report = onmt.trainer.Trainer._maybe_report_training

    def timed_train(self, *args, **kwargs):
        state["t0"] = time.perf_counter()
        return train(self, *args, **kwargs)

    def report_and_check(self, step, num_steps, learning_rate, report_stats):
        stats = report(self, step, num_steps, learning_rate, report_stats)
        elapsed = time.perf_counter() - state["t0"]
        if elapsed >= budget:
            if self.model_saver is not None:
                self.model_saver.save(step, moving_average=self.moving_average)
            state["step"], state["elapsed"] = step, elapsed
            raise Stop()
        return stats

    onmt.trainer.Trainer.train = timed_train
    onmt.trainer.Trainer._maybe_report_training = report_and_check
    try:
        onmt_run(opt)
    except Stop:
        pass
    if "step" not in state:
        die("onmt-train: OpenNMT-py ended before the time budget (train_steps reached?)")
    print("onmt-train: stopped after step %d at %.1f s of training"
          % (state["step"], state["elapsed"]), flush=True)


def main():
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:
        k = argv.index("--")
        argv, rest = argv[:k], argv[k + 1:]
    ap = argparse.ArgumentParser(prog="peers.py", description="the Python parts of "
                                 "bench/compare_peers.sh")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("spm-extract")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("ct2")
    for k in ("--model", "--spm", "--input", "--output"):
        p.add_argument(k, required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--compute-type", default="float32")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--length-penalty", type=float, default=1.0)
    p = sub.add_parser("score")
    p.add_argument("--spm", required=True)
    p.add_argument("--ref", required=True)
    p.add_argument("--base", default="")
    p.add_argument("hyps", nargs="+")
    p = sub.add_parser("onmt-data")
    for k in ("--spm", "--src", "--tgt", "--out-src", "--out-tgt"):
        p.add_argument(k, required=True)
    p.add_argument("--max-len", type=int, required=True)
    p.add_argument("--batch-tokens", type=int, default=0)
    p.add_argument("--vocab")
    for name in ("encode", "decode"):
        p = sub.add_parser(name)
        for k in ("--spm", "--input", "--output"):
            p.add_argument(k, required=True)
    p = sub.add_parser("onmt-train")
    p.add_argument("--minutes", type=float, required=True)
    a = ap.parse_args(argv)
    if a.cmd == "onmt-train":
        return cmd_onmt_train(a, rest)
    if rest:
        ap.error("arguments after -- belong to onmt-train only")
    if a.cmd == "ct2" and (a.batch < 1 or a.beam < 1):
        ap.error("--batch and --beam must be >= 1")
    {"spm-extract": cmd_spm_extract, "ct2": cmd_ct2, "score": cmd_score,
     "onmt-data": cmd_onmt_data, "encode": cmd_encode, "decode": cmd_decode}[a.cmd](a)


if __name__ == "__main__":
    main()
