"""bench_dump.py — reads the batches and settings that bench_train --dump wrote, for the PyTorch
benchmark scripts (bench_rnn_torch.py, bench_transformer_torch.py); also the helpers they share
to report PyTorch's kernels and BLAS.

Dump format version 2 (little-endian; written by bench/bench_train.c, described in
bench/README.md):
  char magic[8] "BRNNDUMP", int32 version 2,
  uint32 n, char config[n]: the whole config as INI text (config_to_ini),
  int32 V, int32 threads, int64 parameter count (ours), int32 nbatches, int32 warmup (W),
  per batch: int32 B, S, T; int32 src[S*B], src_len[B], tgt_in[T*B], tgt_out[T*B]
             (time-major, element [t*B + b], PAD 0),
  uint32 CRC32 (zlib) of every byte before it.

read_dump(path) -> (Dump, batches). Dump.cfg is the config as a configparser (section "model",
"data", "train", "run"), with the double quotes around string values removed; Dump.get_int,
get_float, get_bool, get_str read one key and stop with a clear message when it is missing.
Each batch is a dict of int64 tensors src [S,B], src_len [B], tgt_in [T,B], tgt_out [T,B]
(time-major, as in the dump) and the counts src_tokens, tgt_tokens (non-pad; targets count EOS).
"""
import configparser
import struct
import sys
import time
import zlib

import numpy as np
import torch

PAD = 0
MAGIC = b"BRNNDUMP"
VERSION = 2


class Dump:
    """The header of a dump: the config, V, threads, our parameter count, nbatches, warmup."""

    def __init__(self, path, ini, V, threads, nparams, nbatches, warmup):
        self.path, self.ini = path, ini
        self.V, self.threads, self.nparams = V, threads, nparams
        self.nbatches, self.warmup = nbatches, warmup
        # config_to_ini: full-line '#' / ';' comments, [sections], key = value, strings quoted
        self.cfg = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"),
                                             inline_comment_prefixes=None, delimiters=("=",))
        try:
            self.cfg.read_string(ini, source=f"{path} (config)")
        except configparser.Error as e:
            sys.exit(f"{path}: the config in the dump is not readable INI: {e}")
        for sec in self.cfg.sections():
            for key, val in self.cfg.items(sec):
                if len(val) >= 2 and val[0] == val[-1] == '"':
                    self.cfg.set(sec, key, val[1:-1])

    def get_str(self, key):
        """key as "section.key", e.g. "model.type"."""
        sec, name = key.split(".", 1)
        if not self.cfg.has_option(sec, name):
            sys.exit(f"{self.path}: the dump's config has no {key}; rerun bench_train --dump "
                     "with the build that matches this script")
        return self.cfg.get(sec, name)

    def get_int(self, key):
        return int(self.get_str(key))

    def get_float(self, key):
        return float(self.get_str(key))

    def get_bool(self, key):
        sec, name = key.split(".", 1)
        self.get_str(key)
        return self.cfg.getboolean(sec, name)  # true/false/yes/no/on/off/1/0, as ours


def read_dump(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:8] != MAGIC:
        sys.exit(f"{path}: not a bench_train dump (bad magic)")
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) & 0xFFFFFFFF != crc:
        sys.exit(f"{path}: CRC32 mismatch (truncated or corrupt dump); rerun bench_train --dump")
    end = len(data) - 4
    off = 8

    def take(fmt):
        nonlocal off
        n = struct.calcsize(fmt)
        if off + n > end:
            sys.exit(f"{path}: truncated header")
        v = struct.unpack_from(fmt, data, off)
        off += n
        return v

    (version,) = take("<i")
    if version != VERSION:
        sys.exit(f"{path}: dump version {version}, this script reads version {VERSION}; "
                 "rerun build/bench_train --dump to write a new one")
    (n,) = take("<I")
    if off + n > end:
        sys.exit(f"{path}: truncated config text ({n} bytes announced)")
    try:
        ini = data[off:off + n].decode("utf-8")
    except UnicodeDecodeError as e:
        sys.exit(f"{path}: the config text is not UTF-8 ({e})")
    off += n
    V, threads = take("<2i")
    (nparams,) = take("<q")
    nb, warmup = take("<2i")
    hdr = Dump(path, ini, V, threads, nparams, nb, warmup)

    def ints(n):
        nonlocal off
        if n < 0 or off + 4 * n > end:
            sys.exit(f"{path}: truncated batch data")
        a = np.frombuffer(data, dtype="<i4", count=n, offset=off)
        off += 4 * n
        return a

    batches = []
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


def xent_sum(logits, targets, smoothing):
    """Label-smoothed cross-entropy summed over the targets that are not PAD (logits [N, V],
    targets [N]), as the trainer's loss before its 1 / target-tokens scale."""
    import torch.nn.functional as F
    return F.cross_entropy(logits, targets, ignore_index=PAD, label_smoothing=smoothing,
                           reduction="sum")


def loss_targets(tgt, nonpad):
    """The flattened targets tgt [N] (time- or batch-major, as the model's output rows) ->
    (rows, targets): with nonpad, rows [NR] = the positions that are not padding and targets =
    tgt at them (the output layer and loss then run on those rows only, the trainer's shortcut);
    else (None, tgt)."""
    if not nonpad:
        return None, tgt
    rows = torch.nonzero(tgt != PAD).squeeze(1)
    return rows, tgt.index_select(0, rows)


