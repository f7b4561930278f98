#!/usr/bin/python3
"""bench_rnn_torch.py — the same LSTM encoder–decoder with Luong attention in PyTorch, trained on
the batches bench_rnn dumped, timed the same way.

    /usr/bin/python3 bench/bench_rnn_torch.py DUMP [--threads T]

Reads DUMP (format at the top of bench/bench_rnn.c and in bench/README.md): model sizes, dropout,
label smoothing, optimiser settings, thread count and W warm-up + N batches. Runs W warm-up and
N timed training steps (zero grad, forward + backward, clip_grad_norm_, Adam) and prints

    pytorch: X tokens/s (N steps, T threads)

tokens = non-padding source + target tokens of the timed batches, as bench_rnn counts them.

The model is written the way a PyTorch user would write it (see the report in bench/README.md):
  source embedding → nn.LSTM(bidirectional, H/2 per direction) over pack_padded_sequence;
  decoder state initialised with [→h_final; ←h_final] (and the same for c) of each encoder layer;
  nn.LSTMCell stack with input feeding: layer 0 reads [emb(y_{t-1}); h̃_{t-1}];
  Luong general score h_tᵀ W_a h̄_s, source padding masked with -inf, softmax, context c_t;
  h̃_t = tanh(W_c [c_t; h_t]) (no bias); logits = Linear(H → V)(dropout(h̃_t));
  dropout on both embeddings, between layers and on h̃;
  F.cross_entropy(label_smoothing=ε, ignore_index=PAD, reduction='sum') / target tokens.
nn.LSTM / nn.LSTMCell carry two bias vectors (b_ih, b_hh) where our cell has one; the parameter
check subtracts the redundant one.
"""
import argparse
import os
import struct
import sys
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD = 0


def read_dump(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 12 or data[:8] != b"BRNNDUMP":
        sys.exit(f"{path}: not a bench_rnn dump (bad magic)")
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) & 0xFFFFFFFF != crc:
        sys.exit(f"{path}: CRC32 mismatch (truncated or corrupt dump); rerun bench_rnn --dump")
    off = 8
    (version,) = struct.unpack_from("<i", data, off)
    off += 4
    if version != 1:
        sys.exit(f"{path}: dump version {version}, this script reads version 1")
    V, E, H, Le, Ld, feed, warmup_steps, threads = struct.unpack_from("<8i", data, off)
    off += 32
    dropout, smoothing, lr, clip, b1, b2, eps = struct.unpack_from("<7f", data, off)
    off += 28
    (nparams,) = struct.unpack_from("<q", data, off)
    off += 8
    nb, warmup = struct.unpack_from("<2i", data, off)
    off += 8
    hdr = dict(V=V, E=E, H=H, enc_layers=Le, dec_layers=Ld, input_feeding=feed,
               warmup_steps=warmup_steps, threads=threads, dropout=dropout,
               smoothing=smoothing, lr=lr, clip=clip, betas=(b1, b2), eps=eps,
               nparams=nparams, nbatches=nb, warmup=warmup)
    batches = []
    end = len(data) - 4

    def ints(n):
        nonlocal off
        if off + 4 * n > end:
            sys.exit(f"{path}: truncated batch data")
        a = np.frombuffer(data, dtype="<i4", count=n, offset=off)
        off += 4 * n
        return a

    for _ in range(nb):
        B, S, T = (int(x) for x in ints(3))
        src = ints(S * B).reshape(S, B)
        src_len = ints(B)
        tgt_in = ints(T * B).reshape(T, B)
        tgt_out = ints(T * B).reshape(T, B)
        batches.append(dict(
            src=torch.from_numpy(src.astype(np.int64)),
            src_len=torch.from_numpy(src_len.astype(np.int64)),
            tgt_in=torch.from_numpy(tgt_in.astype(np.int64)),
            tgt_out=torch.from_numpy(tgt_out.astype(np.int64)),
            src_tokens=int(src_len.sum()),
            tgt_tokens=int((tgt_out != PAD).sum())))
    if off != end:
        sys.exit(f"{path}: {end - off} unexpected bytes after the batches")
    return hdr, batches


