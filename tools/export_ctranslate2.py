#!/usr/bin/env python3
"""export_ctranslate2.py — writes a trainer Transformer checkpoint as a CTranslate2 model folder.

    python3 tools/export_ctranslate2.py --checkpoint checkpoints/transformer/best.ckpt \\
        --out ct2-model [--quantization int8] [--max-positions 1024] [--force]

Input: a checkpoint written by `trainer` (best.ckpt, avg.ckpt, last.ckpt, epoch<N>.ckpt) of a
model.type = transformer run whose three attention slots are sdp or flash. Its container is read
here, not through the trainer: the header, the record table and every record this tool uses
are checked as src/train/ckptfile.c checks them (magic, version, header CRC, contiguous
payloads, zlib streams of the declared size, payload and data CRCs). The records used: "config"
(the resolved INI of the run), "spm" (the SentencePiece model) and the "param/" tensors, the
weights that `trainer translate` decodes with (best.ckpt of a run with train.ema_decay holds the
moving average there); Adam's moments and the "ema/" records are skipped.

Output: the folder --out with CTranslate2's model.bin, config.json and shared_vocabulary.json
(the SentencePiece pieces in id order, the trainer's special pieces at ids 0-3 included), built
with ctranslate2.specs.TransformerSpec. Greedy decoding of the folder with CTranslate2 gives the
trainer's greedy translations (tests/slow/ct2_roundtrip.sh checks it); what maps to what, and
the options to pass to translate_batch: docs/export.md.

Errors: a model CTranslate2 cannot express is refused naming the config key and its value
(model.type = rnn; an attention kind other than sdp or flash in any slot; a [model] key this
tool does not know); so are a file that is not a trainer checkpoint or is corrupt, a checkpoint
whose tensors are missing, misshapen, unexpected or not finite, a SentencePiece model without
the trainer's special ids, and an existing --out without --force. Each message names the file,
record or key and what to do; exit 1 (2: a bad command line, from argparse).

Needs: Python 3.8+, numpy, and PyPI's ctranslate2 and sentencepiece (scripts/setup.sh installs
them into .venv/). Sources: the container, src/train/ckptfile.h; the records,
src/train/checkpoint.c; the model, src/model/transformer.c (layer order, layer norms, embedding
scale, positions) and src/attention/mha.h (projections and heads); the special ids,
src/core/tokens.h; the layer norm's epsilon, src/ops/cpu/layernorm.c; CTranslate2's
TransformerSpec (ctranslate2/specs/transformer_spec.py) and its OpenNMT-py converter
(ctranslate2/converters/opennmt_py.py), the example of the fused attention projections.
"""

import argparse
import math
import os
import struct
import sys
import zlib

PROG = "export_ctranslate2"

# src/train/ckptfile.h, format version 1
MAGIC = b"\x89TRCKPT\n"
FORMAT_VERSION = 1
HEADER_BYTES = 24
DESC_BYTES = 168
NAME_MAX = 96
MAX_NDIM = 4
MAX_RECORDS = 100000
DTYPES = {1: ("f32", 4, "<f4"), 2: ("i32", 4, "<i4"), 3: ("u8", 1, "u1"), 4: ("u64", 8, "<u8")}
CORRUPT = "; the file is truncated or corrupt — use another checkpoint"

# src/core/tokens.h: the ids SentencePiece models are trained with
TOKEN_PAD, TOKEN_UNK, TOKEN_BOS, TOKEN_EOS = 0, 1, 2, 3

# src/ops/cpu/layernorm.c: LN_EPS
LAYER_NORM_EPS = 1e-5

# Attention kinds CTranslate2's MultiHeadAttention computes: softmax(q kᵀ / √HS) v. flash is
# the same function (tiled, online softmax; tests/ops: flash = sdp), so it exports too.
EXPORTABLE_ATTENTION = ("sdp", "flash")

# [model] keys a Transformer's config may hold (config_to_ini writes only the keys the model
# reads): those that decide the export, and those that do not matter to inference.
MODEL_KEYS_USED = {"type", "d_model", "heads", "d_ff", "enc_layers", "dec_layers", "norm",
                   "tie_embeddings", "self_attention", "dec_self_attention", "cross_attention"}
MODEL_KEYS_IGNORED = {"dropout"}


class ExportError(Exception):
    """Bad input: the message names the file, record or key and what to do."""


# ---------------------------------------------------------------------------------------------
# the checkpoint container (src/train/ckptfile.h)


