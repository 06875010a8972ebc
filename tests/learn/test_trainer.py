"""The trainer: every path agrees with a plain per-client loop; gradient mode is exact."""

import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from netfl.learn.clients import ClientData
from netfl.learn.data import load_digits
from netfl.learn.fake import FakeTrainer
from netfl.learn.models import build_model, train_flops_per_sample
from netfl.learn.partition import equal_sizes, partition_dirichlet, partition_iid
from netfl.learn.trainer import TorchTrainer, choose_path, sgd_step_
from netfl.scenario.sections import FakeModel, MlpModel
from netfl.sim.clock import RandomStreams


@pytest.fixture(scope="module")
def digits():
    return load_digits(0.25, np.random.default_rng(0))


def mlp():
    return build_model(MlpModel(kind="mlp", hidden=[32]), (1, 8, 8), 10)


def cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 10))


def partition(digits, n_clients=6, ragged=False):
    n = len(digits.train_y)
    if ragged:  # some clients smaller than a batch
        sizes = np.array([10, 40, 40, 12, 40, 40][:n_clients])
        return partition_dirichlet(digits.train_y, sizes, 10, 1.0, np.random.default_rng(0))
    return partition_iid(digits.train_y, equal_sizes(n, n_clients), 10,
                         np.random.default_rng(0))


def make(digits, model_fn=mlp, path="auto", seed=0, part=None):
    return TorchTrainer(model_fn(), digits, part or partition(digits), RandomStreams(seed),
                        path=path)


def reference(trainer, digits, part, params, clients, steps, lr, batch, *, momentum=0.0,
              weight_decay=0.0, prox_mu=0.0, corrections=None, seed=0):
    """What common FL simulators do: deepcopy the model and an optimizer per client."""
    draws = ClientData(part, RandomStreams(seed))
    x_all, y_all = torch.as_tensor(digits.train_x), torch.as_tensor(digits.train_y)
    rates = np.broadcast_to(np.asarray(lr, dtype=float), (len(clients),))
    out = []
    for i, client in enumerate(clients):
        model = copy.deepcopy(trainer.model)
        torch.nn.utils.vector_to_parameters(params.clone(), model.parameters())
        opt = torch.optim.SGD(model.parameters(), lr=float(rates[i]), momentum=momentum,
                              weight_decay=weight_decay)
        for _ in range(steps):
            index = torch.as_tensor(draws.draw_batch(client, batch))
            opt.zero_grad()
            nn.functional.cross_entropy(model(x_all[index]), y_all[index]).backward()
            flat = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
            extra = prox_mu * (flat - params)
            if corrections is not None:
                extra = extra + corrections[i]
            offset = 0
            for p in model.parameters():
                p.grad += extra[offset:offset + p.numel()].view_as(p)
                offset += p.numel()
            opt.step()
        out.append(torch.nn.utils.parameters_to_vector(model.parameters()).detach())
    return out


@pytest.mark.parametrize("model_fn", [mlp, cnn])
@pytest.mark.parametrize("path", ["vmap", "loop"])
@pytest.mark.parametrize("options", [
    {}, {"momentum": 0.9, "weight_decay": 1e-3}, {"prox_mu": 0.1}, {"corrections": True}])
def test_every_path_agrees_with_a_plain_per_client_loop(digits, model_fn, path, options):
    part = partition(digits, ragged=True)
    trainer = make(digits, model_fn, path, part=part)
    params = trainer.init_params()
    clients, steps, batch = [0, 1, 2, 3, 4], 4, 16
    lr = [0.1, 0.05, 0.1, 0.2, 0.1]  # per-client rates
    if options.get("corrections"):
        gen = torch.Generator().manual_seed(1)
        options = {"corrections": [0.01 * torch.randn(trainer.num_params, generator=gen)
                                   for _ in clients]}
    got = trainer.local_train(params, clients, steps, lr, batch, **options)
    want = reference(trainer, digits, part, params, clients, steps, lr, batch, **options)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert torch.equal(params, trainer.init_params())  # the input is never modified


