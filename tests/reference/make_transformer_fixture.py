#!/usr/bin/python3
"""Writes tests/fixtures/transformer_tiny/*.txt: a tiny Transformer (src/model/transformer.c,
src/attention/mha.c) computed in float64 PyTorch -- its parameters, a padded batch, the logits,
the summed label-smoothed loss and the gradient of that loss w.r.t. every parameter -- which
tests/model/test_transformer_torch.c checks our forward and backward against.

Usage (from the repository root; needs Debian's python3-torch, i.e. /usr/bin/python3):

    /usr/bin/python3 tests/reference/make_transformer_fixture.py [NAME.txt ...]

(every case, or only the named files)

The model, written out with torch ops so that every attention kind is explicit (no dropout):
  embed      x = E[y] * sqrt(D) + PE, PE[t, 2i] = sin(t / 10000^(2i/D)), PE[t, 2i+1] = cos(...)
  encoder    per layer: self-attention (keys s < src_len), FFN
  decoder    per layer: causal self-attention (keys s <= t, s < tgt_len), cross-attention on the
             encoder output (keys s < src_len), FFN
  sub-layer  pre-LN: x + f(LN(x)), final LN after each stack;  post-LN: LN(x + f(x))
  FFN        relu(a W1^T + b1) W2^T + b2;  LN eps 1e-5 (biased variance)
  attention  q = x W_q^T + b_q (luong_general: then q W_a), k, v likewise, split into NH heads;
             per head, with the visible keys s:
               sdp, flash       softmax(q k^T / sqrt(HS)) v
               luong_dot/general softmax(q k^T) v
               bahdanau, luong_concat  softmax_s(v_a[h] . tanh(q + k_s)) v
               linear           phi(q) . sum_s phi(k_s) v_s^T / (phi(q) . sum_s phi(k_s) + 1e-6),
                                phi = elu + 1
               efficient        softmax_d(q) (softmax_s(k)^T v)   (column softmax over the s)
               sigmoid          sum_s sigmoid(q k_s / sqrt(HS) - log n) v_s, n the visible keys
                                of the query (Ramapuram et al. 2024)
               rela             RMSNorm(sum_s relu(q k_s / sqrt(HS)) v_s) * rms_gain[h], the norm
                                over the head's HS values, eps 1e-8 (Zhang et al. 2021)
               qknorm           softmax(g q^ k^) v, q^ = q / |q|, k^ = k / |k| per head,
                                g = log2(100^2 - 100) + qk_gain (Henry et al. 2020)
             heads merged, times W_o^T, + b_o
  output     logits = y W^T + b_out, W = E when the embeddings are tied, else out.W
  loss       sum over non-pad targets of -(1-eps) log p_y - (eps/V) sum_v log p_v (eps 0.1).
For the sdp cases the same parameters are also run through PyTorch's own
nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (+ nn.LayerNorm for the final norms)
and the logits must agree to 1e-10: the written-out model is the standard one.
Parameters are uniform in [-1, 1] (layer-norm and RMSNorm gains in [0.5, 1.5]) from
torch.manual_seed, rounded to float32 so the C test uses bit-identical weights; everything else is
float64.

File format: that of tests/reference/make_rnn_fixture.py with the first lines
  transformer_fixture 1
  config V D NH F enc_layers dec_layers norm tie enc_self dec_self cross smoothing
  (norm: pre|post, tie: 0|1, the three attention kinds by their config names)
and the same batch, loss, logits [T,B,V], param/grad blocks and end.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_rnn_fixture import PAD, make_batch, write_body  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "transformer_tiny")
DT = torch.float64
SOFTMAX_KINDS = ("sdp", "flash", "luong_dot", "luong_general", "bahdanau", "luong_concat")


def mha_specs(p, kind, D, NH):
    s = []
    for w in ("q", "k", "v", "o"):
        s += [(f"{p}.W_{w}", (D, D)), (f"{p}.b_{w}", (D,))]
    if kind == "luong_general":
        s.append((f"{p}.W_a", (D, D)))
    if kind in ("bahdanau", "luong_concat"):
        s.append((f"{p}.v_a", (NH, D // NH)))
    if kind == "rela":
        s.append((f"{p}.rms_gain", (NH, D // NH)))
    if kind == "qknorm":
        s.append((f"{p}.qk_gain", (1,)))
    return s


def declare(cfg):
    """(name, shape) in transformer_create's declaration order."""
    V, D, NH, F, Le, Ld, norm, tie, es, ds, cr = cfg
    specs = [("emb" if tie else "enc.emb", (V, D))]

    def layer(p, dec):
        s = mha_specs(p + ".self", ds if dec else es, D, NH)
        if dec:
            s += mha_specs(p + ".cross", cr, D, NH)
        for i in range(3 if dec else 2):
            s += [(f"{p}.ln{i + 1}.w", (D,)), (f"{p}.ln{i + 1}.b", (D,))]
        return s + [(p + ".ffn.W1", (F, D)), (p + ".ffn.b1", (F,)), (p + ".ffn.W2", (D, F)),
                    (p + ".ffn.b2", (D,))]

    for l in range(Le):
        specs += layer(f"enc.l{l}", False)
    if norm == "pre":
        specs += [("enc.ln.w", (D,)), ("enc.ln.b", (D,))]
    if not tie:
        specs.append(("dec.emb", (V, D)))
    for l in range(Ld):
        specs += layer(f"dec.l{l}", True)
    if norm == "pre":
        specs += [("dec.ln.w", (D,)), ("dec.ln.b", (D,))]
    if not tie:
        specs.append(("out.W", (V, D)))
    specs.append(("out.b", (V,)))
    return specs