class Record:
    def __init__(self, name, dtype, shape, offset, csize, usize, ucrc, ccrc):
        self.name, self.dtype, self.shape = name, dtype, shape
        self.offset, self.csize, self.usize, self.ucrc, self.ccrc = offset, csize, usize, ucrc, ccrc


class Checkpoint:
    """The record table of a checkpoint, checked; read(name) returns a record's bytes, checked."""

    def __init__(self, path):
        self.path = path
        try:
            self.f = open(path, "rb")
            fsize = os.fstat(self.f.fileno()).st_size
        except OSError as e:
            raise ExportError("checkpoint %s: cannot be read (%s); give the path of a .ckpt file "
                              "written by trainer" % (path, e.strerror))
        if fsize < HEADER_BYTES:
            raise ExportError("checkpoint %s: the file is %d bytes long, shorter than the %d-byte "
                              "header%s" % (path, fsize, HEADER_BYTES, CORRUPT))
        hdr = self.f.read(HEADER_BYTES)
        if hdr[:8] != MAGIC:
            raise ExportError("checkpoint %s: not a trainer checkpoint (the first 8 bytes are "
                              "not the checkpoint magic number); give the path of a .ckpt file "
                              "written by trainer" % path)
        version, count, stored_hcrc, reserved = struct.unpack("<IIII", hdr[8:24])
        if version > FORMAT_VERSION:
            raise ExportError("checkpoint %s: format version %d is newer than this tool reads "
                              "(%d); use the tools/ of the trainer that wrote it"
                              % (path, version, FORMAT_VERSION))
        if version == 0 or reserved != 0 or count > MAX_RECORDS:
            raise ExportError("checkpoint %s: the header is invalid (version %d, %d records, "
                              "reserved field %d)%s" % (path, version, count, reserved, CORRUPT))
        table_end = HEADER_BYTES + count * DESC_BYTES
        if table_end > fsize:
            raise ExportError("checkpoint %s: the record table of %d records ends at offset %d "
                              "but the file is %d bytes long%s"
                              % (path, count, table_end, fsize, CORRUPT))
        table = self.f.read(count * DESC_BYTES)
        hcrc = zlib.crc32(table, zlib.crc32(hdr[:16] + b"\0\0\0\0" + hdr[20:]))
        if hcrc != stored_hcrc:
            raise ExportError("checkpoint %s: header checksum mismatch (stored %08x, computed "
                              "%08x); the header or record table is corrupt — use another "
                              "checkpoint" % (path, stored_hcrc, hcrc))
        self.records = {}
        expect = table_end
        for i in range(count):
            d = table[i * DESC_BYTES:(i + 1) * DESC_BYTES]
            raw = d[:NAME_MAX]
            end = raw.find(b"\0")
            if end <= 0 or any(c < 0x20 or c > 0x7E for c in raw[:end]) or raw[end:].strip(b"\0"):
                raise ExportError("checkpoint %s: the name of record %d is not printable ASCII "
                                  "padded with NULs%s" % (path, i, CORRUPT))
            name = raw[:end].decode("ascii")
            dtype, ndim = struct.unpack("<II", d[96:104])
            dims = struct.unpack("<4Q", d[104:136])
            offset, csize, usize = struct.unpack("<QQQ", d[136:160])
            ucrc, ccrc = struct.unpack("<II", d[160:168])
            if dtype not in DTYPES or ndim > MAX_NDIM or any(dims[ndim:]):
                raise ExportError("checkpoint %s: record '%s' has dtype %d and %d dimensions "
                                  "%s%s" % (path, name, dtype, ndim, list(dims), CORRUPT))
            shape = tuple(dims[:ndim])
            if math.prod(shape) * DTYPES[dtype][1] != usize:
                raise ExportError("checkpoint %s: record '%s' (%s %s) declares %d bytes%s"
                                  % (path, name, DTYPES[dtype][0], list(shape), usize, CORRUPT))
            if offset != expect or offset + csize > fsize:
                raise ExportError("checkpoint %s: record '%s' claims %d bytes at offset %d, but "
                                  "it should start at %d in a file of %d bytes%s"
                                  % (path, name, csize, offset, expect, fsize, CORRUPT))
            if name in self.records:
                raise ExportError("checkpoint %s: the name '%s' is used by two records%s"
                                  % (path, name, CORRUPT))
            self.records[name] = Record(name, dtype, shape, offset, csize, usize, ucrc, ccrc)
            expect = offset + csize
        if expect != fsize:
            raise ExportError("checkpoint %s: %d unexpected bytes after the last record%s"
                              % (path, fsize - expect, CORRUPT))
        # every stored byte against its payload CRC, as the trainer's reader does (the records
        # this tool does not use, Adam's moments, are not decompressed)
        for r in self.records.values():
            crc, left = 0, r.csize
            while left > 0:
                block = self.f.read(min(left, 1 << 20))
                if not block:
                    break
                crc, left = zlib.crc32(block, crc), left - len(block)
            if left or crc != r.ccrc:
                raise ExportError("checkpoint %s: the stored bytes of record '%s' fail their "
                                  "checksum%s" % (path, r.name, CORRUPT))

    def read(self, name):
        """The uncompressed bytes of record name, every CRC checked."""
        r = self.records[name]
        self.f.seek(r.offset)
        payload = self.f.read(r.csize)
        if len(payload) != r.csize or zlib.crc32(payload) != r.ccrc:
            raise ExportError("checkpoint %s: the stored bytes of record '%s' fail their "
                              "checksum%s" % (self.path, name, CORRUPT))
        d = zlib.decompressobj()
        try:
            data = d.decompress(payload, r.usize + 1)
        except zlib.error as e:
            raise ExportError("checkpoint %s: record '%s' is not a valid zlib stream (%s)%s"
                              % (self.path, name, e, CORRUPT))
        if not d.eof or d.unused_data or len(data) != r.usize or zlib.crc32(data) != r.ucrc:
            raise ExportError("checkpoint %s: record '%s' does not decompress to its %d bytes "
                              "with their checksum%s" % (self.path, name, r.usize, CORRUPT))
        return data

    def tensor(self, name):
        import numpy as np
        r = self.records[name]
        return np.frombuffer(self.read(name), dtype=DTYPES[r.dtype][2]).reshape(r.shape)


