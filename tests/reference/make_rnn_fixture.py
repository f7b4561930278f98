#!/usr/bin/python3
"""Writes tests/fixtures/rnn_tiny/*.txt: a tiny RNN encoder-decoder (src/model/rnn.c) computed in
plain PyTorch float64 -- its parameters, a padded batch, the logits, the summed label-smoothed
loss and the gradient of that loss w.r.t. every parameter -- which tests/model/test_rnn_torch.c
checks our forward and backward against.

Usage (from the repository root; needs PyTorch, e.g. Debian's python3-torch, /usr/bin/python3):

    /usr/bin/python3 tests/reference/make_rnn_fixture.py [NAME.txt ...]

writes every case, or only the named ones.

The model, written out with torch ops (no nn.LSTM, so that the masking and the state hand-over
are explicit); gate order i, f, g, o; one bias per LSTM (our `b`, no separate b_hh); no dropout:
  encoder   x = emb_src[src]; L bidirectional LSTM layers with H/2 per direction; a padding step
            (t >= len) keeps the previous (h, c), so the backward direction starts from zeros at
            each sentence's true end; layer l > 0 reads [->h; <-h] of layer l-1; h_bar = top layer.
  decoder   layer l starts from [->h_final; <-h_final], [->c_final; <-c_final] of encoder layer l
            when enc_layers == dec_layers, zeros otherwise; input feeding: layer 0 reads
            [emb_tgt[y_{t-1}]; h~_{t-1}] (h~_{-1} = 0); layer l > 0 reads h of layer l-1.
  attention luong_general: score_s = (h_t W_a) . h_bar_s; luong_dot: h_t . h_bar_s; softmax over
            s < src_len; c_t = sum_s a_s h_bar_s.
            sdp with NH heads of HS = H/NH (src/attention/mha.c, rnn_attn_*): q = h_t W_q,
            k_s = h_bar_s W_k (W_q, W_k [H, H], no bias); head j takes columns j*HS .. (j+1)*HS - 1
            of q, k_s and of the values h_bar_s (not projected); score_js = q_j . k_sj / sqrt(HS),
            softmax over s < src_len per head; c_t = [sum_s a_1s h_bar_s1; ..; sum_s a_NHs h_bar_sNH]
            (the heads concatenated, no output projection).
  output    h~_t = tanh(W_c [c_t; h_t]); logits = h~_t W_out^T + b_out.
  loss      sum over non-pad targets of  -(1-eps) log p_y - (eps/V) sum_v log p_v  (eps = 0.1).
Parameters are drawn uniform in [-1, 1] (dec.attn.W_a in [-4, 4], dec.attn.W_q and W_k in [-2, 2],
so that the attention weights are visibly far from uniform even in this tiny model) from torch.manual_seed and rounded to
float32, so the C test uses bit-identical weights; everything else is float64.

File format (ASCII, whitespace-separated tokens; '#' starts a comment line, only at the top):
  rnn_fixture 1
  config V E H enc_layers dec_layers attention smoothing [heads]
                                             (attention: luong_general|luong_dot|sdp; heads: 1 if absent)
  batch B S T
  src      S*B ints   time-major [S,B], PAD 0
  src_len  B ints
  tgt_in   T*B ints   [T,B]: BOS(2) y_1 .. y_n, PAD
  tgt_out  T*B ints   [T,B]: y_1 .. y_n EOS(3), PAD
  loss     one float
  logits T B V        then T*B*V floats ([T,B,V] row-major)
  nparams N
  N times:  param NAME NDIM D0 [D1]   then the D0*D1 values (row-major), exact for float32
  N times:  grad NAME NDIM D0 [D1]    then the gradient of the summed loss, same shape
  end
Parameter names, shapes and order are those of rnn_create's params_declare calls.
"""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "rnn_tiny")
PAD, BOS, EOS = 0, 2, 3
DT = torch.float64


def declare(V, E, H, Le, Ld, attention):
    """(name, shape) in rnn_create's declaration order."""
    Hd = H // 2
    specs = [("enc.emb", (V, E))]
    for l in range(Le):
        for d in ("fwd", "bwd"):
            inp = H if l else E
            specs += [(f"enc.l{l}.{d}.W_ih", (4 * Hd, inp)), (f"enc.l{l}.{d}.W_hh", (4 * Hd, Hd)),
                      (f"enc.l{l}.{d}.b", (4 * Hd,))]
    specs.append(("dec.emb", (V, E)))
    for l in range(Ld):
        inp = H if l else E + H
        specs += [(f"dec.l{l}.W_ih", (4 * H, inp)), (f"dec.l{l}.W_hh", (4 * H, H)),
                  (f"dec.l{l}.b", (4 * H,))]
    if attention == "luong_general":
        specs.append(("dec.attn.W_a", (H, H)))
    if attention == "sdp":
        specs += [("dec.attn.W_q", (H, H)), ("dec.attn.W_k", (H, H))]
    specs += [("dec.W_c", (H, 2 * H)), ("out.W", (V, H)), ("out.b", (V,))]
    return specs


