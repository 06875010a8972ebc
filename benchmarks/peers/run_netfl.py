"""netfl on the workload of benchmarks/bench_peers.py, its network simulation on.

Runs ``workload.netfl_scenario`` through ``run_scenario`` as the CLI does (results written to a
temporary folder, plots off), as a user would: the scenario leaves ``model.threads`` at its
default (1) and netfl's trainer spreads clients and test batches over one worker thread per
core (``--threads`` is only passed through to torch before the run); the data and the partition
are netfl's own, the ones ``workload.export`` wrote for the other tools.

    python benchmarks/peers/run_netfl.py --workload W1 --rounds 20 --seed 1 --threads 2

Last line of stdout: {"tool": "netfl", "version", "config", "round_end_s", "accuracy", "loss",
"host_time_s_by_part"}, ``round_end_s[r]`` the host seconds since the process started at which
round r + 1's evaluation ended.
"""

import time

T0 = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import workload  # noqa: E402

from netfl import __version__  # noqa: E402
from netfl.runner import run_scenario  # noqa: E402
from netfl.sim.trace import Evaluation  # noqa: E402


def main() -> None:
    parser = workload.arguments(__doc__)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ends, accuracy, loss = [], [], []

    def on_evaluation(record: Evaluation) -> None:
        if record.round == 0:  # the initial model's: the other tools do not evaluate it
            return
        ends.append(time.perf_counter() - T0)
        accuracy.append(record.accuracy)
        loss.append(record.loss)

    built = []

    def attach(simulation) -> None:
        built.append(simulation)
        simulation.trace.subscribe(on_evaluation, Evaluation)

    with tempfile.TemporaryDirectory() as out:
        result = run_scenario(workload.netfl_scenario(args.workload, args.rounds, args.seed),
                              out_dir=out, on_start=attach)
    trainer = built[0].trainer
    dense = getattr(trainer, "_dense", False)  # builds before the dense path have none
    print(json.dumps({"tool": "netfl", "version": __version__,
                      "config": f"{trainer.path} path (dense MLP: {dense}), "
                                f"{trainer.max_workers} worker threads, TCP network on",
                      "round_end_s": ends, "accuracy": accuracy, "loss": loss,
                      "host_time_s_by_part": result.summary.get("host_time_s_by_part")}))


if __name__ == "__main__":
    main()