def test_vmap_and_loop_agree_with_each_other(digits):
    a, b = make(digits, path="vmap"), make(digits, path="loop")
    ua = a.local_train(a.init_params(), range(6), 5, 0.1, 32, momentum=0.5)
    ub = b.local_train(b.init_params(), range(6), 5, 0.1, 32, momentum=0.5)
    for x, y in zip(ua, ub, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)


def test_gradient_mode_equals_the_weighted_average_of_client_gradients(digits):
    part = partition(digits, ragged=True)
    a, b = make(digits, part=part), make(digits, part=part)
    params = a.init_params()
    clients, weights = [0, 1, 3, 5], np.array([0.1, 0.4, 0.2, 0.3])
    fused = a.weighted_gradient(params, clients, 32, weights)
    separate = b.gradients(params, clients, 32)
    torch.testing.assert_close(fused, sum(w * g for w, g in zip(weights, separate, strict=True)),
                               rtol=1e-5, atol=1e-6)


def test_a_fused_gradient_splits_into_parts_by_its_sample_count_only():
    from netfl.learn.parallel import fused_parts

    assert [fused_parts(n) for n in (0, 100, 255, 256, 320, 511, 512, 1024, 10**6)] == [
        1, 1, 1, 2, 2, 2, 4, 8, 8]


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("batch", [64, 180])
def test_a_fused_gradient_in_parts_is_the_per_client_sum_and_the_same_bits_on_any_workers(
        digits, workers, batch):
    # 6 clients x 64 samples = 384: two parts on the worker threads, added in part order;
    # 6 x 180 = 1,080: eight parts, shared unevenly by three workers
    clients, weights = list(range(6)), np.array([0.1, 0.2, 0.1, 0.25, 0.15, 0.2])
    one = make(digits)
    one.max_workers = 1
    want = one.weighted_gradient(one.init_params(), clients, batch, weights)
    trainer = make(digits)
    trainer.max_workers = workers
    got = trainer.weighted_gradient(trainer.init_params(), clients, batch, weights)
    assert torch.equal(got, want)
    separate = make(digits).gradients(trainer.init_params(), clients, batch)
    torch.testing.assert_close(got, sum(w * g for w, g in zip(weights, separate, strict=True)),
                               rtol=1e-5, atol=1e-6)


def test_sgd_step_maths():
    theta, g, anchor = torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0]), torch.zeros(2)
    start, buffers = theta.clone(), [torch.zeros(2)]
    sgd_step_([theta], [g], 0.1, momentum=0.9, buffers=buffers, weight_decay=0.1, prox_mu=1.0,
              anchor=[anchor], correction=[torch.tensor([1.0, 1.0])])
    d = g + 0.1 * start + 1.0 * start + 1.0
    torch.testing.assert_close(buffers[0], d)
    torch.testing.assert_close(theta, start - 0.1 * d)
    sgd_step_([theta], [g], 0.1, momentum=0.9, buffers=buffers)
    torch.testing.assert_close(buffers[0], 0.9 * d + g)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([0.0, 0.9]), st.sampled_from([0.0, 1e-3]),
       st.sampled_from([0.0, 0.01]), st.booleans(), st.booleans(), st.booleans())
