"""torch_matmul.py: float32 matrix-product speed of the PyTorch in use, in GFLOP/s, at the
shapes that dominate the trainer's models (docs/results.md, "CPU speed against PyTorch": it tells
a PyTorch build whose products are slow on this CPU from one whose framework is).

    python bench/torch_matmul.py [--threads T] [--shape MxNxK]...

Each shape: A [M, K] @ B [K, N], 3 warm-up products, then the best of 7 timings of at least
2 GFLOP each. Prints torch's version and whether it has MKL, then one line a shape. Set
OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS to T as well for a fair figure.
"""
import argparse
import time

import torch

DEFAULT_SHAPES = ["1024x1024x1024", "91x2048x768", "960x8000x512", "8000x512x960"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--shape", action="append", help="MxNxK (repeatable); default: "
                    + ", ".join(DEFAULT_SHAPES))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, MKL {torch.backends.mkl.is_available()}, "
          f"{a.threads} threads")
    for s in a.shape or DEFAULT_SHAPES:
        m, n, k = (int(x) for x in s.split("x"))
        x, y = torch.randn(m, k), torch.randn(k, n)
        for _ in range(3):
            x @ y
        reps = max(1, int(2e9 / (2 * m * n * k)))
        best = float("inf")
        for _ in range(7):
            t = time.perf_counter()
            for _ in range(reps):
                x @ y
            best = min(best, (time.perf_counter() - t) / reps)
        print(f"{m}x{n}x{k}: {2 * m * n * k / best / 1e9:.1f} GFLOP/s (best of 7)")


if __name__ == "__main__":
    main()