def positions(T, D):
    pe = torch.zeros(T, D, dtype=DT)
    for t in range(T):
        for i in range(0, D, 2):
            ang = t / math.pow(10000.0, i / D)
            pe[t, i] = math.sin(ang)
            if i + 1 < D:
                pe[t, i + 1] = math.cos(ang)
    return pe


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5) * w + b


def attend(kind, q, k, v, key_len, causal, v_a, gain=None, qk_gain=None):
    """q [B,NH,Tq,HS], k, v [B,NH,Tk,HS] -> [B,NH,Tq,HS]"""
    B, NH, Tq, HS = q.shape
    Tk = k.shape[2]
    keys = torch.arange(Tk)[None, :] < key_len[:, None]  # [B,Tk]
    vis = keys[:, None, None, :].expand(B, NH, Tq, Tk)
    if causal:
        vis = vis & (torch.arange(Tk)[None, :] <= torch.arange(Tq)[:, None] + (Tk - Tq))
    if kind in SOFTMAX_KINDS + ("qknorm",):
        if kind == "qknorm":
            g = math.log2(100 * 100 - 100) + qk_gain[0]
            e = g * torch.nn.functional.normalize(q, dim=-1) @ torch.nn.functional.normalize(
                k, dim=-1).transpose(-1, -2)
        elif kind in ("bahdanau", "luong_concat"):
            e = (torch.tanh(q[:, :, :, None, :] + k[:, :, None, :, :]) * v_a[None, :, None, None, :]).sum(-1)
        else:
            e = q @ k.transpose(-1, -2) * (1 / math.sqrt(HS) if kind in ("sdp", "flash") else 1.0)
        a = torch.softmax(e.masked_fill(~vis, float("-inf")), dim=-1)
        return a @ v
    if kind in ("sigmoid", "rela"):
        e = q @ k.transpose(-1, -2) / math.sqrt(HS)
        if kind == "sigmoid":
            n = vis.sum(-1, keepdim=True).clamp(min=1).to(DT)
            return (torch.sigmoid(e - torch.log(n)) * vis) @ v
        y = (torch.relu(e) * vis) @ v
        return y * torch.rsqrt((y * y).mean(-1, keepdim=True) + 1e-8) * gain[None, :, None, :]
    if kind == "linear":
        phi = lambda x: torch.nn.functional.elu(x) + 1  # noqa: E731
        w = (phi(q) @ phi(k).transpose(-1, -2)) * vis
        return (w @ v) / (w.sum(-1, keepdim=True) + 1e-6)
    assert kind == "efficient" and not causal
    P = torch.softmax(q, dim=-1)
    Kn = torch.softmax(k.masked_fill(~keys[:, None, :, None], float("-inf")), dim=2)
    return P @ (Kn.transpose(-1, -2) @ v)


