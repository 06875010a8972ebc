"""The FedAvg workload that benchmarks/bench_peers.py runs on every tool, and its data file.

Issue 17's workload: Fashion-MNIST, 100 clients, Dirichlet(0.6) label skew, the 784-200-200-10
MLP (ReLU), SGD lr 0.05 without momentum, batch 32, 5 local steps (mini-batches, not epochs),
sample-count-weighted FedAvg, the whole test set evaluated after every round. W1 samples 10
clients per round, W2 takes all 100.

The data and the partition are made once, by netfl (``export``), and written to one ``.npz``
that every tool reads (``load``): the same standardized pixels, the same client -> sample
indices. Reading needs only numpy, so a peer may run in an environment without netfl.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

CLIENTS = 100
ALPHA = 0.6
HIDDEN = (200, 200)
LR = 0.05
BATCH = 32
LOCAL_STEPS = 5
WORKLOADS = {"W1": 10, "W2": 100}  # clients per round


@dataclass
class FederatedArrays:
    """What every tool trains on: flattened standardized images and each client's indices."""

    train_x: np.ndarray  # (60000, 784) float32
    train_y: np.ndarray  # (60000,) int64
    test_x: np.ndarray  # (10000, 784) float32
    test_y: np.ndarray  # (10000,) int64
    client_indices: list[np.ndarray]  # CLIENTS arrays of indices into train_x

    def client_sizes(self) -> np.ndarray:
        return np.array([len(i) for i in self.client_indices])


def netfl_scenario(workload: str, rounds: int, seed: int = 1) -> dict:
    """The workload as a netfl scenario: flat FedAvg on the edge world with its network on
    (clients under 10 edge servers, 100 Mbit/s access, 1 Gbit/s core, TCP), a Raspberry Pi
    class device per client."""
    return {"name": f"peers-{workload.lower()}", "seed": seed,
            "world": {"kind": "edge", "clients": CLIENTS, "edge_servers": 10},
            "links": {"access": {"rate": "100 Mbps", "delay": "5 ms"},
                      "core": {"rate": "1 Gbps", "delay": "20 ms"}},
            "devices": {"clients": {"preset": "raspberry-pi-4"}},
            "data": {"dataset": "fashion-mnist",
                     "partition": {"kind": "dirichlet", "alpha": ALPHA}},
            "model": {"kind": "mlp", "hidden": list(HIDDEN)},
            "algorithm": {"kind": "fedavg", "rounds": rounds, "local_steps": LOCAL_STEPS,
                          "lr": LR, "batch_size": BATCH, "eval_every": 1,
                          "clients_per_round": WORKLOADS[workload]},
            "output": {"plots": False}}


def export(path: Path, seed: int = 1) -> Path:
    """Write the data set and the partition netfl builds for ``netfl_scenario`` (same seed) to
    ``path`` (.npz): every tool then trains on exactly netfl's clients."""
    from netfl.scenario import load_scenario
    from netfl.simulation import Simulation

    simulation = Simulation(load_scenario(netfl_scenario("W2", 1, seed)))
    data, partition = simulation.dataset, simulation.partition
    offsets = np.cumsum([0] + [len(i) for i in partition.client_indices])
    np.savez(path, train_x=data.train_x.reshape(len(data.train_x), -1),
             train_y=data.train_y, test_x=data.test_x.reshape(len(data.test_x), -1),
             test_y=data.test_y, indices=np.concatenate(partition.client_indices),
             offsets=offsets)
    return path


def load(path: Path) -> FederatedArrays:
    """Read a file written by ``export``."""
    with np.load(path) as f:
        offsets, indices = f["offsets"], f["indices"]
        return FederatedArrays(
            f["train_x"].astype(np.float32), f["train_y"].astype(np.int64),
            f["test_x"].astype(np.float32), f["test_y"].astype(np.int64),
            [indices[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)])


def arguments(doc: str | None):
    """The command-line parser every runner shares (``--data``, ``--workload``, ``--rounds``,
    ``--seed``, ``--threads``); a runner adds its own options before parsing."""
    import argparse

    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument("--data", type=Path, help="the .npz written by export()")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="W1")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="torch threads in all")
    return parser


def torch_mlp():
    """The 784-200-200-10 ReLU MLP as a torch module (PyTorch's default initialization)."""
    from torch import nn

    return nn.Sequential(nn.Linear(784, HIDDEN[0]), nn.ReLU(), nn.Linear(HIDDEN[0], HIDDEN[1]),
                         nn.ReLU(), nn.Linear(HIDDEN[1], 10))


def evaluate(model, test_x, test_y) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) of a torch ``model`` on tensors ``test_x``, ``test_y``,
    in batches of 1000, as netfl evaluates."""
    import torch
    from torch.nn import functional as F

    correct, loss = 0, 0.0
    with torch.no_grad():
        for start in range(0, len(test_y), 1000):
            logits = model(test_x[start:start + 1000])
            y = test_y[start:start + 1000]
            loss += float(F.cross_entropy(logits, y, reduction="sum"))
            correct += int((logits.argmax(1) == y).sum())
    return correct / len(test_y), loss / len(test_y)