def test_sgd_step_is_the_formula_left_to_right_to_the_bit(seed, momentum, weight_decay, prox_mu,
                                                          corrected, shared_anchor, per_client):
    # sgd_step_ adds its terms into one new tensor in place; the floats must be those of the
    # docstring's expressions evaluated as written, on stacked (3, 4, 5) tensors and a
    # broadcast anchor (one start for every client) alike
    rng = torch.Generator().manual_seed(seed)
    theta = torch.randn(3, 4, 5, generator=rng)
    grad = torch.randn(3, 4, 5, generator=rng)
    anchor = torch.randn(*((4, 5) if shared_anchor else (3, 4, 5)), generator=rng)
    correction = torch.randn(3, 4, 5, generator=rng) if corrected else None
    buffer = torch.randn(3, 4, 5, generator=rng)
    lr = torch.tensor([0.1, 0.05, 0.2]) if per_client else 0.1
    want_theta, want_buffer, kept_grad = theta.clone(), buffer.clone(), grad.clone()
    d = grad
    if weight_decay:
        d = d + weight_decay * want_theta
    if prox_mu:
        d = d + prox_mu * (want_theta - anchor)
    if corrected:
        d = d + correction
    if momentum:
        want_buffer.mul_(momentum).add_(d)
        d = want_buffer
    if per_client:
        want_theta.addcmul_(d, lr.view(-1, 1, 1), value=-1.0)
    else:
        want_theta.sub_(d, alpha=lr)
    sgd_step_([theta], [grad], lr, momentum=momentum, buffers=[buffer] if momentum else None,
              weight_decay=weight_decay, prox_mu=prox_mu, anchor=[anchor],
              correction=[correction] if corrected else None)
    assert torch.equal(theta, want_theta)
    assert torch.equal(buffer, want_buffer)
    assert torch.equal(grad, kept_grad)  # the caller's gradient is never written into


def test_sgd_step_with_per_client_rates_on_stacked_tensors():
    theta, g = torch.ones(3, 2, 2), torch.ones(3, 2, 2)
    sgd_step_([theta], [g], torch.tensor([0.1, 0.2, 0.3]))
    torch.testing.assert_close(theta[:, 0, 0], torch.tensor([0.9, 0.8, 0.7]))


def test_the_path_rule():
    cpu = torch.device("cpu")
    assert choose_path(mlp(), cpu) == "vmap" and choose_path(cnn(), cpu) == "loop"
    assert choose_path(cnn(), torch.device("cuda")) == "vmap"


def test_local_training_lowers_the_loss(digits):
    trainer = make(digits)
    w0 = trainer.init_params()
    _, loss0 = trainer.evaluate(w0)
    w1 = trainer.local_train(w0, [0], steps=50, lr=0.5, batch_size=32)[0]
    accuracy, loss1 = trainer.evaluate(w1)
    assert loss1 < loss0 / 2 and accuracy > 0.6


def test_same_seed_same_weights_and_updates(digits):
    a, b = make(digits, seed=3), make(digits, seed=3)
    assert torch.equal(a.init_params(), b.init_params())
    ua = a.local_train(a.init_params(), [0, 1], 3, 0.1, 16)
    ub = b.local_train(b.init_params(), [0, 1], 3, 0.1, 16)
    assert all(torch.equal(x, y) for x, y in zip(ua, ub, strict=True))
    assert not torch.equal(make(digits, seed=4).init_params(), a.init_params())


def test_a_clients_batches_do_not_depend_on_other_clients(digits):
    a, b = make(digits), make(digits)
    a.local_train(a.init_params(), [0, 1], 3, 0.1, 16)
    ua = a.local_train(a.init_params(), [2], 3, 0.1, 16)[0]
    ub = b.local_train(b.init_params(), [2, 3], 3, 0.1, 16)[0]
    torch.testing.assert_close(ua, ub)


def test_payload_is_four_bytes_per_parameter(digits):
    trainer = make(digits)
    assert trainer.payload_bytes == 4 * trainer.num_params == 4 * (64 * 32 + 32 + 32 * 10 + 10)


def test_cuda_falls_back_to_the_cpu_with_a_warning(digits, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="no CUDA device"):
        trainer = TorchTrainer(mlp(), digits, partition(digits), RandomStreams(0), device="cuda")
    assert trainer.device.type == "cpu"


def test_small_clients_use_their_whole_data_per_step(digits):
    trainer = make(digits, part=partition(digits, ragged=True))
    assert trainer.samples_per_step(0, 32) == 10
    assert len(trainer.draw_batch(0, 32)) == 10