def mha(P, p, kind, xq, xkv, key_len, causal, NH):
    B, Tq, D = xq.shape
    Tk, HS = xkv.shape[1], D // NH
    qm = xq @ P[p + ".W_q"].T + P[p + ".b_q"]
    if kind == "luong_general":
        qm = qm @ P[p + ".W_a"]
    q = qm.view(B, Tq, NH, HS).transpose(1, 2)
    k = (xkv @ P[p + ".W_k"].T + P[p + ".b_k"]).view(B, Tk, NH, HS).transpose(1, 2)
    v = (xkv @ P[p + ".W_v"].T + P[p + ".b_v"]).view(B, Tk, NH, HS).transpose(1, 2)
    o = attend(kind, q, k, v, key_len, causal, P.get(p + ".v_a"), P.get(p + ".rms_gain"),
               P.get(p + ".qk_gain"))
    return o.transpose(1, 2).reshape(B, Tq, D) @ P[p + ".W_o"].T + P[p + ".b_o"]


def sub(P, p, i, x, f, pre):
    ln = lambda y: layer_norm(y, P[f"{p}.ln{i}.w"], P[f"{p}.ln{i}.b"])  # noqa: E731
    return x + f(ln(x)) if pre else ln(x + f(x))


def ffn(P, p, a):
    return torch.relu(a @ P[p + ".ffn.W1"].T + P[p + ".ffn.b1"]) @ P[p + ".ffn.W2"].T + P[p + ".ffn.b2"]


def model_logits(P, cfg, src, src_len, tgt_in, tgt_len):
    """src [B,S], tgt_in [B,T] batch-major -> logits [B,T,V]"""
    V, D, NH, F, Le, Ld, norm, tie, es, ds, cr = cfg
    pre = norm == "pre"
    E_src = P["emb" if tie else "enc.emb"]
    E_tgt = P["emb" if tie else "dec.emb"]
    S, T = src.shape[1], tgt_in.shape[1]
    x = E_src[src] * math.sqrt(D) + positions(S, D)
    for l in range(Le):
        p = f"enc.l{l}"
        x = sub(P, p, 1, x, lambda a: mha(P, p + ".self", es, a, a, src_len, False, NH), pre)
        x = sub(P, p, 2, x, lambda a: ffn(P, p, a), pre)
    mem = layer_norm(x, P["enc.ln.w"], P["enc.ln.b"]) if pre else x
    y = E_tgt[tgt_in] * math.sqrt(D) + positions(T, D)
    for l in range(Ld):
        p = f"dec.l{l}"
        y = sub(P, p, 1, y, lambda a: mha(P, p + ".self", ds, a, a, tgt_len, True, NH), pre)
        y = sub(P, p, 2, y, lambda a: mha(P, p + ".cross", cr, a, mem, src_len, False, NH), pre)
        y = sub(P, p, 3, y, lambda a: ffn(P, p, a), pre)
    if pre:
        y = layer_norm(y, P["dec.ln.w"], P["dec.ln.b"])
    return y @ (P["emb"] if tie else P["out.W"]).T + P["out.b"]