# ---------------------------------------------------------------------------------------------
# the stored config (config_to_ini in src/train/config_render.c)


def parse_ini(text, where):
    """{section: {key: value}} of config_to_ini's text (strings lose their double quotes)."""
    cfg, section = {}, None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = cfg.setdefault(line[1:-1].strip(), {})
            continue
        key, eq, value = line.partition("=")
        if not eq or section is None:
            raise ExportError("%s, line %d: '%s' is not a key = value line of a section; the "
                              "checkpoint is corrupt — use another one" % (where, n, line))
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        section[key.strip()] = value
    return cfg


class ModelConfig:
    """The [model] section of a Transformer's stored config, refused where CTranslate2's
    Transformer cannot express it."""

    def __init__(self, model, path):
        where = "checkpoint %s: stored config" % path
        kind = model.get("type")
        if kind != "transformer":
            raise ExportError("%s: model.type = %s: CTranslate2's TransformerSpec holds a "
                              "Transformer encoder–decoder only; export a checkpoint of a "
                              "model.type = transformer run" % (where, kind))
        for k in model:
            if k not in MODEL_KEYS_USED and k not in MODEL_KEYS_IGNORED:
                raise ExportError("%s: model.%s = %s: this export does not know the key, so it "
                                  "cannot tell whether CTranslate2 computes the same model; "
                                  "update tools/export_ctranslate2.py for it"
                                  % (where, k, model[k]))
        for k in MODEL_KEYS_USED:
            if k not in model:
                raise ExportError("%s: model.%s is missing; the checkpoint was not written by "
                                  "this trainer" % (where, k))
        slots = {"self_attention": model["self_attention"],
                 "dec_self_attention": model["dec_self_attention"],
                 "cross_attention": model["cross_attention"]}
        if slots["dec_self_attention"] == "same":
            slots["dec_self_attention"] = slots["self_attention"]
        for k, v in slots.items():
            if v not in EXPORTABLE_ATTENTION:
                raise ExportError("%s: model.%s = %s: CTranslate2's Transformer computes scaled "
                                  "dot-product attention only (softmax(q kᵀ / √d_head) v); "
                                  "export a model with sdp or flash in every attention slot"
                                  % (where, k, v))
        try:
            self.D, self.NH, self.F = (int(model[k]) for k in ("d_model", "heads", "d_ff"))
            self.Le, self.Ld = int(model["enc_layers"]), int(model["dec_layers"])
        except ValueError:
            raise ExportError("%s: a size in [model] is not an integer; the checkpoint is "
                              "corrupt — use another one" % where)
        if self.D <= 0 or self.NH <= 0 or self.D % self.NH:
            raise ExportError("%s: model.d_model = %d is not a multiple of model.heads = %d; the "
                              "checkpoint is corrupt — use another one" % (where, self.D, self.NH))
        if model["norm"] not in ("pre", "post"):
            raise ExportError("%s: model.norm = %s is neither pre nor post; the checkpoint is "
                              "corrupt — use another one" % (where, model["norm"]))
        self.pre = model["norm"] == "pre"
        if model["tie_embeddings"] not in ("true", "false"):
            raise ExportError("%s: model.tie_embeddings = %s is neither true nor false; the "
                              "checkpoint is corrupt — use another one"
                              % (where, model["tie_embeddings"]))
        self.tied = model["tie_embeddings"] == "true"
        self.slots = slots


