"""FedAvg on the peers workload (workload.py) in Apple's pfl simulator, timed on the host.

Usage: /tmp/peers/bin/python benchmarks/peers/run_pfl.py --data /tmp/peers_data.npz
--workload W1 --rounds 20 --seed 1 --threads 2

Contract (shared by every ``run_<tool>.py`` of benchmarks/peers):

* ``T0 = time.perf_counter()`` is the first statement, before any heavy import.
* Workload: every round the server samples K = ``workload.WORKLOADS[--workload]`` of the 100
  clients uniformly without replacement (10 for W1, all 100 for W2) and sends the global
  784-200-200-10 MLP (``workload.torch_mlp()`` built right after ``torch.manual_seed(seed)``);
  each client does ``LOCAL_STEPS`` = 5 plain SGD steps (lr 0.05, no momentum, no weight decay),
  each on a fresh mini-batch of 32 of its own samples; the server averages the client updates
  weighted by client sample count (pfl: FederatedAveraging, ``WeightByDatapoints``, central SGD
  at lr 1.0 on the averaged delta, i.e. weighted model averaging); after every round the global
  model is evaluated on the whole test set in batches of 1000 (accuracy, mean cross-entropy).
  No differential privacy, no noise.
* pfl as its users write it: ``PyTorchModel``, a ``FederatedDataset`` (user_id -> that client's
  tensors), ``FederatedAveraging`` with ``NNTrainHyperParams(local_num_steps=5)``, a single
  process ``SimulatedBackend``, ``CentralEvaluationCallback``. ``--threads``: torch threads.
* The LAST line of stdout is one JSON object: ``{"tool": "pfl", "version", "config",
  "round_end_s", "accuracy", "loss"}``, one entry per round: ``round_end_s[r]`` is
  ``time.perf_counter() - T0`` when round r+1's central evaluation finished. Exit status 0.

Where pfl's stock pieces differ from the workload (small subclasses, see ``config``):

* ``CentralEvaluationCallback`` evaluates before training and after iterations 1, 2, ... but
  not after iteration 0 (round 1): here it evaluates after every round too. Its evaluation of
  the initial model (before round 1) is kept, as in stock pfl, and not reported.
* pfl's user samplers draw with replacement (``random``: a W2 cohort would not be all 100) or
  cycle in a fixed order (``minimize_reuse``): here each cohort is drawn without replacement.
* ``Dataset.iter`` slices a user's data from the start (the same 5 batches every round); the
  users here are a ``Dataset`` subclass whose ``iter`` draws each pass's batches from a fresh
  permutation of the user's samples (gathered lazily, only the 5 batches used).
* ``FederatedNNAlgorithm`` evaluates each trained user locally (before and after training)
  whenever ``iteration % evaluation_frequency == 0``, always on iteration 0; the workload has
  none, so the central contexts set ``do_evaluation=False`` (pfl's documented speed switch).
"""
import time

T0 = time.perf_counter()

import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

os.environ.setdefault("PFL_PYTORCH_DEVICE", "cpu")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.nn import functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import pfl  # noqa: E402
import workload  # noqa: E402
from pfl.aggregate.simulate import SimulatedBackend  # noqa: E402
from pfl.aggregate.weighting import WeightByDatapoints  # noqa: E402
from pfl.algorithm import FederatedAveraging, NNAlgorithmParams  # noqa: E402
from pfl.callback.central_evaluation import CentralEvaluationCallback  # noqa: E402
from pfl.data.dataset import Dataset  # noqa: E402
from pfl.data.federated_dataset import FederatedDataset  # noqa: E402
from pfl.hyperparam import NNEvalHyperParams, NNTrainHyperParams  # noqa: E402
from pfl.metrics import Metrics, Weighted  # noqa: E402
from pfl.model.pytorch import PyTorchModel  # noqa: E402


class Net(torch.nn.Module):
    """workload.torch_mlp() with the ``loss`` and ``metrics`` methods PyTorchModel requires."""

    def __init__(self):
        super().__init__()
        self.mlp = workload.torch_mlp()

    def forward(self, x):
        return self.mlp(x)

    def loss(self, x, y):
        if not self.training:  # Module.train() walks every submodule: skip it when a no-op
            self.train()
        return F.cross_entropy(self(x), y)

    @torch.no_grad()
    def metrics(self, x, y):
        self.eval()
        logits = self(x)
        return {"loss": Weighted(float(F.cross_entropy(logits, y, reduction="sum")), len(y)),
                "accuracy": Weighted(int((logits.argmax(1) == y).sum()), len(y))}


class ShuffledDataset(Dataset):
    """A user's ``Dataset`` whose mini-batches are drawn from a fresh permutation of its samples
    on every pass (pfl's ``Dataset.iter`` slices from the start, the same batches every round).
    Rows are gathered lazily, batch by batch: local training stops after ``local_num_steps``."""

    def __init__(self, raw_data, generator: torch.Generator, **kwargs):
        super().__init__(raw_data, **kwargs)
        self._generator = generator

    def iter(self, batch_size):  # noqa: A003
        if batch_size is None:
            yield self.raw_data
            return
        perm = torch.randperm(len(self), generator=self._generator)
        for start in range(0, len(perm), batch_size):
            rows = perm[start:start + batch_size]
            yield [tensor.index_select(0, rows) for tensor in self.raw_data]


