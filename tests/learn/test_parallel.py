"""on_replicas: runs on the pool, or the caller takes the first (caller_works); results in order.
weighted_average_in_parts: the one-thread average's very floats."""

import threading
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.learn.average import weighted_average
from netfl.learn.parallel import on_replicas, weighted_average_in_parts, worker_pool


def test_the_caller_works_the_first_run_and_results_come_in_item_order():
    caller = threading.current_thread()
    seen = []

    def work(replica, group):
        seen.append((replica, threading.current_thread() is caller, torch.get_num_threads()))
        return [(replica, int(i)) for i in group]

    want = [("a", 0), ("a", 1), ("a", 2), ("b", 3), ("b", 4), ("c", 5), ("c", 6)]
    assert on_replicas(["a", "b", "c"], range(7), work, worker_pool(3), caller_works=True) == want
    assert sorted(seen)[0] == ("a", True, 1)  # the caller's run, single-threaded torch
    assert [on_caller for _, on_caller, _ in sorted(seen)[1:]] == [False, False]
    seen.clear()
    assert on_replicas(["a", "b", "c"], range(7), work, worker_pool(3)) == want
    assert [on_caller for _, on_caller, _ in seen] == [False, False, False]  # all on the pool


def test_one_replica_runs_on_the_caller_alone():
    got = on_replicas(["only"], range(3), lambda r, g: [threading.current_thread().name] * len(g),
                      worker_pool(2))
    assert got == [threading.current_thread().name] * 3


def test_a_failing_first_run_waits_for_the_others_before_raising():
    finished = []

    def work(replica, group):
        if replica == "a":
            raise RuntimeError("boom")
        time.sleep(0.05)  # still working when the caller's run has failed
        finished.append(replica)
        return list(group)

    with pytest.raises(RuntimeError, match="boom"):
        on_replicas(["a", "b"], range(4), work, worker_pool(2), caller_works=True)
    assert finished == ["b"]  # no replica left working behind the caller


@settings(max_examples=60, deadline=None)
@given(count=st.integers(1, 12), length=st.integers(1, 3000), parts=st.integers(1, 4),
       dtype=st.sampled_from([torch.float32, torch.float64]), seed=st.integers(0, 2**16))
def test_an_average_in_parts_is_the_same_floats_as_on_one_thread(count, length, parts, dtype,
                                                                  seed):
    generator = torch.Generator().manual_seed(seed)
    vectors = [torch.randn(length, generator=generator, dtype=dtype) * 10 ** (k % 5 - 2)
               for k in range(count)]
    weights = np.random.default_rng(seed).dirichlet(np.ones(count))
    want = weighted_average(vectors, weights)
    got = weighted_average_in_parts(vectors, weights, parts, worker_pool(2))
    assert got.dtype == want.dtype and torch.equal(got, want)
    assert all(v.data_ptr() != got.data_ptr() for v in vectors)  # a new tensor, inputs kept