# ---------------------------------------------------------------------------------------------
# the model: trainer parameters → CTranslate2 spec


def sinusoid_positions(n, D):
    """PE[t, 2i] = sin(t / 10000^(2i/D)), PE[t, 2i+1] = cos(the same) in double, rounded to
    float32: tf_reserve_positions in src/model/transformer.c, with the same libm (math.sin and
    math.pow are the C library's), so the table is the trainer's bit for bit. CTranslate2's
    own default table is [sin | cos] in halves, another layout: it is always replaced."""
    import numpy as np
    pe = np.zeros((n, D), dtype=np.float64)
    for i in range(0, D, 2):
        div = math.pow(10000.0, i / D)
        for t in range(n):
            ang = t / div
            pe[t, i] = math.sin(ang)
            if i + 1 < D:
                pe[t, i + 1] = math.cos(ang)
    return pe.astype(np.float32)


class Params:
    """The "param/" tensors, each taken once; shapes and finiteness checked."""

    def __init__(self, ckpt):
        self.ckpt = ckpt
        self.left = {n[len("param/"):] for n in ckpt.records if n.startswith("param/")}

    def take(self, name, shape):
        import numpy as np
        full = "param/" + name
        if full not in self.ckpt.records:
            raise ExportError("checkpoint %s: tensor '%s' is missing; the file was not written "
                              "for the model of its stored config" % (self.ckpt.path, full))
        r = self.ckpt.records[full]
        if r.dtype != 1 or r.shape != tuple(shape):
            raise ExportError("checkpoint %s: tensor '%s' is %s %s, the model needs f32 %s; the "
                              "file was not written for the model of its stored config"
                              % (self.ckpt.path, full, DTYPES[r.dtype][0], list(r.shape),
                                 list(shape)))
        x = self.ckpt.tensor(full)
        if not np.all(np.isfinite(x)):
            raise ExportError("checkpoint %s: tensor '%s' holds a non-finite value; export an "
                              "earlier checkpoint" % (self.ckpt.path, full))
        self.left.discard(name)
        return np.array(x)  # writable, owned

    def check_all_taken(self):
        if self.left:
            raise ExportError("checkpoint %s: tensor 'param/%s' has no place in CTranslate2's "
                              "Transformer (this export maps the parameters of sdp and flash "
                              "attention only); the model is not one this tool can export"
                              % (self.ckpt.path, sorted(self.left)[0]))


def set_norm(spec, p, name, D):
    spec.gamma = p.take(name + ".w", (D,))
    spec.beta = p.take(name + ".b", (D,))


def set_linear(spec, p, w, b, rows, cols):
    spec.weight = p.take(w, (rows, cols))  # y = x Wᵀ + b: [out, in], as CTranslate2's Linear
    spec.bias = p.take(b, (rows,))


def set_attention(spec, p, prefix, D, self_attention):
    """mha.h: q = xq W_qᵀ + b_q, k = xkv W_kᵀ + b_k, v = xkv W_vᵀ + b_v, heads the consecutive
    HS-wide column blocks ([B,T,NH,HS] → [B,NH,T,HS]), out = concat_h(o_h) W_oᵀ + b_o.
    CTranslate2 splits its fused projections into the same blocks: self-attention linear[0] =
    [W_q; W_k; W_v], cross-attention linear[0] = W_q and linear[1] = [W_k; W_v]; the last
    linear is W_o."""
    import numpy as np
    W = {k: p.take("%s.W_%s" % (prefix, k), (D, D)) for k in "qkvo"}
    b = {k: p.take("%s.b_%s" % (prefix, k), (D,)) for k in "qkvo"}
    if self_attention:
        spec.linear[0].weight = np.concatenate([W["q"], W["k"], W["v"]])
        spec.linear[0].bias = np.concatenate([b["q"], b["k"], b["v"]])
    else:
        spec.linear[0].weight, spec.linear[0].bias = W["q"], b["q"]
        spec.linear[1].weight = np.concatenate([W["k"], W["v"]])
        spec.linear[1].bias = np.concatenate([b["k"], b["v"]])
    spec.linear[-1].weight, spec.linear[-1].bias = W["o"], b["o"]


