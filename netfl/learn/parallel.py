"""Worker threads for training and evaluation: one pool per process, torch single-threaded in
each worker, so that every core works and a result never depends on how many there are."""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from netfl.learn.average import weighted_average
from netfl.learn.flat import FlatModel, flatten

_POOLS: dict[int, ThreadPoolExecutor] = {}
# An average of at least this many values in all goes to the worker threads (a cloud round of
# 100 updates of the 199k-parameter MLP: 20 million, 7.5 -> 4.5 ms on two threads; below about a
# million the hand-over costs what the second core saves)
PARALLEL_AVERAGE_FLOATS = 1 << 20
FUSED_PART_SAMPLES = 128  # a fused gradient's part has at least this many samples


def fused_parts(samples: int) -> int:
    """Parts a fused gradient over ``samples`` samples is split into: the largest power of two
    up to 8 that leaves each part FUSED_PART_SAMPLES samples or more (the Fed-CHS paper's 320:
    2 parts, 1.5x faster on 2 cores; below 128 samples per part a 784-200-200-10 MLP's pass
    gains little per sample). A function of the sample count only: the result's bits must
    not depend on the machine."""
    parts = 1
    while parts < 8 and samples // (2 * parts) >= FUSED_PART_SAMPLES:
        parts *= 2
    return parts


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


def on_replicas(replicas: list[FlatModel], items, work, pool: ThreadPoolExecutor,
                caller_works: bool = False) -> list:
    """``work(replica, group)`` for ``items`` cut into one run of consecutive items per
    replica, torch single-threaded, each run on a worker thread of ``pool``, or, with
    ``caller_works``, the first on the calling thread (one thread hand-over fewer: 0.3 ms of a
    Fed-CHS fused gradient's 3; for evaluation's large products it made bench_peers' W1 round
    10% slower, so only the fused gradient asks for it); every run's results, concatenated
    in item order."""
    groups = np.array_split(np.asarray(items), len(replicas))
    with single_threaded_torch():
        if len(replicas) == 1:
            return list(work(replicas[0], groups[0]))
        on_pool = 1 if caller_works else 0  # the runs from this one on go to the pool
        futures = [pool.submit(work, replica, group)
                   for replica, group in zip(replicas[on_pool:], groups[on_pool:], strict=True)]
        try:
            results = list(work(replicas[0], groups[0])) if caller_works else []
        finally:  # a replica is never left working behind a caller that has moved on
            wait(futures)
        return results + [result for f in futures for result in f.result()]


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
    return on_replicas(replicas, starts, run, pool or worker_pool(len(replicas)))


@torch.no_grad()  # grad mode is per thread: a caller's no_grad does not reach the workers
def _score(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[int, float]:
    logits = model(x)
    return int((logits.argmax(dim=1) == y).sum()), float(F.cross_entropy(logits, y,
                                                                          reduction="sum"))


def gradient_in_parts(replicas: list[FlatModel], params: torch.Tensor, x: torch.Tensor,
                      y: torch.Tensor, index: torch.Tensor, sample_weights: torch.Tensor,
                      parts: int, pool: ThreadPoolExecutor) -> torch.Tensor:
    """The gradient of the weighted loss sum_s sample_weights[s] * loss_s over the samples
    ``x[index]``, ``y[index]`` at ``params``, as the sum of ``parts`` equal, consecutive parts'
    gradients, added in part order: each replica (one per thread) gathers and computes a
    consecutive run of parts, torch single-threaded. The same bits whatever the replica
    count."""
    bounds = np.linspace(0, len(index), parts + 1).astype(int)

    def run(replica: FlatModel, group) -> list[torch.Tensor]:
        pieces = []
        for k in group:
            rows = index[bounds[k]:bounds[k + 1]]
            pieces.append(flatten(replica.grads_at(params, x[rows], y[rows],
                                                   sample_weights[bounds[k]:bounds[k + 1]])))
        return pieces

    pieces = on_replicas(replicas, range(parts), run, pool, caller_works=True)
    total = pieces[0]  # a new tensor (flatten's): adding into it is the same sum, no copy
    for piece in pieces[1:]:
        total += piece
    return total


def weighted_average_in_parts(vectors, weights, parts: int,
                              pool: ThreadPoolExecutor) -> torch.Tensor:
    """``weighted_average(vectors, weights)`` of equal-length 1-D tensors of one dtype, its
    elements cut into ``parts`` consecutive runs, each run averaged by ``weighted_average``
    itself on a thread of ``pool``, torch single-threaded: every element's terms are added in
    the same order, so the same floats (a property test pins them); what changes is that both
    cores stream the vectors (a cloud round of 100 MLP updates is memory-bound: 7.5 ms on one
    thread). Joining the runs costs one pass over a single vector."""
    bounds = np.linspace(0, vectors[0].shape[0], parts + 1).astype(int)

    def run(k: int) -> torch.Tensor:
        lo, hi = bounds[k], bounds[k + 1]
        return weighted_average([v[lo:hi] for v in vectors], weights)

    with single_threaded_torch():
        return torch.cat(list(pool.map(run, range(parts))))


def average(vectors, weights, workers: int, pool: ThreadPoolExecutor):
    """``weighted_average(vectors, weights)``, in ``workers`` parts on ``pool`` where that pays
    (two workers or more; 1-D tensors of one dtype and length, at least
    PARALLEL_AVERAGE_FLOATS values in all), else on this thread: the same floats either way."""
    first = vectors[0] if len(vectors) else None
    if (workers < 2 or len(vectors) < 2 or len(vectors) != len(weights)
            or not torch.is_tensor(first) or first.dim() != 1
            or len(vectors) * first.numel() < PARALLEL_AVERAGE_FLOATS
            or any(not torch.is_tensor(v) or v.dtype != first.dtype or v.shape != first.shape
                   for v in vectors)):
        return weighted_average(vectors, weights)
    return weighted_average_in_parts(vectors, weights, workers, pool)
