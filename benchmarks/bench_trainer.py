"""netfl's multi-client trainer against a plain per-client loop, measured in one process.

Setup (the learning-core issue's): 100 clients, batch 32, 1 and 5 local steps, for the Fed-CHS
MLP (200/200), LeNet and the CHFL CNN on 1x28x28 inputs (random data of Fashion-MNIST's shape:
speed does not depend on pixel values).

* local SGD: ``TorchTrainer.local_train`` (its automatic path) against the loop common FL
  simulators use: deepcopy of the model and a torch.optim.SGD per client;
* gradient mode: ``TorchTrainer.weighted_gradient`` (one fused pass) against per-client
  gradients (deepcopy per client, one backward each) averaged with data weights;
* the ceiling: one fused batch of the same total size (100 x 32 samples) on one model; each
  path's efficiency is its samples/s over the ceiling's;
* a whole round (the loop above deep-copies a model and an optimizer per client,
  which a careful hand loop does not, so its 3x did not show in a round): 5 local steps of
  every client, the data-weighted average and the test set's evaluation, against a careful
  hand loop (one model reused, each client's start loaded into it, SGD by hand, torch's
  threads) doing the same.

    python benchmarks/bench_trainer.py [--repeats 3] [--json PATH]

Last line: ``speedup_vs_loop: X``, the smallest netfl/loop ratio over models and modes (the
round's against the careful loop).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time

import numpy as np
import torch
from torch import nn

from netfl.algorithms.aggregation import weighted_average
from netfl.learn.data import Dataset
from netfl.learn.models import build_model
from netfl.learn.partition import equal_sizes, partition_iid
from netfl.learn.trainer import TorchTrainer
from netfl.scenario.sections import ArchitectureModel, MlpModel
from netfl.sim.clock import RandomStreams

CLIENTS, BATCH, PER_CLIENT, LR = 100, 32, 600, 0.01
SHAPE = (1, 28, 28)
MODELS = {
    "mlp": MlpModel(kind="mlp"),
    "lenet": ArchitectureModel(kind="lenet"),
    "chfl-cnn": ArchitectureModel(kind="chfl-cnn"),
}
MALLOC_TUNING = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "100000000000"}


def data() -> Dataset:
    rng = np.random.default_rng(0)
    n = CLIENTS * PER_CLIENT
    x = rng.standard_normal((n, *SHAPE), dtype=np.float32)
    y = rng.integers(0, 10, n).astype(np.int64)
    return Dataset("random", x, y, x[:1000], y[:1000], 10)


def best_time(fn, repeats: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def plain_local_sgd(model: nn.Module, dataset: Dataset, draw, steps: int):
    x_all, y_all = torch.as_tensor(dataset.train_x), torch.as_tensor(dataset.train_y)
    out = []
    for client in range(CLIENTS):
        local = copy.deepcopy(model)
        opt = torch.optim.SGD(local.parameters(), lr=LR)
        for _ in range(steps):
            index = torch.as_tensor(draw(client, BATCH))
            opt.zero_grad()
            nn.functional.cross_entropy(local(x_all[index]), y_all[index]).backward()
            opt.step()
        out.append(nn.utils.parameters_to_vector(local.parameters()).detach())
    return out


def plain_gradients(model: nn.Module, dataset: Dataset, draw, weights):
    x_all, y_all = torch.as_tensor(dataset.train_x), torch.as_tensor(dataset.train_y)
    total = None
    for client in range(CLIENTS):
        local = copy.deepcopy(model)
        index = torch.as_tensor(draw(client, BATCH))
        nn.functional.cross_entropy(local(x_all[index]), y_all[index]).backward()
        g = torch.cat([p.grad.reshape(-1) for p in local.parameters()]) * weights[client]
        total = g if total is None else total + g
    return total


def careful_round(model: nn.Module, dataset: Dataset, draw, steps: int, weights) -> float:
    """One round as a careful hand loop would run it: no copies of the model, plain SGD by
    hand, the weighted average, the test accuracy."""
    x_all, y_all = torch.as_tensor(dataset.train_x), torch.as_tensor(dataset.train_y)
    params = list(model.parameters())
    start = nn.utils.parameters_to_vector(params).detach().clone()
    total = torch.zeros_like(start)
    for client in range(CLIENTS):
        nn.utils.vector_to_parameters(start.clone(), params)
        for _ in range(steps):
            index = torch.as_tensor(draw(client, BATCH))
            loss = nn.functional.cross_entropy(model(x_all[index]), y_all[index])
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g in zip(params, grads, strict=True):
                    p.sub_(g, alpha=LR)
        total += float(weights[client]) * nn.utils.parameters_to_vector(params).detach()
    nn.utils.vector_to_parameters(total, params)
    with torch.no_grad():
        right = model(torch.as_tensor(dataset.test_x)).argmax(1) == torch.as_tensor(
            dataset.test_y)
    nn.utils.vector_to_parameters(start, params)
    return float(right.float().mean())


def fused_steps(model: nn.Module, dataset: Dataset, steps: int):
    x = torch.as_tensor(dataset.train_x[: CLIENTS * BATCH])
    y = torch.as_tensor(dataset.train_y[: CLIENTS * BATCH])
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    dataset = data()
    partition = partition_iid(dataset.train_y, equal_sizes(len(dataset.train_y), CLIENTS), 10,
                              np.random.default_rng(0))
    weights = partition.sizes / partition.sizes.sum()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {CLIENTS} clients, "
          f"batch {BATCH}, input {SHAPE}")
    print(f"{'model':9} {'mode':12} {'path':5} {'netfl/s':>10} {'loop/s':>10} {'ratio':>7} "
          f"{'netfl eff':>9} {'loop eff':>9}")
    ratios: dict[tuple[str, str], float] = {}
    rows: list[list] = []
    for name, spec in MODELS.items():
        measure(name, spec, dataset, partition, weights, args.repeats, ratios, rows)
    worst = min(ratios, key=ratios.get)
    print(f"smallest ratio: {ratios[worst]:.2f} ({worst[0]}, {worst[1]})")
    print(f"speedup_vs_loop: {ratios[worst]:.2f}")
    if args.json:
        from record import write  # benchmarks/record.py, beside this script

        write(args.json, {"speedup_vs_loop": ratios[worst]},
              ["model", "mode", "path", "netfl samples/s", "loop samples/s", "ratio",
               "netfl / ceiling", "loop / ceiling"], rows)


def measure(name, spec, dataset, partition, weights, repeats, ratios, rows) -> None:
    """Local SGD (1 and 5 steps) and gradient mode of one model, against the loop and the
    fused-batch ceiling; each line printed is appended to ``rows`` too."""
    trainer = TorchTrainer(build_model(spec, SHAPE, 10), dataset, partition, RandomStreams(0))
    params = trainer.init_params()
    reference = copy.deepcopy(trainer.model)
    nn.utils.vector_to_parameters(params.clone(), reference.parameters())
    for steps in (1, 5):
        samples = CLIENTS * BATCH * steps
        ours = best_time(lambda s=steps: trainer.local_train(
            params, range(CLIENTS), s, LR, BATCH), repeats)
        loop = best_time(lambda s=steps: plain_local_sgd(
            reference, dataset, trainer.draw_batch, s), repeats)
        ceiling = best_time(lambda s=steps: fused_steps(
            copy.deepcopy(reference), dataset, s), repeats)
        path = "dense" if trainer._dense else trainer.path  # local SGD here is plain SGD
        report(name, f"local x{steps}", path, samples, ours, loop, ceiling, ratios, rows)
    samples = CLIENTS * BATCH
    ours = best_time(lambda: trainer.weighted_gradient(params, range(CLIENTS), BATCH, weights),
                     repeats)
    loop = best_time(lambda: plain_gradients(reference, dataset, trainer.draw_batch, weights),
                     repeats)
    ceiling = best_time(lambda: fused_steps(copy.deepcopy(reference), dataset, 1), repeats)
    report(name, "gradient", "fused", samples, ours, loop, ceiling, ratios, rows)

    def netfl_round():
        thetas = trainer.local_train(params, range(CLIENTS), 5, LR, BATCH)
        return trainer.evaluate(weighted_average(thetas, weights))

    samples = CLIENTS * BATCH * 5
    ours = best_time(netfl_round, repeats)
    loop = best_time(lambda: careful_round(reference, dataset, trainer.draw_batch, 5, weights),
                     repeats)
    ceiling = best_time(lambda: fused_steps(copy.deepcopy(reference), dataset, 5), repeats)
    report(name, "round x5", "auto", samples, ours, loop, ceiling, ratios, rows)


def report(name, mode, path, samples, ours_s, loop_s, ceiling_s, ratios, rows) -> None:
    ours, loop, ceiling = samples / ours_s, samples / loop_s, samples / ceiling_s
    ratios[(name, mode)] = ours / loop
    rows.append([name, mode, path, ours, loop, ours / loop, ours / ceiling, loop / ceiling])
    print(f"{name:9} {mode:12} {path:5} {ours:10,.0f} {loop:10,.0f} {ours / loop:6.2f}x "
          f"{ours / ceiling:9.2f} {loop / ceiling:9.2f}")


if __name__ == "__main__":
    if sys.platform.startswith("linux") and os.environ.get("NETFL_MALLOC_TUNED") != "1":
        os.environ.update(MALLOC_TUNING, NETFL_MALLOC_TUNED="1")
        os.execv(sys.executable, [sys.executable, *sys.argv])
    main()
