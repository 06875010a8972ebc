"""Floors: what the papers' runs cost on this machine with no simulator at all.

Each line times plain torch doing only the arithmetic a paper scenario cannot avoid, in this
process, and extrapolates it to the scenario's count; a netfl run of that scenario can be no
faster than its floor (its own host time is in its summary.json, ``host_time_s_by_part``):

* ``sgemm``: GFLOP/s of one large and one MLP-sized float32 product (the machine's peak);
* ``fed-chs training``: the forward and backward pass of the 784-200-200-10 MLP on 320 samples
  (10 clients x batch 32, one fused gradient of ``fedchs/paper-fed-chs.yaml``'s 80,000: 4,000
  rounds x 20 interactions), per-sample weighted cross-entropy, torch's default threads;
* ``qsgd draws``: torch's generator drawing the uniforms of one QSGD upload of that MLP (its
  199,210 parameters padded to buckets of 512), of ``fedchs/paper-fedavg-qsgd.yaml``'s 400,000
  (4,000 rounds x 100 clients): a serial stream, the same values only in its own order.

    python benchmarks/bench_floors.py [--repeats 300] [--json PATH]

The last line is ``floors: fed_chs_training_s X, qsgd_draws_s Y``.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.nn import functional as F

FED_CHS_GRADIENTS = 4000 * 20
FED_CHS_SAMPLES = 10 * 32
QSGD_UPLOADS = 4000 * 100
MLP_PARAMS = 784 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10
QSGD_DRAWS = -(-MLP_PARAMS // 512) * 512


def seconds_per_call(work, repeats: int) -> float:
    """The best of three timings of ``repeats`` calls, per call, after a warm-up."""
    for _ in range(max(repeats // 10, 3)):
        work()
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        for _ in range(repeats):
            work()
        best = min(best, (time.perf_counter() - began) / repeats)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    torch.manual_seed(0)
    rows = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")

    for m, k, n in ((2048, 2048, 2048), (FED_CHS_SAMPLES, 784, 200)):
        a, b = torch.randn(m, k), torch.randn(k, n)
        per = seconds_per_call(lambda a=a, b=b: a @ b, max(args.repeats // (m // 64), 5))
        print(f"sgemm {m}x{k}x{n}: {2 * m * k * n / per / 1e9:.0f} GFLOP/s")
        rows.append([f"sgemm {m}x{k}x{n}", per * 1e3, 2 * m * k * n / per / 1e9, None, None])

    mlp = nn.Sequential(nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 200), nn.ReLU(),
                        nn.Linear(200, 10))
    x, y = torch.randn(FED_CHS_SAMPLES, 784), torch.randint(0, 10, (FED_CHS_SAMPLES,))
    weights = torch.rand(FED_CHS_SAMPLES)

    def gradient():
        mlp.zero_grad(set_to_none=True)
        (F.cross_entropy(mlp(x), y, reduction="none") * weights).sum().backward()

    per = seconds_per_call(gradient, args.repeats)
    training = per * FED_CHS_GRADIENTS
    gflops = 6 * MLP_PARAMS * FED_CHS_SAMPLES / per / 1e9
    print(f"fed-chs training: {per * 1e3:.2f} ms per gradient ({gflops:.0f} GFLOP/s) x "
          f"{FED_CHS_GRADIENTS:,} = {training:.0f} s")
    rows.append(["fed-chs gradient", per * 1e3, gflops, FED_CHS_GRADIENTS, training])

    generator = torch.Generator().manual_seed(0)
    per = seconds_per_call(lambda: torch.rand(QSGD_DRAWS, generator=generator), args.repeats)
    draws = per * QSGD_UPLOADS
    print(f"qsgd draws: {per * 1e3:.3f} ms per upload x {QSGD_UPLOADS:,} = {draws:.0f} s")
    rows.append(["qsgd draws of one upload", per * 1e3, None, QSGD_UPLOADS, draws])
    print(f"floors: fed_chs_training_s {training:.0f}, qsgd_draws_s {draws:.0f}")
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        write(args.json, {"fed_chs_training_s": training, "qsgd_draws_s": draws},
              ["operation", "ms per call", "GFLOP/s", "calls in the run", "floor s"], rows)


if __name__ == "__main__":
    main()
