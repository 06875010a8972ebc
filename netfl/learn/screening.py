"""Screening for the target accuracy on fixed test subsets (pure functions, numpy only).

Exact target detection evaluates the deployable model after every update (each global
aggregation, each Fed-CHS visit, ...). On the full test set that costs a full evaluation per
update; instead fixed, class-stratified subsets of the test set screen each update, and only an
update whose subset accuracy comes within ``margin`` of the target is evaluated on the full
test set, which alone decides whether the target was reached.

The screen runs in stages (``screening_stages``): nested subsets of 1/6, 1/2 and all of the
screening size, each stage evaluating only the samples the one before did not have and
judging the accumulated accuracy against its own margin. A model far below the target is
screened out by the first, small stage; one just below it by the last, before it costs a full
evaluation: a model whose accuracy climbs slowly spends hundreds of updates within one
subset's margin of the target (CHFL's FedAvg baseline, counted over its 1,503 updates before the
target: one subset of 2,000 samples sent 618 of them to the full test set, 9.2 million test
samples in all; stages of 1,000, 3,000 and 6,000 samples sent 193, 6.0 million).

The margin is ``z`` standard errors of a subset accuracy at the target: the subset is a draw of
``n`` of the ``N`` test samples without replacement, so (ignoring the gain of stratification,
which only shrinks it) the standard error of its accuracy around the full-set accuracy ``t`` is

    se = sqrt(t (1 - t) / n * (N - n) / (N - 1))

With z = 4 a model whose full-set accuracy has reached the target is screened out by a stage
with probability below 3.2e-5 (one-sided normal tail), by one of three stages below 1e-4, per
update; an update screened in costs one full evaluation.
"""

from __future__ import annotations

import math

import numpy as np

SCREEN_Z = 4.0
# Each stage's share of the screening size, smallest first; a stage under MIN_STAGE_SAMPLES
# samples is left out (its margin would screen nothing out)
SCREEN_STAGE_SHARES = (1 / 6, 1 / 2, 1.0)
MIN_STAGE_SAMPLES = 200
SCREEN_SHARE_OF_TEST = 0.6  # the screening size where the scenario gives none


def stratified_subset(labels: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``size`` test samples (all when ``size`` >= len(labels)), each class
    represented in proportion to its share of ``labels`` (largest remainders get the leftover
    places; ties by class order); within a class, a uniform draw without replacement."""
    labels = np.asarray(labels)
    total = len(labels)
    if size >= total:
        return np.arange(total)
    classes, counts = np.unique(labels, return_counts=True)
    exact = counts * size / total
    quota = np.floor(exact).astype(np.int64)
    leftover = size - int(quota.sum())
    quota[np.argsort(-(exact - quota), kind="stable")[:leftover]] += 1
    chosen = [rng.choice(np.flatnonzero(labels == c), size=int(q), replace=False)
              for c, q in zip(classes, quota, strict=True) if q > 0]
    return np.sort(np.concatenate(chosen))


def screen_margin(target: float, subset_size: int, test_size: int, z: float = SCREEN_Z) -> float:
    """How far below ``target`` a subset accuracy may be and still be checked on the full set:
    ``z`` standard errors of the subset accuracy at ``target`` (module docstring); 0 when the
    subset is the whole test set."""
    if subset_size >= test_size or test_size <= 1:
        return 0.0
    correction = (test_size - subset_size) / (test_size - 1)
    return z * math.sqrt(target * (1.0 - target) / subset_size * correction)


def screening_stages(labels: np.ndarray, size: int | None, target: float,
                     rng: np.random.Generator) -> list[tuple[np.ndarray, int, float]]:
    """The screen's stages for a test set with ``labels`` and a screening size of ``size``
    samples (None: SCREEN_SHARE_OF_TEST of the test set): (the stage's own new test indices,
    sorted; the accumulated subset's size; its margin at ``target``), smallest first. The
    accumulated subsets are nested, each a stratified subset of the next (so each is a
    stratified draw from the test set), the largest ``stratified_subset(labels, size, rng)``.
    Empty where ``size`` is 0 or covers the test set (no screening: every update goes to the
    full test set)."""
    labels = np.asarray(labels)
    if size is None:
        size = round(SCREEN_SHARE_OF_TEST * len(labels))
    if size == 0 or size >= len(labels):
        return []
    sizes = [n for n in (round(share * size) for share in SCREEN_STAGE_SHARES[:-1])
             if n >= MIN_STAGE_SAMPLES] + [size]
    nested = [stratified_subset(labels, size, rng)]
    for n in reversed(sizes[:-1]):
        within = nested[0]
        nested.insert(0, np.sort(within[stratified_subset(labels[within], n, rng)]))
    stages, seen = [], np.array([], dtype=np.int64)
    for subset in nested:
        stages.append((np.setdiff1d(subset, seen, assume_unique=True), len(subset),
                       screen_margin(target, len(subset), len(labels))))
        seen = subset
    return stages


def passes_screen(stages: list[tuple[np.ndarray, int, float]], target: float,
                  accuracy_on) -> bool:
    """Whether an update passes every stage of the screen, ``accuracy_on(indices)`` being its
    accuracy on those test samples: a stage judges the accuracy accumulated over its own and
    the earlier stages' samples against its margin, and the first it fails ends the screen
    (the later, larger stages are never evaluated). True for no stages."""
    correct = 0.0  # accuracy x samples over the stages so far
    for increment, size, margin in stages:
        correct += accuracy_on(increment) * len(increment)
        if correct / size < target - margin:
            return False
    return True