def torch_layers_logits(P, cfg, src, src_len, tgt_in, tgt_len):
    """The sdp model through nn.TransformerEncoderLayer / nn.TransformerDecoderLayer."""
    V, D, NH, F, Le, Ld, norm, tie, es, ds, cr = cfg
    assert es == ds == cr == "sdp"
    pre = norm == "pre"
    nn = torch.nn

    def load_mha(m, p):
        with torch.no_grad():
            m.in_proj_weight.copy_(torch.cat([P[p + ".W_q"], P[p + ".W_k"], P[p + ".W_v"]]))
            m.in_proj_bias.copy_(torch.cat([P[p + ".b_q"], P[p + ".b_k"], P[p + ".b_v"]]))
            m.out_proj.weight.copy_(P[p + ".W_o"])
            m.out_proj.bias.copy_(P[p + ".b_o"])

    def load_rest(layer, p, n):
        with torch.no_grad():
            for i in range(1, n + 1):
                getattr(layer, f"norm{i}").weight.copy_(P[f"{p}.ln{i}.w"])
                getattr(layer, f"norm{i}").bias.copy_(P[f"{p}.ln{i}.b"])
            layer.linear1.weight.copy_(P[p + ".ffn.W1"])
            layer.linear1.bias.copy_(P[p + ".ffn.b1"])
            layer.linear2.weight.copy_(P[p + ".ffn.W2"])
            layer.linear2.bias.copy_(P[p + ".ffn.b2"])

    S, T = src.shape[1], tgt_in.shape[1]
    src_pad = ~(torch.arange(S)[None, :] < src_len[:, None])
    tgt_pad = ~(torch.arange(T)[None, :] < tgt_len[:, None])
    causal = torch.triu(torch.full((T, T), float("-inf"), dtype=DT), diagonal=1)
    E_src = P["emb" if tie else "enc.emb"].detach()
    E_tgt = P["emb" if tie else "dec.emb"].detach()
    x = E_src[src] * math.sqrt(D) + positions(S, D)
    for l in range(Le):
        layer = nn.TransformerEncoderLayer(D, NH, F, dropout=0.0, batch_first=True,
                                           norm_first=pre).to(DT).train()
        load_mha(layer.self_attn, f"enc.l{l}.self")
        load_rest(layer, f"enc.l{l}", 2)
        x = layer(x, src_key_padding_mask=src_pad)
    if pre:
        fin = nn.LayerNorm(D).to(DT)
        with torch.no_grad():
            fin.weight.copy_(P["enc.ln.w"]), fin.bias.copy_(P["enc.ln.b"])
        x = fin(x)
    y = E_tgt[tgt_in] * math.sqrt(D) + positions(T, D)
    for l in range(Ld):
        layer = nn.TransformerDecoderLayer(D, NH, F, dropout=0.0, batch_first=True,
                                           norm_first=pre).to(DT).train()
        load_mha(layer.self_attn, f"dec.l{l}.self")
        load_mha(layer.multihead_attn, f"dec.l{l}.cross")
        load_rest(layer, f"dec.l{l}", 3)
        y = layer(y, x, tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                  memory_key_padding_mask=src_pad)
    if pre:
        fin = nn.LayerNorm(D).to(DT)
        with torch.no_grad():
            fin.weight.copy_(P["dec.ln.w"]), fin.bias.copy_(P["dec.ln.b"])
        y = fin(y)
    return y @ (P["emb"] if tie else P["out.W"]).detach().T + P["out.b"].detach()


