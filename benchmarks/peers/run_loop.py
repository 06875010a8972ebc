"""The baseline of benchmarks/bench_peers.py: FedAvg as a plain per-client PyTorch loop.

What a researcher writes without a framework: one model object reused for every client (the
global weights loaded into it, not a deep copy per client), torch.optim.SGD, five mini-batches
of 32 from a per-client random permutation, a running sample-weighted sum of the trained
weights, and the whole test set evaluated after every round.

    python benchmarks/peers/run_loop.py --data F.npz --workload W1 --rounds 20 --seed 1 \
        --threads 2

Last line of stdout: {"tool": "loop", "version", "config", "round_end_s", "accuracy", "loss"},
``round_end_s[r]`` the host seconds since the process started at which round r + 1's
evaluation ended.
"""

import time

T0 = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.nn import functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import workload  # noqa: E402


def main() -> None:
    parser = workload.arguments(__doc__)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    arrays = workload.load(args.data)
    train_x, train_y = torch.from_numpy(arrays.train_x), torch.from_numpy(arrays.train_y)
    test_x, test_y = torch.from_numpy(arrays.test_x), torch.from_numpy(arrays.test_y)
    sizes = arrays.client_sizes()
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    model = workload.torch_mlp()
    global_weights = [p.detach().clone() for p in model.parameters()]
    per_round = workload.WORKLOADS[args.workload]
    ends, accuracy, loss = [], [], []
    for _ in range(args.rounds):
        chosen = np.sort(rng.choice(workload.CLIENTS, per_round, replace=False))
        total = float(sizes[chosen].sum())
        summed = [torch.zeros_like(w) for w in global_weights]
        for client in chosen:
            with torch.no_grad():
                for p, w in zip(model.parameters(), global_weights, strict=True):
                    p.copy_(w)
            optimizer = torch.optim.SGD(model.parameters(), lr=workload.LR)
            own = arrays.client_indices[client][rng.permutation(sizes[client])]
            for step in range(workload.LOCAL_STEPS):
                index = torch.from_numpy(own[step * workload.BATCH:(step + 1) * workload.BATCH])
                optimizer.zero_grad()
                F.cross_entropy(model(train_x[index]), train_y[index]).backward()
                optimizer.step()
            with torch.no_grad():
                for s, p in zip(summed, model.parameters(), strict=True):
                    s.add_(p, alpha=sizes[client] / total)
        global_weights = summed
        with torch.no_grad():
            for p, w in zip(model.parameters(), global_weights, strict=True):
                p.copy_(w)
        acc, lss = workload.evaluate(model, test_x, test_y)
        ends.append(time.perf_counter() - T0)
        accuracy.append(acc)
        loss.append(lss)
    print(json.dumps({"tool": "loop", "version": torch.__version__,
                      "config": f"one reused model, torch.optim.SGD, {args.threads} threads",
                      "round_end_s": ends, "accuracy": accuracy, "loss": loss}))


if __name__ == "__main__":
    main()
