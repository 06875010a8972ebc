"""Floors under the papers' runs: each paper scenario's host time against what no simulator can
avoid, measured in one process.

For each scenario the script runs netfl (built and run in this process, nothing written), with a
log of the trainer's work (every training pass and its samples, every evaluation, every
compressed upload) and a count of SimPy's events; then it times, in the same process, plain torch
and plain SimPy doing only that work:

* **training**: plain torch with one model object (the scenario's architecture): per local step
  of a client, a forward, backward and SGD update of its batch; per fused gradient (Fed-CHS's
  weighted sum), one forward and backward over all its samples; per client gradient, a forward and
  backward of its batch;
* **evaluation**: per evaluation, a no-grad forward over the test samples it scores, in netfl's
  batches of EVAL_BATCH;
* **compression**: per compressed vector, torch's generator drawing its uniforms (QSGD; int8 has
  none);
* **events**: plain SimPy resuming as many processes on timeouts as the run processed events.

Each shape is timed over repeated calls (the best of three) and multiplied by its count. The
floor is the sum; where netfl's batched trainer runs under the plain loop (vmap over clients,
batches on every core), the training column shows it, and the **FLOP bound** beside it is what
no implementation beats: the run's counted training FLOPs at the machine's sgemm peak. The ratio
is the run's host time over the floor; the event-loop share is netfl's
``event_loop_s`` over the host time. Set-up and loading the data set are in the host time, not
in the floor (a few seconds; shown apart).

    python benchmarks/bench_floors.py [SCENARIO ...] [--set KEY=VALUE ...] [--json PATH]

Without scenarios: every ``scenarios/*/paper-*.yaml`` but ``fedchs/paper-hier-local-qsgd.yaml``
(4,000 cloud rounds of 10,000 client steps: days). ``--resume PATH`` keeps the rows of an earlier
``--json`` file for scenarios it already holds. The last line is ``floors: worst_ratio X,
worst_event_loop_share Y``.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import simpy
import torch
from torch.nn import functional as F

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = ("fedchs/paper-hier-local-qsgd.yaml",)
COLUMNS = ["scenario", "host s", "training s", "training floor s", "training FLOP bound s",
           "evaluation s",
           "evaluation floor s", "compression s", "compression floor s", "event loop s",
           "events", "event floor s", "set-up and data s", "floor s", "host / floor",
           "event-loop share"]
RATIO, SHARE = COLUMNS.index("host / floor"), COLUMNS.index("event-loop share")


def paper_scenarios() -> list[Path]:
    return [p for p in sorted((ROOT / "scenarios").glob("*/paper-*.yaml"))
            if str(p.relative_to(ROOT / "scenarios")) not in SKIPPED]


class WorkLog:
    """What a run's trainer and compressor did, by shape: ``passes[(kind, samples)]`` counts
    training passes, ``evaluations[samples]`` evaluations, ``draws[floats]`` compressions."""

    def __init__(self):
        self.passes: Counter = Counter()
        self.evaluations: Counter = Counter()
        self.draws: Counter = Counter()

    def attach(self, trainer, compressor) -> None:
        """Log through ``trainer``'s and ``compressor``'s public methods (wrapped in place)."""
        def wrap(obj, name, log):
            method = getattr(obj, name, None)
            if callable(method):
                def logged(*args, **kwargs):
                    log(*args, **kwargs)
                    return method(*args, **kwargs)
                setattr(obj, name, logged)

        wrap(trainer, "local_train", self._local_train(trainer))
        wrap(trainer, "weighted_gradient", self._weighted_gradient(trainer))
        wrap(trainer, "gradients", self._gradients(trainer))
        wrap(trainer, "evaluate", self._evaluate(trainer))
        if compressor.name == "qsgd":
            wrap(compressor, "compress", self._compress)

    def _local_train(self, trainer):
        def log(params, clients, steps, lr, batch_size, **_):
            counts = np.broadcast_to(np.asarray(steps), (len(clients),))
            for client, count in zip(clients, counts, strict=True):
                self.passes[("step", trainer.samples_per_step(client, batch_size))] += int(count)
        return log

    def _weighted_gradient(self, trainer):
        def log(params, clients, batch_size, weights):
            samples = sum(trainer.samples_per_step(c, batch_size) for c in clients)
            self.passes[("gradient", samples)] += 1
        return log

    def _gradients(self, trainer):
        def log(params, clients, batch_size):
            for client in clients:
                self.passes[("gradient", trainer.samples_per_step(client, batch_size))] += 1
        return log

    def _evaluate(self, trainer):
        def log(params, subset=None):
            self.evaluations[len(trainer.test_labels) if subset is None else len(subset)] += 1
        return log

    def _compress(self, vector):
        if torch.is_tensor(vector):
            self.draws[vector.numel()] += 1


def seconds_per_call(work, budget_s: float = 0.6) -> float:
    """The best of three timings of repeated calls (about ``budget_s`` each), per call."""
    work()
    began = time.perf_counter()
    work()
    once = max(time.perf_counter() - began, 1e-6)
    repeats = max(int(budget_s / once), 3)
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        for _ in range(repeats):
            work()
        best = min(best, (time.perf_counter() - began) / repeats)
    return best


def training_floor_s(model: torch.nn.Module, input_shape, classes: int, passes: Counter) -> float:
    """Plain torch doing ``passes`` with one model object (module docstring)."""
    model = copy.deepcopy(model).train()
    params = list(model.parameters())
    total = 0.0
    for (kind, samples), count in passes.items():
        x = torch.randn(samples, *input_shape)
        y = torch.randint(0, classes, (samples,))
        weights = torch.full((samples,), 1.0 / samples)

        def step(x=x, y=y):
            model.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            with torch.no_grad():
                torch._foreach_add_(params, [p.grad for p in params], alpha=-0.01)

        def gradient(x=x, y=y, weights=weights):
            model.zero_grad(set_to_none=True)
            (F.cross_entropy(model(x), y, reduction="none") * weights).sum().backward()

        total += seconds_per_call(step if kind == "step" else gradient) * count
    return total


def evaluation_floor_s(model: torch.nn.Module, input_shape, evaluations: Counter,
                       batch: int) -> float:
    """Plain torch's no-grad forward over each evaluation's samples, in batches of ``batch``."""
    model = copy.deepcopy(model).eval()
    total = 0.0
    for samples, count in evaluations.items():
        x = torch.randn(samples, *input_shape)

        @torch.no_grad()
        def score(x=x):
            for start in range(0, len(x), batch):
                model(x[start:start + batch]).argmax(dim=1)

        total += seconds_per_call(score) * count
    return total


def compression_floor_s(draws: Counter, bucket: int = 512) -> float:
    """torch's generator drawing each compressed vector's uniforms (padded to whole buckets)."""
    generator = torch.Generator().manual_seed(0)
    total = 0.0
    for floats, count in draws.items():
        padded = -(-floats // bucket) * bucket
        total += seconds_per_call(lambda n=padded: torch.rand(n, generator=generator)) * count
    return total


def simpy_seconds_per_event(events: int = 400_000, processes: int = 1000) -> float:
    """Plain SimPy: ``processes`` processes resumed on timeouts, ``events`` events in all."""
    def work():
        env = simpy.Environment()
        rng = np.random.default_rng(0)
        delays = rng.uniform(0.1, 1.0, size=(processes, events // processes))

        def proc(row):
            for delay in row:
                yield env.timeout(delay)

        for row in delays:
            env.process(proc(row.tolist()))
        began = time.perf_counter()
        env.run()
        return time.perf_counter() - began

    return min(work() for _ in range(3)) / events


def sgemm_flops(n: int = 2048) -> float:
    """FLOP/s of one large float32 matrix product: the machine's peak for training's products."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n**3 / seconds_per_call(lambda: a @ b)