def lstm_cell(x, h, c, W_ih, W_hh, b):
    g = x @ W_ih.T + h @ W_hh.T + b
    n = h.shape[1]
    i, f = torch.sigmoid(g[:, :n]), torch.sigmoid(g[:, n:2 * n])
    gg, o = torch.tanh(g[:, 2 * n:3 * n]), torch.sigmoid(g[:, 3 * n:])
    c2 = f * c + i * gg
    return o * torch.tanh(c2), c2


def attend(P, attention, heads, h, hbar, keymask):
    """The context c_t [B,H] of the decoder's top state h [B,H] over hbar [B,S,H] (keymask [B,S])."""
    if attention == "sdp":
        B, S, H = hbar.shape
        hs = H // heads
        q = (h @ P["dec.attn.W_q"]).reshape(B, heads, hs)
        k = (hbar @ P["dec.attn.W_k"]).reshape(B, S, heads, hs)
        v = hbar.reshape(B, S, heads, hs)
        score = torch.einsum("bjd,bsjd->bjs", q, k) / (hs ** 0.5)
        a = torch.softmax(score.masked_fill(~keymask[:, None, :], float("-inf")), dim=2)
        return torch.einsum("bjs,bsjd->bjd", a, v).reshape(B, H)
    q = h @ P["dec.attn.W_a"] if attention == "luong_general" else h  # [B,H]
    score = torch.einsum("bh,bsh->bs", q, hbar).masked_fill(~keymask, float("-inf"))
    a = torch.softmax(score, dim=1)
    return torch.einsum("bs,bsh->bh", a, hbar)


def model_loss(P, cfg, src, src_len, tgt_in, tgt_out, eps):
    V, E, H, Le, Ld, attention, heads = cfg
    Hd = H // 2
    S, B = src.shape
    T = tgt_in.shape[0]
    mask = (torch.arange(S)[:, None] < src_len[None, :]).to(DT)[:, :, None]  # [S,B,1]
    x = P["enc.emb"][src]  # [S,B,E]
    finals = []
    for l in range(Le):
        outs, fin = [], []
        for d, name in enumerate(("fwd", "bwd")):
            W_ih, W_hh, b = (P[f"enc.l{l}.{name}.{k}"] for k in ("W_ih", "W_hh", "b"))
            h = torch.zeros(B, Hd, dtype=DT)
            c = torch.zeros(B, Hd, dtype=DT)
            hs = [None] * S
            for t in (range(S) if d == 0 else range(S - 1, -1, -1)):
                hn, cn = lstm_cell(x[t], h, c, W_ih, W_hh, b)
                m = mask[t]
                h = m * hn + (1 - m) * h  # padding step: keep the state
                c = m * cn + (1 - m) * c
                hs[t] = h
            outs.append(torch.stack(hs))
            fin.append((h, c))
        x = torch.cat(outs, dim=2)  # [S,B,H]
        finals.append((torch.cat([fin[0][0], fin[1][0]], 1), torch.cat([fin[0][1], fin[1][1]], 1)))
    hbar = x.transpose(0, 1)  # [B,S,H]
    keymask = mask[:, :, 0].T > 0  # [B,S]
    if Le == Ld:
        state = list(finals)
    else:
        state = [(torch.zeros(B, H, dtype=DT), torch.zeros(B, H, dtype=DT)) for _ in range(Ld)]
    emb = P["dec.emb"][tgt_in]  # [T,B,E]
    htil = torch.zeros(B, H, dtype=DT)
    logits = []
    for t in range(T):
        inp = torch.cat([emb[t], htil], 1)
        for l in range(Ld):
            h, c = lstm_cell(inp, state[l][0], state[l][1], P[f"dec.l{l}.W_ih"], P[f"dec.l{l}.W_hh"],
                             P[f"dec.l{l}.b"])
            state[l] = (h, c)
            inp = h
        ctx = attend(P, attention, heads, inp, hbar, keymask)
        htil = torch.tanh(torch.cat([ctx, inp], 1) @ P["dec.W_c"].T)
        logits.append(htil @ P["out.W"].T + P["out.b"])
    logits = torch.stack(logits)  # [T,B,V]
    logp = torch.log_softmax(logits, dim=2)
    y = tgt_out
    nll = -logp.gather(2, y[:, :, None])[:, :, 0]
    smooth = -logp.sum(2) / V
    keep = (y != PAD).to(DT)
    loss = (((1 - eps) * nll + eps * smooth) * keep).sum()
    return loss, logits


def make_batch(gen, V, src_lens, tgt_lens):
    B = len(src_lens)
    S, T = max(src_lens), max(tgt_lens) + 1
    src = torch.full((S, B), PAD, dtype=torch.long)
    tgt_in = torch.full((T, B), PAD, dtype=torch.long)
    tgt_out = torch.full((T, B), PAD, dtype=torch.long)
    for b in range(B):
        s = torch.randint(4, V, (src_lens[b],), generator=gen)
        y = torch.randint(4, V, (tgt_lens[b],), generator=gen)
        src[:src_lens[b], b] = s
        tgt_in[0, b] = BOS
        tgt_in[1:tgt_lens[b] + 1, b] = y
        tgt_out[:tgt_lens[b], b] = y
        tgt_out[tgt_lens[b], b] = EOS
    return src, torch.tensor(src_lens, dtype=torch.long), tgt_in, tgt_out