def to_device(model, batches, device):
    """--device cuda: the model's parameters and every tensor of every batch moved to the device
    before timing (the trainer's batcher hands the device its token ids before a step starts too).
    Float32 products stay float32, as the trainer's train.precision = fp32 (CUBLAS_COMPUTE_32F):
    TF32 is turned off both for cuBLAS's products (torch.backends.cuda.matmul.allow_tf32, off by
    default) and for cuDNN (torch.backends.cudnn.allow_tf32, ON by default: nn.LSTM runs on
    cuDNN), and both settings are printed."""
    if device == "cpu":
        return
    if not torch.cuda.is_available():
        sys.exit(f"--device {device}: PyTorch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model.to(device)
    for b in batches:
        for k, v in b.items():
            if torch.is_tensor(v):
                b[k] = v.to(device)
    print(f"pytorch: device {torch.cuda.get_device_name()}, TF32 for float32 products: "
          f"torch.backends.cuda.matmul.allow_tf32 = {torch.backends.cuda.matmul.allow_tf32}, "
          f"torch.backends.cudnn.allow_tf32 = {torch.backends.cudnn.allow_tf32}")


def time_training(model, batches, hdr, threads, loss_of, warm_every_shape=False, device="cpu"):
    """The training steps of every batch, the last hdr.nbatches - hdr.warmup timed, as bench_train
    runs them: zero the gradients; loss = loss_of(batch) (the label-smoothed cross-entropy summed
    over non-PAD targets, xent_sum), scaled by 1 / target tokens; backward; global gradient-norm
    clipping (train.clip_norm, 0 = off); Adam (train.lr with lr_at's warm-up, adam_beta1/2,
    adam_eps). Prints the first and last step's loss and the tokens/s of the timed steps (source
    + target, non-padding).

    warm_every_shape (torch.compile): before the steps, one forward + backward of every batch
    (no optimiser step; gradients discarded), so that compilation for every batch shape happens
    before the clock starts; its time is printed apart.

    train.precision = bf16 in the dump's config (bench_train --set train.precision=bf16): the
    forward and loss run under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's mixed
    precision on the CPU (bf16 inputs to the matrix products, fp32 weights and optimiser), as the
    trainer's bf16 rounds only its products' inputs (on --device cuda, autocast("cuda")).

    device "cuda": the clock is read after torch.cuda.synchronize(), at both ends."""
    bf16 = hdr.get_str("train.precision") == "bf16"
    if bf16:
        print(f"pytorch: torch.autocast({device}, bfloat16) around the forward and loss")
    inner = loss_of

    def loss_of(b):
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
            return inner(b).float()
    def sync():
        if device != "cpu":
            torch.cuda.synchronize()
    params = list(model.parameters())
    clip = hdr.get_float("train.clip_norm")
    opt = torch.optim.Adam(params, lr=hdr.get_float("train.lr"),
                           betas=(hdr.get_float("train.adam_beta1"),
                                  hdr.get_float("train.adam_beta2")),
                           eps=hdr.get_float("train.adam_eps"))
    if warm_every_shape:
        t = time.perf_counter()
        for b in batches:
            (loss_of(b) / b["tgt_tokens"]).backward()
        for prm in params:
            prm.grad = None
        print(f"pytorch: compiling / warming every batch shape took "
              f"{time.perf_counter() - t:.1f} s (not timed)")
    W, nb = hdr.warmup, hdr.nbatches
    tokens = 0
    t0 = None
    for k, b in enumerate(batches):
        if k == W:
            sync()
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_of(b)
        (loss / b["tgt_tokens"]).backward()
        # clip_norm 0 = off, as ours: an infinite max_norm returns the norm and scales by 1
        norm = torch.nn.utils.clip_grad_norm_(params, clip if clip > 0 else float("inf"))
        for g in opt.param_groups:
            g["lr"] = lr_at(hdr, k)
        opt.step()
        if k >= W:
            tokens += b["src_tokens"] + b["tgt_tokens"]
        if k == 0 or k == nb - 1:
            S, B = b["src"].shape
            print(f"pytorch: step {k} loss {loss.item() / b['tgt_tokens']:.4f} per target token "
                  f"(B {B} S {S} T {b['tgt_in'].shape[0]}, grad norm {float(norm):.3f})")
    sync()
    dt = time.perf_counter() - t0
    print(f"pytorch: {tokens} tokens (source + target, non-padding) in {dt:.3f} s")
    print(f"pytorch: {tokens / dt:.1f} tokens/s ({nb - W} steps, {threads} threads)")


def lr_at(hdr, k):
    """The learning rate of step k (0-based) as bench_train sets it: train.lr with the linear
    warm-up over train.warmup_steps (the few steps timed never reach a decay)."""
    lr, ws = hdr.get_float("train.lr"), hdr.get_int("train.warmup_steps")
    return lr * (min(1.0, (k + 1) / ws) if ws > 0 else 1.0)


def cpu_capability():
    """ATen's vectorised-kernel level, as torch.__config__.show() reports it."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.strip().lstrip("- ")
    return "CPU capability usage: unknown"


def blas_library():
    """The BLAS torch's matrix products use: MKL where torch was built with it (PyPI's wheel),
    else the BLAS shared object this process loaded (Debian: an OpenBLAS build)."""
    if torch.backends.mkl.is_available():
        return "MKL (inside torch)"
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.rsplit("/", 1)[-1]}
    opens = sorted(l for l in libs if "openblas" in l.rsplit("/", 1)[-1]) or sorted(libs)
    return opens[0] if opens else "unknown"