class Seq2Seq(nn.Module):
    def __init__(self, V, E, H, enc_layers, dec_layers, p):
        super().__init__()
        assert H % 2 == 0 and enc_layers == dec_layers
        self.p, self.H = p, H
        self.src_emb = nn.Embedding(V, E)
        self.encoder = nn.LSTM(E, H // 2, num_layers=enc_layers, bidirectional=True,
                               dropout=p if enc_layers > 1 else 0.0)
        self.tgt_emb = nn.Embedding(V, E)
        self.cells = nn.ModuleList(
            [nn.LSTMCell(E + H if l == 0 else H, H) for l in range(dec_layers)])
        self.W_a = nn.Linear(H, H, bias=False)       # general score: h_tᵀ W_a h̄_s
        self.W_c = nn.Linear(2 * H, H, bias=False)   # h̃ = tanh(W_c [c; h])
        self.out = nn.Linear(H, V)

    def forward(self, src, src_len, tgt_in):
        S, B = src.shape
        p, train = self.p, self.training
        x = F.dropout(self.src_emb(src), p, train)                         # [S,B,E]
        packed = pack_padded_sequence(x, src_len, enforce_sorted=False)
        enc_packed, (hn, cn) = self.encoder(packed)                        # hn [2L,B,H/2]
        enc, _ = pad_packed_sequence(enc_packed, total_length=S)           # [S,B,H]
        enc = enc.transpose(0, 1)                                          # [B,S,H]
        pad_mask = torch.arange(S)[None, :] >= src_len[:, None]            # [B,S]
        L = len(self.cells)
        h = [torch.cat([hn[2 * l], hn[2 * l + 1]], 1) for l in range(L)]  # [B,H]
        c = [torch.cat([cn[2 * l], cn[2 * l + 1]], 1) for l in range(L)]
        y = F.dropout(self.tgt_emb(tgt_in), p, train)                      # [T,B,E]
        htil = y.new_zeros(B, self.H)
        outs = []
        for t in range(tgt_in.shape[0]):
            inp = torch.cat([y[t], htil], 1)                               # input feeding
            for l, cell in enumerate(self.cells):
                if l:
                    inp = F.dropout(h[l - 1], p, train)
                h[l], c[l] = cell(inp, (h[l], c[l]))
            top = h[-1]
            scores = torch.bmm(enc, self.W_a(top).unsqueeze(2)).squeeze(2)  # [B,S]
            scores = scores.masked_fill(pad_mask, float("-inf"))
            a = torch.softmax(scores, dim=1)
            ctx = torch.bmm(a.unsqueeze(1), enc).squeeze(1)                # [B,H]
            htil = torch.tanh(self.W_c(torch.cat([ctx, top], 1)))
            outs.append(htil)
        return self.out(F.dropout(torch.stack(outs), p, train))           # [T,B,V]


def cpu_capability():
    """ATen's vectorised-kernel level, as torch.__config__.show() reports it."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.strip().lstrip("- ")
    return "CPU capability usage: unknown"


def blas_library():
    """The BLAS shared object this process actually loaded (Debian: an OpenBLAS build)."""
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.rsplit("/", 1)[-1]}
    opens = sorted(l for l in libs if "openblas" in l.rsplit("/", 1)[-1]) or sorted(libs)
    return opens[0] if opens else "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--threads", type=int, default=0, help="default: the dump's thread count")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    hdr, batches = read_dump(args.dump)
    threads = args.threads or hdr["threads"]
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)
    if not hdr["input_feeding"]:
        sys.exit("the dump's model has input_feeding = false; this script implements input feeding")

    V, H = hdr["V"], hdr["H"]
    model = Seq2Seq(V, hdr["E"], H, hdr["enc_layers"], hdr["dec_layers"], hdr["dropout"])
    for prm in model.parameters():
        nn.init.uniform_(prm, -0.1, 0.1)  # as ours (OpenNMT-py's param_init 0.1)
    model.train()
    n_torch = sum(prm.numel() for prm in model.parameters())
    # nn.LSTM/LSTMCell have b_ih and b_hh; our cell has one bias: subtract one per cell.
    redundant = sum(prm.numel() for name, prm in model.named_parameters()
                    if "bias_hh" in name)
    print(f"pytorch: {n_torch} parameters ({n_torch - redundant} without the redundant b_hh "
          f"biases); trainer: {hdr['nparams']}"
          f" -> {'match' if n_torch - redundant == hdr['nparams'] else 'MISMATCH'}")
    print(f"pytorch: torch {torch.__version__}, {torch.get_num_threads()} threads "
          f"(interop {torch.get_num_interop_threads()}), mkldnn available "
          f"{torch.backends.mkldnn.is_available()}, {cpu_capability()}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, "
          f"BLAS {blas_library()}")

    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=hdr["lr"], betas=hdr["betas"], eps=hdr["eps"])
    W, nb = hdr["warmup"], hdr["nbatches"]
    tokens = 0
    t0 = None
    for k, b in enumerate(batches):
        if k == W:
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = model(b["src"], b["src_len"], b["tgt_in"])
        loss = F.cross_entropy(logits.view(-1, V), b["tgt_out"].view(-1), ignore_index=PAD,
                               label_smoothing=hdr["smoothing"], reduction="sum")
        (loss / b["tgt_tokens"]).backward()
        norm = torch.nn.utils.clip_grad_norm_(params, hdr["clip"])
        ws = hdr["warmup_steps"]
        for g in opt.param_groups:
            g["lr"] = hdr["lr"] * (min(1.0, (k + 1) / ws) if ws > 0 else 1.0)
        opt.step()
        if k >= W:
            tokens += b["src_tokens"] + b["tgt_tokens"]
        if k == 0 or k == nb - 1:
            B, S, T = b["src"].shape[1], b["src"].shape[0], b["tgt_in"].shape[0]
            print(f"pytorch: step {k} loss {loss.item() / b['tgt_tokens']:.4f} per target token "
                  f"(B {B} S {S} T {T}, grad norm {float(norm):.3f})")
    dt = time.perf_counter() - t0
    print(f"pytorch: {tokens} tokens (source + target, non-padding) in {dt:.3f} s")
    print(f"pytorch: {tokens / dt:.1f} tokens/s ({nb - W} steps, {threads} threads)")


if __name__ == "__main__":
    main()
