"""Worker threads for training and evaluation: one pool per process, torch single-threaded in
each worker, so that every core works and a result never depends on how many there are."""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from netfl.learn.flat import FlatModel

_POOLS: dict[int, ThreadPoolExecutor] = {}


@contextlib.contextmanager
def single_threaded_torch():
    """torch's intra-op threads set to 1 for the block (restored after)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def worker_pool(workers: int) -> ThreadPoolExecutor:
    """One pool of ``workers`` training threads per process, shared by every trainer: a sweep
    worker runs many scenarios, and a pool per trainer would leave idle threads behind each."""
    if workers not in _POOLS:
        _POOLS[workers] = ThreadPoolExecutor(workers, thread_name_prefix="netfl-train")
    return _POOLS[workers]


def batch_scores(replicas: list[FlatModel], params: torch.Tensor, x: torch.Tensor,
                 y: torch.Tensor, batch: int,
                 pool: ThreadPoolExecutor | None = None) -> list[tuple[int, float]]:
    """(correct predictions, summed cross-entropy) of the model at ``params`` on each batch of
    ``batch`` samples of (x, y), in batch order. With more than one replica the batches are
    split among them on ``pool`` (the caller's training pool; one of as many threads as
    replicas by default), torch single-threaded: each batch's numbers are then the same bits
    whatever the replica count."""
    starts = list(range(0, len(y), batch))

    def run(replica: FlatModel, group) -> list[tuple[int, float]]:
        replica.flat.copy_(params)
        replica.model.eval()
        try:
            return [_score(replica.model, x[s:s + batch], y[s:s + batch]) for s in group]
        finally:
            replica.model.train()

    if len(replicas) == 1:
        return run(replicas[0], starts)
    groups = np.array_split(starts, len(replicas))
    with single_threaded_torch():
        pool = pool or worker_pool(len(replicas))
        parts = [pool.submit(run, replica, group)
                 for replica, group in zip(replicas, groups, strict=True)]
        return [score for part in parts for score in part.result()]


@torch.no_grad()  # grad mode is per thread: a caller's no_grad does not reach the workers
def _score(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[int, float]:
    logits = model(x)
    return int((logits.argmax(dim=1) == y).sum()), float(F.cross_entropy(logits, y,
                                                                          reduction="sum"))