def fmt32(v):
    return "%.9g" % v  # round-trips float32


def fmt64(v):
    return "%.12e" % v


def write_tensor(f, values, fmt, row):
    flat = values.reshape(-1).tolist()
    for i in range(0, len(flat), row):
        f.write(" ".join(fmt(v) for v in flat[i:i + row]) + "\n")


def write_body(f, dims, batch, loss, logits, specs, P):
    """The part of a fixture file after its config line, shared by both models' generators:
    dims = (B, S, T, V); batch = (src, src_len, tgt_in, tgt_out); logits [T, B, V]; the
    parameters P[name] (after backward, so that .grad holds the gradients) in specs' order."""
    B, S, T, V = dims
    f.write("batch %d %d %d\n" % (B, S, T))
    for key, t in zip(("src", "src_len", "tgt_in", "tgt_out"), batch):
        f.write(key + " " + " ".join(str(int(v)) for v in t.reshape(-1).tolist()) + "\n")
    f.write("loss %.17g\n" % loss.item())
    f.write("logits %d %d %d\n" % (T, B, V))
    write_tensor(f, logits, fmt64, V)
    f.write("nparams %d\n" % len(specs))
    for name, shape in specs:
        f.write("param %s %d %s\n" % (name, len(shape), " ".join(map(str, shape))))
        write_tensor(f, P[name].detach(), fmt32, shape[-1])
    for name, shape in specs:
        f.write("grad %s %d %s\n" % (name, len(shape), " ".join(map(str, shape))))
        write_tensor(f, P[name].grad, fmt64, shape[-1])
    f.write("end\n")


def make_case(fname, seed, V, E, H, Le, Ld, attention, src_lens, tgt_lens, eps=0.1, heads=1):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    specs = declare(V, E, H, Le, Ld, attention)
    P = {}
    for name, shape in specs:
        scale = {"dec.attn.W_a": 4.0, "dec.attn.W_q": 2.0, "dec.attn.W_k": 2.0}.get(name, 1.0)
        w = ((torch.rand(shape, dtype=torch.float64) * 2 - 1) * scale).float().double()  # exact f32
        P[name] = w.requires_grad_(True)
    src, src_len, tgt_in, tgt_out = make_batch(gen, V, src_lens, tgt_lens)
    loss, logits = model_loss(P, (V, E, H, Le, Ld, attention, heads), src, src_len, tgt_in, tgt_out,
                              eps)
    loss.backward()
    S, B = src.shape
    T = tgt_in.shape[0]
    with open(os.path.join(OUT, fname), "w") as f:
        f.write("# written by tests/reference/make_rnn_fixture.py (torch %s, seed %d); do not edit\n"
                % (torch.__version__, seed))
        f.write("rnn_fixture 1\n")
        f.write("config %d %d %d %d %d %s %s%s\n" % (V, E, H, Le, Ld, attention, repr(eps),
                                                    " %d" % heads if heads != 1 else ""))
        write_body(f, (B, S, T, V), (src, src_len, tgt_in, tgt_out), loss, logits.detach(), specs,
                   P)
    print("%s: loss %.10f, %d parameters" % (fname, loss.item(), sum(p.numel() for p in P.values())))


CASES = [
    # 2+2 layers, luong_general; sources of lengths 6, 4, 2 (padded to S 6), targets of 4, 2, 5
    # tokens (T 6); the encoder's final states initialise the decoder.
    ("general_2x2.txt", 1234, 17, 5, 8, 2, 2, "luong_general", [6, 4, 2], [4, 2, 5], {}),
    # 1+1 layer, luong_dot; the longest sentence is not first.
    ("dot_1x1.txt", 4321, 17, 5, 8, 1, 1, "luong_dot", [3, 5, 1], [3, 4, 1], {}),
    # 1 encoder layer, 2 decoder layers: the decoder starts from zeros.
    ("general_1x2.txt", 777, 17, 5, 8, 1, 2, "luong_general", [2, 5, 4], [1, 3, 3], {}),
    # 2+2 layers, sdp with 2 heads of 4 (learned W_q, W_k; scale 1/2); one source of length 1.
    ("sdp_2x2.txt", 2468, 17, 5, 8, 2, 2, "sdp", [4, 6, 1], [3, 5, 2], {"heads": 2}),
]


def main():
    os.makedirs(OUT, exist_ok=True)
    names = sys.argv[1:]
    unknown = set(names) - {c[0] for c in CASES}
    if unknown:
        sys.exit("make_rnn_fixture.py: no case %s (%s)" % (", ".join(sorted(unknown)),
                                                          ", ".join(c[0] for c in CASES)))
    for c in CASES:
        if not names or c[0] in names:
            make_case(*c[:-1], **c[-1])


if __name__ == "__main__":
    main()