def test_fake_trainer_rises_towards_its_ceiling(digits):
    part = partition(digits, n_clients=4)
    fake = FakeTrainer(FakeModel(kind="fake", max_accuracy=0.8), part, 10, RandomStreams(0))
    w = fake.init_params()
    assert fake.evaluate(w)[0] == pytest.approx(0.1)
    accuracies = []
    for _ in range(30):
        w = np.mean(fake.local_train(w, [0, 1, 2, 3], 5, 0.1, 32), axis=0)
        accuracies.append(fake.evaluate(w)[0])
    assert accuracies == sorted(accuracies) and 0.75 < accuracies[-1] <= 0.8


def test_fake_training_flops_default_to_three_forward_passes(digits):
    part = partition(digits, n_clients=2)
    declared = FakeTrainer(FakeModel(kind="fake", flops_per_sample=2e5), part, 10, RandomStreams(0))
    assert declared.train_flops_per_sample == 6e5
    spec = FakeModel(kind="fake", flops_per_sample=2e5, train_flops_per_sample=4.4e5)
    assert FakeTrainer(spec, part, 10, RandomStreams(0)).train_flops_per_sample == 4.4e5


def test_torch_trainer_counts_training_flops(digits):
    trainer = make(digits)
    assert trainer.train_flops_per_sample == train_flops_per_sample(mlp(), (64,))
    forward = trainer.flops_per_sample
    assert 2 * forward < trainer.train_flops_per_sample < 3 * forward


def test_loop_results_do_not_depend_on_the_worker_count(digits):
    outputs = []
    for workers in (1, 2, 3):
        trainer = TorchTrainer(cnn(), digits, partition(digits), RandomStreams(0), path="loop",
                               max_workers=workers)
        outputs.append(trainer.local_train(trainer.init_params(), range(6), 3, 0.1, 16,
                                           momentum=0.9))
    for other in outputs[1:]:
        assert all(torch.equal(a, b) for a, b in zip(outputs[0], other, strict=True))