def run_with_log(path: Path, overrides: list[str]) -> tuple[dict, WorkLog, int, float, object]:
    """Build and run ``path`` in this process: its summary, work log, SimPy event count, host
    seconds of build and run, and the simulation."""
    from netfl import load_scenario
    from netfl.simulation import Simulation

    began = time.perf_counter()
    simulation = Simulation(load_scenario(path, overrides))
    log = WorkLog()
    log.attach(simulation.trainer, simulation.algorithm.compressor)
    simulation.run()
    host_s = time.perf_counter() - began
    events = next(simulation.env._eid)  # SimPy numbers every event it schedules
    return simulation.summary(), log, events, host_s, simulation


def measure(name: str, path: Path, overrides: list[str], per_event_s: float,
            peak_flops: float) -> list:
    """One row of COLUMNS: ``path`` (with ``overrides``) run, its floors timed."""
    summary, log, events, host_s, simulation = run_with_log(path, overrides)
    parts = summary["host_time_s_by_part"]
    trainer = simulation.trainer
    from netfl.learn.evaluation import EVAL_BATCH

    input_shape = tuple(simulation.dataset.input_shape)
    classes = simulation.dataset.num_classes
    training = training_floor_s(trainer.model, input_shape, classes, log.passes)
    samples = sum(n * count for (_, n), count in log.passes.items())
    flop_bound = samples * trainer.train_flops_per_sample / peak_flops
    evaluation = evaluation_floor_s(trainer.model, input_shape, log.evaluations, EVAL_BATCH)
    compression = compression_floor_s(log.draws)
    event_floor = events * per_event_s
    floor = training + evaluation + compression + event_floor
    setup = parts["setup_s"] + parts["data_s"]
    return [name, host_s, parts["training_s"], training, flop_bound, parts["evaluation_s"],
            evaluation,
            parts["compression_s"], compression, parts["event_loop_s"], events, event_floor,
            setup, floor, host_s / floor, parts["event_loop_s"] / host_s]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", type=Path)
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="applied to every scenario")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    parser.add_argument("--resume", metavar="PATH", help="keep this earlier --json file's rows")
    args = parser.parse_args()
    paths = [p.resolve() for p in args.scenarios] or paper_scenarios()
    kept = {}
    if args.resume and Path(args.resume).is_file():
        kept = {row[0]: row for row in json.loads(Path(args.resume).read_text())["rows"]}
    per_event = simpy_seconds_per_event()
    peak = sgemm_flops()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; sgemm "
          f"{peak / 1e9:.0f} GFLOP/s; plain SimPy {per_event * 1e6:.2f} us per event")
    print(" | ".join(COLUMNS))
    rows = []
    for path in paths:
        name = (str(path.relative_to(ROOT / "scenarios"))
                if path.is_relative_to(ROOT / "scenarios") else str(path))
        name += "".join(f" --set {o}" for o in args.overrides)
        row = kept.get(name) or measure(name, path, args.overrides, per_event, peak)
        rows.append(row)
        print(" | ".join(f"{v:,.3g}" if isinstance(v, float) else f"{v:,}"
                         if isinstance(v, int) else str(v) for v in row), flush=True)
        if args.json:  # after every scenario: a long batch stopped part-way keeps what it did
            write_json(args.json, rows)
    worst = max(r[RATIO] for r in rows)
    worst_share = max(r[SHARE] for r in rows)
    print(f"floors: worst_ratio {worst:.2f}, worst_event_loop_share {worst_share:.2f}")


def write_json(path: str, rows: list) -> None:
    from record import write  # benchmarks/record.py, beside this script

    write(path, {"worst_ratio": max(r[RATIO] for r in rows),
                 "worst_event_loop_share": max(r[SHARE] for r in rows)}, COLUMNS, rows)


if __name__ == "__main__":
    main()
