#!/usr/bin/python3
"""bench_rnn_torch.py — the same LSTM encoder–decoder with Luong attention in PyTorch, trained on
the batches bench_train dumped, timed the same way.

    python3 bench/bench_rnn_torch.py DUMP [--threads T] [--nonpad] [--compile] [--device D]

Reads DUMP (version 2; format at the top of bench/bench_train.c, in bench/bench_dump.py and in
bench/README.md): the whole config (model sizes, dropout, label smoothing, optimiser settings),
V, thread count and W warm-up + N batches. Runs W warm-up and N timed training steps (zero grad,
forward + backward, clip_grad_norm_, Adam) and prints

    pytorch: X tokens/s (N steps, T threads)

tokens = non-padding source + target tokens of the timed batches, as bench_train counts them.
Only model.type = rnn with cell lstm, attention luong_general and input feeding is written here;
other settings are refused with a message.

--nonpad: the output layer and loss only over the target positions that are not padding, the
shortcut the trainer takes (src/model/rnn.c): their indices are found before the clock starts
(the trainer's batcher finds them on the host too), then index_select → Linear → cross-entropy.

--compile: the decoder's time step (LSTMCell stack, attention, h̃) through torch.compile(dynamic=
True), the encoder (nn.LSTM, one fused op already) and the loss eager: compiling the whole
forward would unroll the time loop and compile once per target length. Every batch's shape is
compiled and warmed by one forward + backward before timing.

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
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dump import (blas_library, cpu_capability, loss_targets, read_dump,  # noqa: E402
                        time_training, to_device, xent_sum)


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

    def forward(self, src, src_len, tgt_in, rows=None):
        """Logits [T·B, V], or [NR, V] at the time-major positions rows [NR] (--nonpad)."""
        S, B = src.shape
        p, train = self.p, self.training
        x = F.dropout(self.src_emb(src), p, train)                         # [S,B,E]
        packed = pack_padded_sequence(x, src_len.cpu(), enforce_sorted=False)
        enc_packed, (hn, cn) = self.encoder(packed)                        # hn [2L,B,H/2]
        enc, _ = pad_packed_sequence(enc_packed, total_length=S)           # [S,B,H]
        enc = enc.transpose(0, 1)                                          # [B,S,H]
        pad_mask = torch.arange(S, device=src.device)[None, :] >= src_len[:, None]  # [B,S]
        L = len(self.cells)
        h = [torch.cat([hn[2 * l], hn[2 * l + 1]], 1) for l in range(L)]  # [B,H]
        c = [torch.cat([cn[2 * l], cn[2 * l + 1]], 1) for l in range(L)]
        y = F.dropout(self.tgt_emb(tgt_in), p, train)                      # [T,B,E]
        htil = y.new_zeros(B, self.H)
        outs = []
        for t in range(tgt_in.shape[0]):
            htil, h, c = self.step(y[t], htil, h, c, enc, pad_mask)
            outs.append(htil)
        y = F.dropout(torch.stack(outs), p, train).view(-1, self.H)        # [T·B,H]
        if rows is not None:
            y = y.index_select(0, rows)                                    # [NR,H]
        return self.out(y)

    def step(self, y_t, htil, h, c, enc, pad_mask):
        """One decoder time step: y_t [B,E], h̃_{t-1} [B,H], h, c (lists of L [B,H]), enc
        [B,S,H], pad_mask [B,S] -> h̃_t, h, c. (--compile replaces it by its compiled form.)"""
        p, train = self.p, self.training
        inp = torch.cat([y_t, htil], 1)                                    # input feeding
        h, c = list(h), list(c)
        for l, cell in enumerate(self.cells):
            if l:
                inp = F.dropout(h[l - 1], p, train)
            h[l], c[l] = cell(inp, (h[l], c[l]))
        top = h[-1]
        scores = torch.bmm(enc, self.W_a(top).unsqueeze(2)).squeeze(2)    # [B,S]
        scores = scores.masked_fill(pad_mask, float("-inf"))
        a = torch.softmax(scores, dim=1)
        ctx = torch.bmm(a.unsqueeze(1), enc).squeeze(1)                    # [B,H]
        return torch.tanh(self.W_c(torch.cat([ctx, top], 1))), h, c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--threads", type=int, default=0, help="default: the dump's thread count")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--nonpad", action="store_true",
                    help="output layer and loss only on the non-padding target positions")
    ap.add_argument("--compile", action="store_true",
                    help="the decoder's time step through torch.compile(dynamic=True)")
    args = ap.parse_args()
    hdr, batches = read_dump(args.dump)
    threads = args.threads or hdr.threads
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)
    want = {"model.type": "rnn", "model.cell": "lstm", "model.attention": "luong_general",
            "model.input_feeding": "true"}
    for key, val in want.items():
        if hdr.get_str(key) != val:
            sys.exit(f"{args.dump}: {key} = {hdr.get_str(key)}; this script implements the LSTM "
                     "encoder–decoder with luong_general attention and input feeding only "
                     "(model.type = transformer: bench/bench_transformer_torch.py)")
    Le, Ld = hdr.get_int("model.enc_layers"), hdr.get_int("model.dec_layers")
    if Le != Ld:
        sys.exit(f"{args.dump}: enc_layers {Le} != dec_layers {Ld}; this script initialises "
                 "each decoder layer from the encoder layer of the same depth")

    V, H = hdr.V, hdr.get_int("model.hidden")
    model = Seq2Seq(V, hdr.get_int("model.emb"), H, Le, Ld, hdr.get_float("model.dropout"))
    for prm in model.parameters():
        nn.init.uniform_(prm, -0.1, 0.1)  # as ours (OpenNMT-py's param_init 0.1)
    model.train()
    n_torch = sum(prm.numel() for prm in model.parameters())
    # nn.LSTM/LSTMCell have b_ih and b_hh; our cell has one bias: subtract one per cell.
    redundant = sum(prm.numel() for name, prm in model.named_parameters()
                    if "bias_hh" in name)
    print(f"pytorch: {n_torch} parameters ({n_torch - redundant} without the redundant b_hh "
          f"biases); trainer: {hdr.nparams}"
          f" -> {'match' if n_torch - redundant == hdr.nparams else 'MISMATCH'}")
    print(f"pytorch: torch {torch.__version__}, {torch.get_num_threads()} threads "
          f"(interop {torch.get_num_interop_threads()}), mkldnn available "
          f"{torch.backends.mkldnn.is_available()}, {cpu_capability()}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, "
          f"BLAS {blas_library()}")

    # the data loader's work, done before timing as in bench_train: the time-major targets and
    # (--nonpad) the indices of the target positions that are not padding
    for b in batches:
        b["rows"], b["tgt"] = loss_targets(b["tgt_out"].reshape(-1), args.nonpad)  # [T·B] order
    to_device(model, batches, args.device)
    if args.compile:
        model.step = torch.compile(model.step, dynamic=True)
    print(f"pytorch: variant {'compile (decoder step)' if args.compile else 'eager'}"
          f"{' +nonpad' if args.nonpad else ''} (output layer and loss over "
          f"{'non-padding target positions' if args.nonpad else 'all B·T target positions'})")
    smoothing = hdr.get_float("train.label_smoothing")
    time_training(model, batches, hdr, threads,
                  lambda b: xent_sum(model(b["src"], b["src_len"], b["tgt_in"], b["rows"]),
                                     b["tgt"], smoothing),
                  warm_every_shape=args.compile, device=args.device)

if __name__ == "__main__":
    main()