@pytest.mark.parametrize("path", ["vmap", "loop"])
def test_momentum_buffers_carry_over_between_calls(digits, path):
    a, b = make(digits, path=path), make(digits, path=path)
    p = a.init_params()
    whole = a.local_train(p, [0, 1], 4, 0.1, 16, momentum=0.9)
    half, buffers = b.local_train(p, [0, 1], 2, 0.1, 16, momentum=0.9, return_buffers=True)
    rest = [b.local_train(h, [c], 2, 0.1, 16, momentum=0.9, initial_buffers=[buf])[0]
            for c, h, buf in zip([0, 1], half, buffers, strict=True)]
    for x, y in zip(whole, rest, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


def test_a_client_drawn_twice_trains_twice_on_its_own_batches_on_every_path(digits):
    # Sampling with replacement: client 2 appears twice. Its occurrences draw their batches
    # one after the other from its generator (in list order), so the result is the same on
    # either path and with any number of threads, and the two occurrences differ.
    clients, runs = [2, 0, 2, 5, 2], []
    for path, workers in (("vmap", None), ("loop", 1), ("loop", 2), ("loop", 3)):
        trainer = TorchTrainer(mlp(), digits, partition(digits), RandomStreams(0), path=path,
                               max_workers=workers)
        runs.append(trainer.local_train(trainer.init_params(), clients, 12, 0.1, 16,
                                        momentum=0.5))
    for other in runs[1:]:
        for a, b in zip(runs[0], other, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    for loop_run in runs[2:]:
        assert all(torch.equal(a, b) for a, b in zip(runs[1], loop_run, strict=True))
    assert not torch.equal(runs[0][0], runs[0][2])
    # the first occurrence trains on the batches a lone call would draw
    lone = make(digits, path="loop")
    torch.testing.assert_close(runs[1][0], lone.local_train(lone.init_params(), [2], 12, 0.1, 16,
                                                            momentum=0.5)[0])


@pytest.mark.parametrize("model_fn", [mlp, cnn])
@pytest.mark.parametrize("path", ["vmap", "loop"])
@pytest.mark.parametrize("options", [{}, {"momentum": 0.9}, {"prox_mu": 0.1},
                                     {"corrections": True}, {"lr": [0.1, 0.05, 0.1, 0.2, 0.1,
                                                                     0.05]}])
def test_a_start_and_a_step_count_per_client_give_what_separate_calls_give(
        digits, model_fn, path, options):
    # Several groups' models trained in one call (Group-FEL's groups, clients of different
    # sizes doing whole epochs): each client starts from its own vector and takes its own
    # number of steps, as if it had been trained alone. Same bits where a client's arithmetic
    # does not depend on who shares the call (the loop, the dense MLP path, with every SGD
    # option); float rounding on the vmap path. FedProx's anchor is each client's own start.
    part = partition(digits, ragged=True)  # two batch sizes: two stacked groups
    clients, steps = [0, 1, 2, 3, 4, 5], [3, 1, 4, 1, 0, 2]
    base = make(digits, model_fn, path, part=part).init_params()
    starts = torch.stack([base + 0.01 * i for i in range(len(clients))])
    kept = starts.clone()
    if options.get("corrections"):
        options = {"corrections": [torch.full_like(base, 0.01 * i) for i in range(6)]}
    options = dict(options)  # (the parameter's dict is shared by every case)
    rates = options.pop("lr", [0.1] * len(clients))
    together = make(digits, model_fn, path, part=part).local_train(starts, clients, steps, rates,
                                                                   16, **options)
    alone_trainer = make(digits, model_fn, path, part=part)
    alone = [alone_trainer.local_train(
        starts[i], [c], steps[i], rates[i], 16,
        **{k: ([v[i]] if k == "corrections" else v) for k, v in options.items()})[0]
        for i, c in enumerate(clients)]
    exact = path == "loop" or model_fn is mlp
    for a, b in zip(together, alone, strict=True):
        if exact:
            assert torch.equal(a, b)
        else:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert torch.equal(together[4], starts[4])  # no steps: its start
    assert torch.equal(starts, kept)  # the starts are not trained in place


@pytest.mark.parametrize("model_fn,path,invariant", [
    (mlp, "vmap", True), (mlp, "loop", True), (cnn, "loop", True), (cnn, "vmap", False)])
def test_batch_invariant_says_where_a_clients_floats_do_not_depend_on_its_company(
        digits, model_fn, path, invariant):
    """What deferred asynchronous training relies on (netfl.algorithms.asynchrony): the paths
    the test above finds bit-exact together and alone, and only those."""
    assert make(digits, model_fn, path).batch_invariant is invariant


@pytest.mark.parametrize("options", [{}, {"prox_mu": 0.1}, {"momentum": 0.9}])
def test_starts_given_as_a_list_of_vectors_train_as_a_stacked_tensor_does(digits, options):
    # Group-FEL hands local_train a list (its groups' models, one per member); the dense
    # path copies each chunk's rows from the list itself, FedProx's anchors included
    part = partition(digits, ragged=True)
    clients, steps = [0, 1, 2, 3, 4, 5], [3, 1, 4, 1, 0, 2]
    base = make(digits, mlp, "vmap", part=part).init_params()
    shared = [base + 0.01, base - 0.02]
    listed = [shared[i % 2] for i in range(len(clients))]  # one vector object, many members
    stacked = torch.stack(listed)
    want = make(digits, mlp, "vmap", part=part).local_train(stacked, clients, steps, 0.1, 16,
                                                            **options)
    got = make(digits, mlp, "vmap", part=part).local_train(listed, clients, steps, 0.1, 16,
                                                           **options)
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    assert torch.equal(shared[0], base + 0.01) and torch.equal(shared[1], base - 0.02)


def test_starts_must_match_the_clients(digits):
    trainer = make(digits)
    with pytest.raises(ValueError, match="2 start vectors for 3 clients"):
        trainer.local_train(torch.stack([trainer.init_params()] * 2), [0, 1, 2], 1, 0.1, 16)


def test_the_fake_trainer_takes_a_start_and_a_step_count_per_client(digits):
    fake = FakeTrainer(FakeModel(kind="fake"), partition(digits), 10, RandomStreams(0))
    together = fake.local_train(np.array([[0.0], [1.0]]), [0, 1], [2, 0], 0.1, 16)
    again = FakeTrainer(FakeModel(kind="fake"), partition(digits), 10, RandomStreams(0))
    alone = [again.local_train(np.array([0.0]), [0], 2, 0.1, 16)[0],
             again.local_train(np.array([1.0]), [1], 0, 0.1, 16)[0]]
    assert np.array_equal(together[0], alone[0]) and np.array_equal(together[1], alone[1])
    assert together[1][0] == 1.0


def test_the_trainers_average_is_aggregations_on_threads_or_not(digits, monkeypatch):
    """Large aggregates go to the worker threads (monkeypatched to count), small ones and mixed
    ones stay on the caller; the floats are weighted_average's either way."""
    import netfl.learn.parallel as parallel
    from netfl.algorithms.aggregation import weighted_average

    trainer = make(digits)
    trainer.max_workers = 2
    calls = []
    parts = parallel.weighted_average_in_parts
    monkeypatch.setattr(parallel, "weighted_average_in_parts",
                        lambda *a: calls.append(len(a[0])) or parts(*a))
    generator = torch.Generator().manual_seed(0)
    weights = np.random.default_rng(0).dirichlet(np.ones(20))
    large = [torch.randn(parallel.PARALLEL_AVERAGE_FLOATS // 16 + 3, generator=generator)
             for _ in range(20)]
    assert torch.equal(trainer.weighted_average(large, weights), weighted_average(large, weights))
    assert calls == [20]
    small = [v[:100] for v in large]
    mixed = large[:-1] + [large[-1].double()]
    for vectors in (small, mixed):
        assert torch.equal(trainer.weighted_average(vectors, weights),
                           weighted_average(vectors, weights))
    assert calls == [20]


def test_a_subset_evaluates_as_its_samples_do_cached_or_not(digits):
    """The gathered test samples of a subset are kept between calls; a new array with the same
    indices, or the same array changed in place, gives what a fresh gathering gives."""
    trainer = make(digits)
    params = trainer.init_params()
    subset = np.arange(0, len(trainer.test_labels), 3)
    first = trainer.evaluate(params, subset)
    assert trainer.evaluate(params, subset) == first == trainer.evaluate(params, subset.copy())
    subset[:] = np.arange(1, len(trainer.test_labels), 3)[: len(subset)]
    changed = trainer.evaluate(params, subset)
    fresh = make(digits).evaluate(params, subset.copy())
    assert changed == fresh and changed != first
    for k in range(10):  # more subsets than are kept
        trainer.evaluate(params, np.arange(k, len(trainer.test_labels), 5))
    assert trainer.evaluate(params, subset) == fresh


def test_a_small_subset_is_shared_among_the_workers(digits, monkeypatch):
    """A subset goes in SUBSET_BATCHES batches: the screen's first stage (1,000 samples, one
    EVAL_BATCH) ran on one worker while the other core idled."""
    import netfl.learn.evaluation as evaluation

    calls = []
    real = evaluation.batch_scores

    def spy(replicas, params, x, y, batch, pool=None):
        calls.append((len(replicas), batch, len(y)))
        return real(replicas, params, x, y, batch, pool)

    monkeypatch.setattr(evaluation, "batch_scores", spy)
    trainer = TorchTrainer(mlp(), digits, partition(digits), RandomStreams(0), max_workers=2)
    params = trainer.init_params()
    subset = np.arange(0, 160)
    assert trainer.evaluate(params, subset)[0] == trainer.evaluate(params, subset.copy())[0]
    trainer.evaluate(params)
    assert calls[0] == (2, 160 // evaluation.SUBSET_BATCHES, 160)
    assert calls[-1][1] == evaluation.EVAL_BATCH