def make_case(fname, seed, cfg, src_lens, tgt_lens, eps=0.1):
    V, D, NH, F, Le, Ld, norm, tie, es, ds, cr = cfg
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    specs = declare(cfg)
    P = {}
    for name, shape in specs:
        w = torch.rand(shape, dtype=DT) * 2 - 1
        if (".ln" in name and name.endswith(".w")) or name.endswith(".rms_gain"):
            w = 1.0 + 0.5 * w
        P[name] = w.float().double().requires_grad_(True)  # exact float32 values
    src, src_len, tgt_in, tgt_out = make_batch(gen, V, src_lens, tgt_lens)  # time-major
    tgt_len = torch.tensor([n + 1 for n in tgt_lens], dtype=torch.long)  # BOS y_1 .. y_n
    logits = model_logits(P, cfg, src.T, src_len, tgt_in.T, tgt_len)  # [B,T,V]
    if es == ds == cr == "sdp":
        ref = torch_layers_logits(P, cfg, src.T, src_len, tgt_in.T, tgt_len)
        err = (ref - logits.detach()).abs().max().item()
        assert err < 1e-10, f"{fname}: nn.Transformer layers differ by {err}"
        print(f"{fname}: nn.TransformerEncoderLayer/DecoderLayer agree to {err:.1e}")
    logp = torch.log_softmax(logits, dim=2)
    y = tgt_out.T
    nll = -logp.gather(2, y[:, :, None])[:, :, 0]
    keep = (y != PAD).to(DT)
    loss = (((1 - eps) * nll - eps * logp.sum(2) / V) * keep).sum()
    loss.backward()
    S, B = src.shape
    T = tgt_in.shape[0]
    with open(os.path.join(OUT, fname), "w") as f:
        f.write("# written by tests/reference/make_transformer_fixture.py (torch %s, seed %d); "
                "do not edit\n" % (torch.__version__, seed))
        f.write("transformer_fixture 1\n")
        f.write("config %d %d %d %d %d %d %s %d %s %s %s %s\n"
                % (V, D, NH, F, Le, Ld, norm, tie, es, ds, cr, repr(eps)))
        write_body(f, (B, S, T, V), (src, src_len, tgt_in, tgt_out), loss,
                   logits.detach().transpose(0, 1), specs, P)
    print("%s: loss %.10f, %d parameters" % (fname, loss.item(), sum(p.numel() for p in P.values())))


def main(only):
    """Writes every case, or only the files named in only."""
    os.makedirs(OUT, exist_ok=True)
    V, D, NH, F = 17, 8, 2, 12
    cases = [
        # sources of lengths 6, 4, 2 (S 6), targets of 4, 2, 5 tokens (T 6)
        ("sdp_pre_tied.txt", 11, (V, D, NH, F, 2, 2, "pre", 1, "sdp", "sdp", "sdp"),
         [6, 4, 2], [4, 2, 5]),
        ("sdp_post_untied.txt", 12, (V, D, NH, F, 1, 2, "post", 0, "sdp", "sdp", "sdp"),
         [3, 5, 1], [3, 4, 1]),
        ("linear_efficient.txt", 13,
         (V, D, NH, F, 2, 1, "pre", 1, "linear", "linear", "efficient"), [2, 5, 4], [1, 3, 3]),
        ("efficient_flash_bahdanau.txt", 14,
         (V, D, NH, F, 1, 1, "post", 0, "efficient", "flash", "bahdanau"), [6, 4, 2], [4, 2, 5]),
        ("general_concat_dot.txt", 15,
         (V, D, NH, F, 1, 2, "pre", 0, "luong_general", "luong_concat", "luong_dot"),
         [3, 5, 1], [3, 4, 1]),
        ("sigmoid_rela_sigmoid.txt", 16,
         (V, D, NH, F, 2, 2, "pre", 1, "sigmoid", "rela", "sigmoid"), [6, 4, 2], [4, 2, 5]),
        ("rela_sigmoid_rela.txt", 17,
         (V, D, NH, F, 1, 2, "post", 0, "rela", "sigmoid", "rela"), [3, 5, 1], [3, 4, 1]),
        ("qknorm_pre_tied.txt", 18,
         (V, D, NH, F, 2, 2, "pre", 1, "qknorm", "qknorm", "qknorm"), [6, 4, 2], [4, 2, 5]),
        ("qknorm_sdp_qknorm.txt", 19,
         (V, D, NH, F, 1, 2, "post", 0, "qknorm", "sdp", "qknorm"), [3, 5, 1], [3, 4, 1]),
    ]
    for fname, seed, cfg, src_lens, tgt_lens in cases:
        if not only or fname in only:
            make_case(fname, seed, cfg, src_lens, tgt_lens)


if __name__ == "__main__":
    main(sys.argv[1:])
