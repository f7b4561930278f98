#!/usr/bin/python3
"""bench_transformer_torch.py — the same Transformer encoder–decoder in PyTorch, trained on the
batches bench_train dumped, timed the same way as bench_train and bench_rnn_torch.py.

    python3 bench/bench_transformer_torch.py DUMP [--threads T] [--seed S] [--nonpad] [--compile]

Reads DUMP (version 2; format at the top of bench/bench_train.c, in bench/bench_dump.py and in
bench/README.md): the whole config, V, thread count and W warm-up + N batches. Runs W warm-up and
N timed training steps (zero grad, forward + backward, clip_grad_norm_, Adam) and prints

    pytorch: X tokens/s (N steps, T threads)

tokens = non-padding source + target tokens of the timed batches, as bench_train counts them.

Variants (bench/compare_torch.sh runs each):
  (default)  eager, the output layer and loss over all B·T target positions;
  --nonpad   the output layer and loss only over the target positions that are not padding, the
             shortcut the trainer takes (src/model/transformer.c): the rows' indices are found
             with the other tensors before the clock starts (the trainer's batcher finds them on
             the host too), then index_select → Linear → cross-entropy;
  --compile  the forward and loss through torch.compile(dynamic=True) (with --nonpad: the same
             shortcut inside the compiled function); every batch's shape is compiled and warmed
             by one forward + backward before timing.

The model (src/model/transformer.h; tests/reference/make_transformer_fixture.py proves our
mathematics equal to these PyTorch layers) written the way a PyTorch user would write it:
  nn.Embedding [V,D], one for source and target and tied to the output nn.Linear(D, V) (with a
  bias) when model.tie_embeddings, else three matrices;
  x = dropout(emb(tokens) · √D + PE), PE[t,2i] = sin(t / 10000^(2i/D)), PE[t,2i+1] = cos(...);
  nn.TransformerEncoder / nn.TransformerDecoder of batch_first nn.TransformerEncoderLayer /
  nn.TransformerDecoderLayer(D, heads, d_ff, dropout, activation relu, norm_first = model.norm is
  pre), with a final nn.LayerNorm after each stack when pre-LN;
  masks: src_key_padding_mask and memory_key_padding_mask from the source lengths, a causal
  tgt_mask and tgt_key_padding_mask from the target lengths (BOS y_1 .. y_n);
  F.cross_entropy(label_smoothing=ε, ignore_index=PAD, reduction='sum') / target tokens.
PyTorch's layers also drop attention weights (MultiheadAttention's dropout); ours do not (flash and
linear attention never form them), so that dropout is set to 0 after construction: dropout
remains on the embeddings, on each sub-layer's output before the residual, and after the FFN's
relu, exactly as in ours. Only scaled dot-product attention (model.self_attention,
dec_self_attention and cross_attention all sdp) has a PyTorch counterpart; other kinds are refused.

Initialisation as ours in kind (the figures timed do not depend on it; the first loss does):
Xavier-uniform matrices (as nn.Transformer._reset_parameters), embeddings N(0, 1/D) (ours:
uniform with the same variance), zero biases, unit layer-norm gains.
"""
import argparse
import inspect
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dump import (PAD, blas_library, cpu_capability, loss_targets, read_dump,
                        time_training, to_device, xent_sum)  # noqa: E402


