"""Real training with PyTorch: many clients' local SGD at once, gradients, evaluation.

Parameters travel as one flat float32 vector (what goes on the wire, and what aggregation
averages). Two paths train many clients, with the same update maths (``sgd_step_``):

* ``vmap``: all clients of equal batch size and rate in one call, torch.func.vmap(grad(loss))
  over their stacked parameter vectors and batches; for a dense ReLU MLP, the hand-written
  batched passes of netfl.learn.dense instead (every SGD option), in chunks of clients on
  worker threads;
* ``loop``: one client after another through a model object whose parameters are views of a
  single flat buffer (no per-client model copies), on as many worker threads as there are cores
  (up to 8), each with its own model replica and torch single-threaded.

``trainer: auto`` picks by the rule measured in benchmarks/bench_trainer.py on a 2-core CPU:
vmap for models without convolutions, the loop for convolutional ones (vmap does not speed up
convolutions on CPU); vmap on CUDA. Both give the same results within float rounding.

Gradients (Fed-CHS's fused one included) are in netfl.learn.gradients, evaluation on the test
set in netfl.learn.evaluation. Contract shared with
:class:`netfl.learn.fake.FakeTrainer`:

* ``init_params()`` -> the initial global parameters;
* ``local_train(params, clients, steps, lr, batch_size, ...)`` -> one parameter vector per client,
  each after its ``steps`` SGD steps from its start in ``params`` (one for all, or one per
  client) on fresh mini-batches of that client's data;
* ``evaluate(params)`` -> (accuracy, mean cross-entropy) on the test set;
* ``samples_per_step(client, batch_size)``, ``payload_bytes``, ``flops_per_sample`` (forward),
  ``train_flops_per_sample`` (forward and backward: what the device model charges),
  ``client_sizes``, ``num_params``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.nn import functional as F

from netfl import float_kernels
from netfl.learn.clients import BYTES_PER_PARAM, ClientData
from netfl.learn.data import Dataset
from netfl.learn.dense import chunk_size, dense_layers, dense_sgd_
from netfl.learn.evaluation import EvaluationMethods
from netfl.learn.flat import FlatModel
from netfl.learn.gradients import GradientMethods
from netfl.learn.models import count_params, flops_per_sample, train_flops_per_sample
from netfl.learn.parallel import average, on_replicas, single_threaded_torch, worker_pool
from netfl.learn.partition import Partition
from netfl.learn.sgd import sgd_step_
from netfl.sim.clock import RandomStreams
from netfl.sim.cores import available_cores, keep_freed_memory


def choose_path(model: nn.Module, device: torch.device) -> str:
    """The measured rule: the loop for convolutional models on CPU, vmap otherwise; the loop
    for any model with buffers (batch norm's running statistics), which vmap cannot update.
    (Buffers are each client's own in the loop and are not aggregated.)"""
    has_conv = any(isinstance(m, nn.Conv1d | nn.Conv2d | nn.Conv3d) for m in model.modules())
    has_buffers = any(True for _ in model.buffers())
    return "loop" if (device.type == "cpu" and has_conv) or has_buffers else "vmap"


def resolve_device(requested: str) -> torch.device:
    """``cuda`` where asked and present; otherwise the CPU (with a warning if cuda was asked)."""
    if requested == "cuda" and not torch.cuda.is_available():
        warnings.warn("model.device is cuda but no CUDA device is present; training on the CPU",
                      stacklevel=2)
        return torch.device("cpu")
    return torch.device(requested)


class TorchTrainer(ClientData, GradientMethods, EvaluationMethods):
    """Local SGD, gradients and evaluation for a torch model on an in-memory data set."""

    def __init__(self, model: nn.Module, dataset: Dataset, partition: Partition,
                 streams: RandomStreams, device: str = "cpu", path: str = "auto",
                 max_workers: int | None = None, threads: int | None = None):
        """``threads``: torch's intra-op threads for this process from now on (None leaves
        them): float sums split by thread count, so a fixed count keeps results identical."""
        super().__init__(partition, streams)
        keep_freed_memory()  # large tensors every round: no fresh pages for each (see there)
        if threads is not None:
            torch.set_num_threads(threads)
        self.max_workers = max_workers or min(available_cores(), 8)
        self.device = resolve_device(device)
        self.float_kernels = float_kernels.settle()  # "native (AVX512)": see netfl.float_kernels
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(streams.seed_for("training-init"))
            for module in model.modules():
                if hasattr(module, "reset_parameters"):
                    module.reset_parameters()
        # counted on the CPU, before the move to the device
        self.flops_per_sample = flops_per_sample(model, dataset.input_shape)
        self.train_flops_per_sample = train_flops_per_sample(model, dataset.input_shape)
        self.model = model.to(self.device)
        self.num_params = count_params(self.model)
        self.payload_bytes = float(self.num_params * BYTES_PER_PARAM)
        self.path = choose_path(self.model, self.device) if path == "auto" else path
        self._replicas = [FlatModel(self.model)]
        self._main = self._replicas[0]
        self._initial = self._main.flat.clone()
        self._train_x = torch.as_tensor(dataset.train_x, device=self.device)
        self._train_y = torch.as_tensor(dataset.train_y, device=self.device)
        self._test_x = torch.as_tensor(dataset.test_x, device=self.device)
        self._test_y = torch.as_tensor(dataset.test_y, device=self.device)
        # the test samples of the last subsets evaluated, gathered once: the screen's stages
        # are the same index arrays every update (id -> (a copy of the indices, x, y); a hit
        # needs the same indices, so a reused id or an array changed in place gathers afresh)
        self._subsets: dict[int, tuple] = {}
        self._names = [name for name, *_ in self._main.layout]
        self._batched_grad = vmap(grad(self._loss_at), randomness="different")
        self._dense = dense_layers(self.model) is not None

    @property
    def batch_invariant(self) -> bool:
        """Whether a client's trained floats are the same whoever shares its ``local_train``
        call: on the per-client loop and the dense MLP path; vmap over another model reduces
        over the stacked call, and its last bits can depend on the company."""
        return self.path == "loop" or self._dense

    # ------------------------------------------------------------------ parameters

    def init_params(self) -> torch.Tensor:
        return self._initial.clone()

    def _loss_at(self, params: dict[str, torch.Tensor], x: torch.Tensor,
                 y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(functional_call(self.model, params, (x,)), y)

    def _batch(self, clients: Sequence[int], batch_size: int):
        """One fresh mini-batch per client, stacked: x (B, b, ...), y (B, b)."""
        return self._gather(np.stack([self.draw_batch(c, batch_size) for c in clients]))

    def _gather(self, index: np.ndarray):
        """The training samples at ``index`` (any shape): x (*shape, ...), y (*shape)."""
        index = torch.as_tensor(index, device=self.device)
        return self._train_x[index], self._train_y[index]

    def _draw_batches(self, clients: Sequence[int], steps: Sequence[int],
                      batch_size: int) -> list:
        """Every mini-batch a local_train call uses: per entry of ``clients``, a (steps[i], b)
        array of training-set indices.

        Drawn here, on the calling thread, entry after entry in list order, before any training
        starts: a client that appears twice (sampling with replacement) draws its second
        entry's batches after its first's, from its own generator, whichever path or worker
        thread then trains them. Same seed, same batches, whatever the thread count, and
        whichever other clients share the call.
        """
        return [np.stack([self.draw_batch(c, batch_size) for _ in range(n)]) if n
                else np.empty((0, self.samples_per_step(c, batch_size)), dtype=np.int64)
                for c, n in zip(clients, steps, strict=True)]

    # --------------------------------------------------------------------- training

    def local_train(self, params: torch.Tensor, clients: Sequence[int],
                    steps: int | Sequence[int], lr: float | Sequence[float], batch_size: int,
                    *, momentum: float = 0.0, weight_decay: float = 0.0, prox_mu: float = 0.0,
                    corrections: Sequence[torch.Tensor] | None = None,
                    initial_buffers: Sequence[torch.Tensor] | None = None,
                    return_buffers: bool = False):
        """``steps`` SGD steps from ``params`` for each client; one vector per client, in order.

        params: the start of every client (P,), or one start per client (a (B, P) tensor or
            a sequence of B vectors: several groups' models trained in one call, as
            Group-FEL's groups are).
        steps: one count, or one per client (clients of different data sizes doing whole
            epochs): a client's result does not depend on the others' counts.
        lr: one rate, or one per client. corrections: one vector per client added to every
        gradient (SCAFFOLD's c - c_i). initial_buffers: one momentum buffer per client to start
        from (zeros otherwise); with ``return_buffers`` the result is (parameters, buffers), the
        buffers after the last step (for algorithms that aggregate momentum, such as HierMo).
        ``params`` is never modified; FedProx's anchor is each client's start. A client may
        appear more than once (sampling with replacement): each entry trains separately, on
        its own batches, drawn entry after entry in list order (``_draw_batches``).
        """
        clients = list(clients)
        counts = [int(n) for n in np.broadcast_to(np.asarray(steps), (len(clients),))]
        if torch.is_tensor(params) and params.dim() == 1:
            starts = params.expand(len(clients), -1)
        else:  # one vector per client, never stacked into a (B, P) copy here: each path
            starts = list(params)  # copies only the rows it trains, where it trains them
        if len(starts) != len(clients):
            raise ValueError(f"local_train: {len(starts)} start vectors for {len(clients)} "
                             f"clients")
        rates = np.broadcast_to(np.asarray(lr, dtype=np.float64), (len(clients),))
        options = dict(momentum=momentum, weight_decay=weight_decay, prox_mu=prox_mu)
        extras = [(None if corrections is None else corrections[i],
                   None if initial_buffers is None else initial_buffers[i])
                  for i in range(len(clients))]
        draws = self._draw_batches(clients, counts, batch_size)
        if self.path == "loop":
            pairs = self._train_loop(starts, draws, rates, extras, options)
        else:
            pairs = [None] * len(clients)
            # one stacked call per batch size and rate: a client's sums then do not depend
            # on who shares the call (the dense path fuses a single rate into its products)
            by_batch: dict[tuple[int, float], list[int]] = {}
            for i, client in enumerate(clients):
                key = (self.samples_per_step(client, batch_size), float(rates[i]))
                by_batch.setdefault(key, []).append(i)
            for positions in by_batch.values():
                # most steps first: the clients still training at a step are a prefix
                positions = sorted(positions, key=lambda i: -counts[i])
                mine = (params.expand(len(positions), -1) if torch.is_tensor(starts)
                        else [starts[i] for i in positions])  # (no copy of a shared start)
                trained = self._train_stacked(mine, [draws[i] for i in positions],
                                              rates[positions],
                                              [extras[i] for i in positions], options)
                for position, pair in zip(positions, trained, strict=True):
                    pairs[position] = pair
        thetas = [theta for theta, _ in pairs]
        return (thetas, [buffer for _, buffer in pairs]) if return_buffers else thetas

    def _train_loop(self, starts, draws, rates, extras, options):
        """Clients one after another on each of ``workers`` threads, each thread with its own
        model replica and torch running single-threaded: on a 2-core CPU, two single-threaded
        workers train small CNNs 1.1-1.5x faster than one worker with two threads. Each
        client's arithmetic is single-threaded and its batches drawn beforehand (``draws``),
        so the results do not depend on the worker count; threads never touch a generator."""
        workers = max(min(self.max_workers, len(draws)), 1)

        def train(replica: FlatModel, positions) -> list:
            return [self._train_one(replica, starts[i], draws[i], float(rates[i]), extras[i],
                                    options)
                    for i in positions]

        return on_replicas(self._replica_set(workers), range(len(draws)), train,
                           self._workers())

    @staticmethod
    def _momentum_buffer(like: torch.Tensor, initial, momentum: float):
        if not momentum:
            return None
        return torch.zeros_like(like) if initial is None else initial.detach().clone()

    def _train_one(self, replica, start, draws, lr, extra, options):
        """One client's local SGD from ``start`` on its pre-drawn batches ``draws`` (steps,
        b)."""
        correction, initial = extra
        theta = start.clone()
        buffer = self._momentum_buffer(theta, initial, options["momentum"])
        views, anchor = replica.views(theta), replica.views(start)
        buffers = replica.views(buffer) if buffer is not None else None
        corr = replica.views(correction) if correction is not None else None
        for index in draws:
            x, y = self._gather(index)
            grads = replica.grads_at(theta, x, y)
            with torch.no_grad():
                sgd_step_(views, grads, lr, buffers=buffers, anchor=anchor, correction=corr,
                          **options)
        return theta, buffer

    def _train_stacked(self, starts, draws, rates, extras, options):
        """vmap over clients from ``starts`` (B, P) on their pre-drawn batches ``draws`` (B
        arrays of (steps_i, b), steps_i not increasing): at step s the clients with more than
        s steps train. Parameters stay a dict of stacked tensors (views of one (B, P) block)
        because differentiating with respect to slices of a flat vector costs a zero-filled
        (B, P) tensor per parameter tensor (5x slower for the Fed-CHS MLP)."""
        if self._dense:
            return self._train_dense(starts, draws, rates, extras, options)
        if not torch.is_tensor(starts):
            starts = torch.stack(starts)
        theta = starts.clone()
        lr = (float(rates[0]) if np.all(rates == rates[0])
              else torch.as_tensor(rates, dtype=starts.dtype, device=self.device))
        buffer = None
        if options["momentum"]:
            buffer = torch.stack([self._momentum_buffer(starts[0], initial, options["momentum"])
                                  for _, initial in extras])
        corr = None
        if extras[0][0] is not None:
            corr = torch.stack([correction for correction, _ in extras])
        same_start = starts.stride(0) == 0  # one start for all, expanded: a broadcast anchor
        for step in range(len(draws[0]) if draws else 0):
            k = sum(len(d) > step for d in draws)
            views = self._main.views(theta[:k])
            anchor = self._main.views(starts[0] if same_start else starts[:k])
            x, y = self._gather(np.stack([d[step] for d in draws[:k]]))
            grads = self._batched_grad(dict(zip(self._names, views, strict=True)), x, y)
            with torch.no_grad():
                sgd_step_(views, [grads[n] for n in self._names],
                          lr if isinstance(lr, float) else lr[:k],
                          buffers=None if buffer is None else self._main.views(buffer[:k]),
                          anchor=anchor,
                          correction=None if corr is None else self._main.views(corr[:k]),
                          **options)
        thetas = list(theta.unbind(0))
        return list(zip(thetas, [None] * len(thetas) if buffer is None else list(buffer.unbind(0)),
                        strict=True))

    def _train_dense(self, starts, draws, rates, extras, options) -> list[tuple]:
        """SGD of a dense ReLU network (netfl.learn.dense) from ``starts`` (a (B, P) tensor,
        or B vectors: each chunk's rows are then copied from them on its thread) on pre-drawn
        batches ``draws`` (B arrays of (steps_i, b), steps_i not increasing), with the options
        of ``sgd_step_``; returns (parameters, momentum buffer or None) per client. Cache-sized
        chunks of clients, each chunk's tensors contiguous (strided views of a (B, P) block ran
        15% slower), the chunks shared among worker threads (at most a 1/workers share each)
        with torch single-threaded as in ``_train_loop``: a client's result is the same bits
        whatever its chunk, the clients beside it, the worker count and ``threads``, and every
        core works."""
        dtype = starts[0].dtype
        out = torch.empty(len(draws), self.num_params, dtype=dtype, device=self.device)
        lr = (float(rates[0]) if np.all(rates == rates[0])
              else torch.as_tensor(rates, dtype=dtype, device=self.device))
        momentum = options["momentum"]
        buffer = (torch.stack([self._momentum_buffer(starts[0], initial, momentum)
                               for _, initial in extras]) if momentum else None)
        corr = (torch.stack([correction for correction, _ in extras])
                if extras[0][0] is not None else None)
        workers = 1 if self.device.type != "cpu" else self.max_workers
        chunk = min(chunk_size(self.num_params), -(-len(draws) // workers))

        def train(start: int) -> None:
            rows = slice(start, min(start + chunk, len(draws)))

            def copies(block):  # contiguous (a view would alias the caller's tensors)
                if not torch.is_tensor(block):
                    return self._layer_stacks(block[rows])
                return [v.clone(memory_format=torch.contiguous_format)
                        for v in self._main.views(block[rows])]

            tensors = copies(starts)
            buffers = copies(buffer) if buffer is not None else None
            anchor = (self._main.views(starts[rows]) if torch.is_tensor(starts)
                      else copies(starts) if options["prox_mu"] else None)
            mine = draws[rows]
            batches = [self._gather(np.stack([d[s] for d in mine if len(d) > s]))
                       for s in range(len(mine[0]))]  # per step, of the clients still training
            dense_sgd_(tensors, [x.reshape(*y.shape, -1) for x, y in batches],
                       [y for _, y in batches], lr if isinstance(lr, float) else lr[rows],
                       anchor=anchor, buffers=buffers,
                       correction=None if corr is None else self._main.views(corr[rows]),
                       **options)
            for view, trained in zip(self._main.views(out[rows]), tensors, strict=True):
                view.copy_(trained)
            if buffer is not None:
                for view, trained in zip(self._main.views(buffer[rows]), buffers, strict=True):
                    view.copy_(trained)

        starts_at = range(0, len(draws), chunk)
        if self.device.type != "cpu":
            for start in starts_at:
                train(start)
        else:  # a client's numbers do not depend on its chunk's size: single-threaded GEMMs
            with single_threaded_torch():
                if len(starts_at) == 1:
                    train(0)
                else:
                    list(self._workers().map(train, starts_at))
        buffers = [None] * len(draws) if buffer is None else list(buffer.unbind(0))
        return list(zip(out.unbind(0), buffers, strict=True))

    def _layer_stacks(self, vectors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Per parameter tensor of the layout, the rows of ``vectors`` (C flat vectors) as one
        contiguous (C, *shape) tensor: a copy, each value as it is."""
        return [torch.stack([v[start:start + n] for v in vectors]).view(len(vectors), *shape)
                for _, shape, start, n in self._main.layout]

    def _replica_set(self, n: int) -> list[FlatModel]:
        """``n`` model replicas, one per worker thread (made on first need, then kept)."""
        while len(self._replicas) < n:
            self._replicas.append(self._main.replica())
        return self._replicas[:n]

    def _workers(self) -> ThreadPoolExecutor:
        return worker_pool(self.max_workers)

    def weighted_average(self, vectors: Sequence[torch.Tensor], weights) -> torch.Tensor:
        """``aggregation.weighted_average`` (the same floats), on the worker threads where it
        is large (``parallel.average``)."""
        workers = self.max_workers if self.device.type == "cpu" else 1
        return average(vectors, weights, workers, self._workers())