def set_ffn(spec, p, prefix, D, F):
    """FFN(a) = W2 relu(a W1ᵀ + b1) + b2 (transformer.c ffn_forward): linear_0, ReLU, linear_1."""
    set_linear(spec.linear_0, p, prefix + ".W1", prefix + ".b1", F, D)
    set_linear(spec.linear_1, p, prefix + ".W2", prefix + ".b2", D, F)


def build_spec(ckpt, mc, V, max_positions):
    """The TransformerSpec of the checkpoint's model. Layer l of the encoder holds the
    sub-layers self (ln1), FFN (ln2); of the decoder self (ln1), cross (ln2), FFN (ln3). Each
    sub-layer's norm is CTranslate2's layer_norm of that sub-layer: applied to its input in
    pre-LN (s = u + f(LN(u))) and to the residual sum in post-LN (LN(u + f(u))), as
    CTranslate2 does with pre_norm True or False; pre-LN adds the final norms enc.ln and
    dec.ln, post-LN has none."""
    import ctranslate2.specs as cs
    enc = cs.TransformerEncoderSpec(mc.Le, mc.NH, pre_norm=mc.pre,
                                    activation=cs.Activation.RELU)
    dec = cs.TransformerDecoderSpec(mc.Ld, mc.NH, pre_norm=mc.pre,
                                    activation=cs.Activation.RELU)
    spec = cs.TransformerSpec(enc, dec)
    p = Params(ckpt)
    D, F = mc.D, mc.F
    pe = sinusoid_positions(max_positions, D)
    # embed(): x = E[ids] · √D + PE[t], t from 0 in both stacks (the decoder's BOS at t = 0)
    E_src = p.take("emb" if mc.tied else "enc.emb", (V, D))
    enc.embeddings[0].weight = E_src
    enc.scale_embeddings = True
    enc.position_encodings.encodings = pe
    for l in range(mc.Le):
        L, q = enc.layer[l], "enc.l%d" % l
        set_norm(L.self_attention.layer_norm, p, q + ".ln1", D)
        set_attention(L.self_attention, p, q + ".self", D, True)
        set_norm(L.ffn.layer_norm, p, q + ".ln2", D)
        set_ffn(L.ffn, p, q + ".ffn", D, F)
    if mc.pre:
        set_norm(enc.layer_norm, p, "enc.ln", D)
    dec.embeddings.weight = E_src if mc.tied else p.take("dec.emb", (V, D))
    dec.scale_embeddings = True
    dec.position_encodings.encodings = pe
    for l in range(mc.Ld):
        L, q = dec.layer[l], "dec.l%d" % l
        set_norm(L.self_attention.layer_norm, p, q + ".ln1", D)
        set_attention(L.self_attention, p, q + ".self", D, True)
        set_norm(L.attention.layer_norm, p, q + ".ln2", D)
        set_attention(L.attention, p, q + ".cross", D, False)
        set_norm(L.ffn.layer_norm, p, q + ".ln3", D)
        set_ffn(L.ffn, p, q + ".ffn", D, F)
    if mc.pre:
        set_norm(dec.layer_norm, p, "dec.ln", D)
    # logits = y W_outᵀ + b_out; tied: W_out is the embedding table
    dec.projection.weight = E_src if mc.tied else p.take("out.W", (V, D))
    dec.projection.bias = p.take("out.b", (V,))
    p.check_all_taken()
    return spec