def sinusoids(T, D):
    """PE [T,D]: PE[t,2i] = sin(t / 10000^(2i/D)), PE[t,2i+1] = cos(t / 10000^(2i/D))."""
    pe = torch.zeros(T, D)
    t = torch.arange(T, dtype=torch.float64)[:, None]
    ang = t / torch.pow(10000.0, torch.arange(0, D, 2, dtype=torch.float64) / D)[None, :]
    pe[:, 0::2] = torch.sin(ang).float()
    pe[:, 1::2] = torch.cos(ang[:, :D // 2]).float()
    return pe


class Seq2SeqTransformer(nn.Module):
    def __init__(self, V, D, NH, F_, enc_layers, dec_layers, p, pre, tie, max_positions):
        super().__init__()
        self.D = D
        self.src_emb = nn.Embedding(V, D)
        self.tgt_emb = self.src_emb if tie else nn.Embedding(V, D)
        self.out = nn.Linear(D, V)
        if tie:
            self.out.weight = self.src_emb.weight
        enc = nn.TransformerEncoderLayer(D, NH, F_, dropout=p, activation="relu",
                                         batch_first=True, norm_first=pre)
        dec = nn.TransformerDecoderLayer(D, NH, F_, dropout=p, activation="relu",
                                         batch_first=True, norm_first=pre)
        self.encoder = nn.TransformerEncoder(enc, enc_layers,
                                             norm=nn.LayerNorm(D) if pre else None)
        self.decoder = nn.TransformerDecoder(dec, dec_layers,
                                             norm=nn.LayerNorm(D) if pre else None)
        self.decoder_knows_causal = ("tgt_is_causal" in
                                     inspect.signature(nn.TransformerDecoder.forward).parameters)
        # ours has no dropout on attention weights: keep only the residual and FFN dropout
        for layer in self.encoder.layers:
            layer.self_attn.dropout = 0.0
        for layer in self.decoder.layers:
            layer.self_attn.dropout = 0.0
            layer.multihead_attn.dropout = 0.0
        self.drop = nn.Dropout(p)
        self.register_buffer("pe", sinusoids(max_positions, D), persistent=False)
        self.reset_parameters()

    def reset_parameters(self):
        for name, prm in self.named_parameters():
            if "emb" in name:
                nn.init.normal_(prm, 0.0, self.D ** -0.5)
            elif prm.dim() > 1:
                nn.init.xavier_uniform_(prm)
            elif "norm" in name and name.endswith("weight"):
                nn.init.ones_(prm)
            else:
                nn.init.zeros_(prm)

    def embed(self, emb, tokens):
        return self.drop(emb(tokens) * math.sqrt(self.D) + self.pe[:tokens.shape[1]])

    def forward(self, src, src_pad, tgt_in, tgt_pad):
        """src [B,S], tgt_in [B,T] (batch-major); *_pad True at padding -> the decoder's output
        [B,T,D] (the output layer, self.out, is applied by the caller)"""
        T = tgt_in.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=src.device), diagonal=1)
        mem = self.encoder(self.embed(self.src_emb, src), src_key_padding_mask=src_pad)
        # tgt_is_causal (torch >= 2.0): the mask is causal by construction (spares PyTorch its
        # check, which torch.compile cannot trace); older releases have no such keyword
        extra = {"tgt_is_causal": True} if self.decoder_knows_causal else {}
        y = self.decoder(self.embed(self.tgt_emb, tgt_in), mem, tgt_mask=causal,
                         tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad, **extra)
        return y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--threads", type=int, default=0, help="default: the dump's thread count")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--nonpad", action="store_true",
                    help="output layer and loss only on the non-padding target positions")
    ap.add_argument("--compile", action="store_true", help="torch.compile(dynamic=True)")
    args = ap.parse_args()
    hdr, batches = read_dump(args.dump)
    threads = args.threads or hdr.threads
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)

    if hdr.get_str("model.type") != "transformer":
        sys.exit(f"{args.dump}: model.type = {hdr.get_str('model.type')}; this script is for "
                 "model.type = transformer (the RNN: bench/bench_rnn_torch.py)")
    kinds = {"model.self_attention": hdr.get_str("model.self_attention"),
             "model.dec_self_attention": hdr.get_str("model.dec_self_attention"),
             "model.cross_attention": hdr.get_str("model.cross_attention")}
    if kinds["model.dec_self_attention"] == "same":
        kinds["model.dec_self_attention"] = kinds["model.self_attention"]
    for key, kind in kinds.items():
        if kind != "sdp":
            sys.exit(f"{args.dump}: {key} is {kind}; only scaled dot-product attention (sdp) has "
                     "a PyTorch counterpart (nn.MultiheadAttention) here; benchmark a config "
                     "with sdp in every slot")
    norm = hdr.get_str("model.norm")
    if norm not in ("pre", "post"):
        sys.exit(f"{args.dump}: model.norm = {norm}; expected pre or post")
    V, D, NH = hdr.V, hdr.get_int("model.d_model"), hdr.get_int("model.heads")
    for b in batches:
        if int(b["src_len"].min()) < 1:
            sys.exit(f"{args.dump}: a batch holds an empty source; PyTorch's masked softmax "
                     "would give NaN for it (ours gives zero)")
    max_positions = max(max(b["src"].shape[0], b["tgt_in"].shape[0]) for b in batches)
    model = Seq2SeqTransformer(V, D, NH, hdr.get_int("model.d_ff"),
                               hdr.get_int("model.enc_layers"), hdr.get_int("model.dec_layers"),
                               hdr.get_float("model.dropout"), norm == "pre",
                               hdr.get_bool("model.tie_embeddings"), max_positions)
    model.train()
    # parameters() yields a tied matrix once: the count is that of our declared tensors
    n_torch = sum(prm.numel() for prm in model.parameters())
    print(f"pytorch: {n_torch} parameters; trainer: {hdr.nparams}"
          f" -> {'match' if n_torch == hdr.nparams else 'MISMATCH'}")
    print(f"pytorch: transformer V {V}, d_model {D}, heads {NH}, d_ff {hdr.get_int('model.d_ff')}"
          f", layers {hdr.get_int('model.enc_layers')}/{hdr.get_int('model.dec_layers')}, "
          f"{norm}-LN, tied {hdr.get_bool('model.tie_embeddings')}, dropout "
          f"{hdr.get_float('model.dropout'):g} (none on attention weights)")
    print(f"pytorch: torch {torch.__version__}, {torch.get_num_threads()} threads "
          f"(interop {torch.get_num_interop_threads()}), mkldnn available "
          f"{torch.backends.mkldnn.is_available()}, {cpu_capability()}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, "
          f"BLAS {blas_library()}")

    # the data loader's work, done before timing as in bench_train: batch-major token tensors,
    # padding masks and (--nonpad) the indices of the target positions that are not padding
    for b in batches:
        b["src_bm"] = b["src"].t().contiguous()          # [B,S]
        b["tgt_in_bm"] = b["tgt_in"].t().contiguous()    # [B,T]
        b["src_pad"] = torch.arange(b["src_bm"].shape[1])[None, :] >= b["src_len"][:, None]
        b["tgt_pad"] = b["tgt_in_bm"] == PAD             # [B,T] BOS y_1 .. y_n
        b["rows"], b["tgt"] = loss_targets(b["tgt_out"].t().reshape(-1), args.nonpad)  # [B·T]
    to_device(model, batches, args.device)
    smoothing = hdr.get_float("train.label_smoothing")

    def loss_fn(src, src_pad, tgt_in, tgt_pad, rows, tgt):
        y = model(src, src_pad, tgt_in, tgt_pad).reshape(-1, D)  # [B·T, D]
        if rows is not None:
            y = y.index_select(0, rows)                          # [NR, D]
        return xent_sum(model.out(y), tgt, smoothing)

    fn = torch.compile(loss_fn, dynamic=True) if args.compile else loss_fn
    print(f"pytorch: variant {'compile' if args.compile else 'eager'}"
          f"{' +nonpad' if args.nonpad else ''} (output layer and loss over "
          f"{'non-padding target positions' if args.nonpad else 'all B·T target positions'})")
    time_training(model, batches, hdr, threads,
                  lambda b: fn(b["src_bm"], b["src_pad"], b["tgt_in_bm"], b["tgt_pad"],
                               b["rows"], b["tgt"]),
                  warm_every_shape=args.compile, device=args.device)


if __name__ == "__main__":
    main()