class CohortSampler:
    """pfl user sampler (``callable() -> user_id``, called once per cohort member) that draws
    each cohort of ``k`` users uniformly without replacement."""

    def __init__(self, num_users: int, k: int, seed: int):
        self._rng, self._n, self._k, self._pending = np.random.default_rng(seed), num_users, k, []

    def __call__(self) -> int:
        if not self._pending:
            self._pending = self._rng.choice(self._n, self._k, replace=False).tolist()
        return self._pending.pop()


class FedAvgWithoutLocalEvaluation(FederatedAveraging):
    """pfl's FederatedAveraging; its central contexts ask for no local (per-user) evaluation,
    which pfl's ``iteration % evaluation_frequency == 0`` rule forces on iteration 0."""

    def get_next_central_contexts(self, *args, **kwargs):
        contexts, model, metrics = super().get_next_central_contexts(*args, **kwargs)
        if contexts is not None:
            contexts = tuple(dataclasses.replace(c, do_evaluation=False) for c in contexts)
        return contexts, model, metrics


class EveryRoundEvaluation(CentralEvaluationCallback):
    """pfl's central evaluation, also after iteration 0 (round 1), which the stock callback
    skips; records when each evaluation after a round finished, its accuracy and its loss."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.round_end_s, self.accuracy, self.loss = [], [], []

    def after_central_iteration(self, aggregate_metrics, model, *, central_iteration):
        _, metrics = self._eval(model)
        self.round_end_s.append(time.perf_counter() - T0)
        self.accuracy.append(float(metrics[self._format_fn("accuracy")].overall_value))
        self.loss.append(float(metrics[self._format_fn("loss")].overall_value))
        # Iteration 0's metrics already hold on_train_begin's (same names): pfl forbids merging.
        return False, metrics if central_iteration > 0 else Metrics()


def main() -> None:
    parser = workload.arguments(__doc__)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    np.random.seed(args.seed)  # pfl's algorithm and dataset seed their RNGs from numpy's
    torch.manual_seed(args.seed)
    net = Net()  # the same initial weights as workload.torch_mlp() after manual_seed(seed)

    data = workload.load(args.data)
    xs = [torch.from_numpy(data.train_x[i]) for i in data.client_indices]
    ys = [torch.from_numpy(data.train_y[i]) for i in data.client_indices]
    shuffle = torch.Generator().manual_seed(args.seed)
    clients = {u: ShuffledDataset((xs[u], ys[u]), shuffle, user_id=u) for u in range(len(xs))}

    k = workload.WORKLOADS[args.workload]
    train_data = FederatedDataset(clients.__getitem__,
                                  CohortSampler(workload.CLIENTS, k, args.seed))
    test = Dataset((torch.from_numpy(data.test_x), torch.from_numpy(data.test_y)))
    evaluation = EveryRoundEvaluation(test, NNEvalHyperParams(local_batch_size=1000))

    model = PyTorchModel(model=net, local_optimizer_create=torch.optim.SGD,
                         central_optimizer=torch.optim.SGD(net.parameters(), lr=1.0))
    backend = SimulatedBackend(training_data=train_data, val_data=None,
                               postprocessors=[WeightByDatapoints()])
    algorithm_params = NNAlgorithmParams(central_num_iterations=args.rounds,
                                         evaluation_frequency=args.rounds + 1,
                                         train_cohort_size=k, val_cohort_size=None)
    train_params = NNTrainHyperParams(local_num_epochs=None, local_learning_rate=workload.LR,
                                      local_batch_size=workload.BATCH,
                                      local_num_steps=workload.LOCAL_STEPS)
    FedAvgWithoutLocalEvaluation().run(
        algorithm_params=algorithm_params, backend=backend, model=model,
        model_train_params=train_params, callbacks=[evaluation], send_metrics_to_platform=False)

    config = (f"pfl {pfl.__version__} SimulatedBackend single process, PyTorchModel on CPU "
              f"(torch {torch.__version__}, {args.threads} threads), FederatedAveraging + "
              "WeightByDatapoints, central SGD lr 1.0, local SGD lr 0.05 via "
              "NNTrainHyperParams(local_num_steps=5, local_batch_size=32); FederatedDataset of "
              "per-client tensors, batches from a fresh permutation every round; cohort drawn "
              "without replacement; no local evaluation; pfl CentralEvaluationCallback (batch "
              "1000) on the initial model (not reported) and after every round")
    sys.stdout.flush()
    print(json.dumps({"tool": "pfl", "version": pfl.__version__, "config": config,
                      "round_end_s": evaluation.round_end_s, "accuracy": evaluation.accuracy,
                      "loss": evaluation.loss}))


if __name__ == "__main__":
    main()