def vocabulary(ckpt):
    """The SentencePiece model's pieces in id order, and the pieces of the special ids."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(ckpt.read("spm"))
    except (RuntimeError, OSError) as e:
        raise ExportError("checkpoint %s: the stored SentencePiece model does not load (%s); "
                          "use another checkpoint" % (ckpt.path, e))
    ids = (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id())
    if ids != (TOKEN_PAD, TOKEN_UNK, TOKEN_BOS, TOKEN_EOS):
        raise ExportError("checkpoint %s: the SentencePiece model has pad/unk/bos/eos ids "
                          "%d/%d/%d/%d, the trainer's are %d/%d/%d/%d; the checkpoint was not "
                          "written by this trainer" % ((ckpt.path,) + ids + (TOKEN_PAD, TOKEN_UNK,
                                                                              TOKEN_BOS, TOKEN_EOS)))
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    if len(set(pieces)) != len(pieces):
        raise ExportError("checkpoint %s: the SentencePiece model repeats a piece; use another "
                          "checkpoint" % ckpt.path)
    return pieces


def export(ckpt_path, out, quantization=None, max_positions=1024, force=False):
    """Writes the CTranslate2 folder out from the checkpoint at ckpt_path; returns a summary."""
    try:
        import numpy  # noqa: F401
        import ctranslate2
        import ctranslate2.specs  # noqa: F401
        from ctranslate2.converters.converter import Converter
        import sentencepiece  # noqa: F401
    except ImportError as e:
        raise ExportError("needs numpy and PyPI's ctranslate2 and sentencepiece (%s): run "
                          "bash scripts/setup.sh, then .venv/bin/python3 %s"
                          % (e, " ".join(sys.argv)))
    if os.path.exists(out) and not force:
        raise ExportError("--out %s already exists; give another folder, or --force to replace "
                          "it" % out)
    if max_positions < 1:
        raise ExportError("--max-positions %d: give at least 1 (the longest source or "
                          "translation CTranslate2 may then process)" % max_positions)
    ckpt = Checkpoint(ckpt_path)
    for name, dtype in (("config", 3), ("spm", 3)):
        r = ckpt.records.get(name)
        if r is None or r.dtype != dtype:
            raise ExportError("checkpoint %s: the record '%s' is missing or not u8, so this is "
                              "not a complete trainer checkpoint; use another checkpoint"
                              % (ckpt_path, name))
    try:
        text = ckpt.read("config").decode("utf-8")
    except UnicodeDecodeError:
        raise ExportError("checkpoint %s: the stored config is not UTF-8; use another checkpoint"
                          % ckpt_path)
    cfg = parse_ini(text, "checkpoint %s: stored config" % ckpt_path)
    mc = ModelConfig(cfg.get("model", {}), ckpt_path)
    pieces = vocabulary(ckpt)
    spec = build_spec(ckpt, mc, len(pieces), max_positions)
    for tokens in (spec.register_source_vocabulary, spec.register_target_vocabulary):
        tokens(pieces)
    # decoding starts from BOS (src/eval/decode.c) and ends at EOS; sources carry neither
    spec.config.unk_token = pieces[TOKEN_UNK]
    spec.config.bos_token = pieces[TOKEN_BOS]
    spec.config.eos_token = pieces[TOKEN_EOS]
    spec.config.decoder_start_token = pieces[TOKEN_BOS]
    spec.config.add_source_bos = False
    spec.config.add_source_eos = False
    spec.config.layer_norm_epsilon = LAYER_NORM_EPS

    class _Loaded(Converter):
        def _load(self):
            return spec

    _Loaded().convert(out, quantization=quantization, force=force)
    return ("%s: %s-LN Transformer, %d+%d layers of %d, %d heads, FFN %d, %s embeddings, "
            "attention %s/%s/%s, %d pieces → %s (CTranslate2 %s%s)"
            % (ckpt_path, "pre" if mc.pre else "post", mc.Le, mc.Ld, mc.D, mc.NH, mc.F,
               "tied" if mc.tied else "separate", mc.slots["self_attention"],
               mc.slots["dec_self_attention"], mc.slots["cross_attention"], len(pieces), out,
               ctranslate2.__version__, ", " + quantization if quantization else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG, description="Write a trainer Transformer checkpoint as a CTranslate2 model "
        "folder (docs/export.md).")
    ap.add_argument("--checkpoint", required=True, help="a .ckpt file of a Transformer run")
    ap.add_argument("--out", required=True, help="the CTranslate2 model folder to write")
    ap.add_argument("--quantization", default=None,
                    choices=["int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16",
                             "float16", "bfloat16", "float32"],
                    help="CTranslate2's weight type (default: float32, as trained; the others "
                    "round the weights, so translations may differ from the trainer's)")
    ap.add_argument("--max-positions", type=int, default=1024,
                    help="rows of the position table: the longest source and translation, in "
                    "pieces, CTranslate2 can process (default 1024, CTranslate2's default "
                    "max_input_length; the trainer has no such limit)")
    ap.add_argument("--force", action="store_true", help="replace --out if it exists")
    a = ap.parse_args(argv)
    try:
        print(export(a.checkpoint, a.out, a.quantization, a.max_positions, a.force))
    except ExportError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
