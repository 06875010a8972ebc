"""FedAvg on the peers workload with Flower (flwr 1.40, Ray simulation engine), timed on the host.

Usage::

    /tmp/peers/bin/python benchmarks/peers/run_flower.py --data /tmp/peers_data.npz \
        --workload W1 --rounds 20 --seed 1 --threads 2

Contract (shared by every run_*.py in this folder, see workload.py):

* FedAvg over workload.CLIENTS=100 clients. Each round the server samples K = WORKLOADS[workload]
  clients uniformly without replacement (10 for W1, all 100 for W2) and sends the global MLP
  (``workload.torch_mlp()`` built after ``torch.manual_seed(seed)``). Each client runs LOCAL_STEPS=5
  plain SGD steps (lr 0.05, no momentum / weight decay) on consecutive mini-batches of 32 taken
  from a fresh random permutation of its own samples; the server averages the returned models
  weighted by client sample count, then evaluates the global model on the whole test set
  (``workload.evaluate``, batches of 1000).
* ``T0 = time.perf_counter()`` is the first statement. The last stdout line is one JSON object
  ``{"tool", "version", "config", "round_end_s", "accuracy", "loss"}``; ``round_end_s[r]`` is
  ``perf_counter() - T0`` when round r+1's centralized evaluation finished. Flower's "round 0"
  evaluation of the initial model is run (it is part of Strategy.start) but not reported.
* ``--threads`` is the total number of torch intra-op threads / CPU cores to use.

Flower mapping: ServerApp (``flwr.serverapp.strategy.FedAvg`` with ``evaluate_fn`` for the
centralized evaluation, run in a thread of this process, so timestamps share T0's clock) and
ClientApp (``@app.train``) run with ``flwr.simulation.run_simulation`` on the Ray backend. 100
virtual SuperNodes, ``partition-id`` = client index; data path, seed and threads reach the
clients in the train ConfigRecord. Each Ray actor loads the data file once and keeps it (and one
model object) for all the clients it runs; the ClientApp is handed over from the importable
module so Ray pickles it by reference, as for a ``flwr run`` app. ``--option`` picks the actor
layout (see OPTIONS); the default was the fastest on a 2-core machine (W1 and W2 per-round time,
and setup). Caveats: ``run_simulation`` is deprecated in 1.40 in favour of ``flwr run`` (which
needs an app project and a background SuperLink, no in-process timing); FedAvg samples node ids,
which Flower assigns at random, so W1's client draws are not reproducible across runs.
"""

import time

T0 = time.perf_counter()

import importlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")  # no network calls from the benchmark
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
warnings.filterwarnings("ignore")

import flwr  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import workload  # noqa: E402
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402
from flwr.serverapp.strategy import FedAvg  # noqa: E402
from flwr.simulation import run_simulation  # noqa: E402

# name -> (Ray CPUs per virtual client, torch threads per client), as functions of --threads T.
OPTIONS = {
    "actors": lambda t: (1.0, 1),           # T actors in parallel, 1 thread each
    "single": lambda t: (float(t), t),      # 1 actor, T threads
    "oversub": lambda t: (0.5, 1),          # 2T actors, 1 thread each (oversubscribed)
}
DEFAULT_OPTION = "actors"

RESULTS = {"round_end_s": [], "accuracy": [], "loss": []}
_ACTOR_STATE = None  # per Ray actor process: data tensors, client indices, one reusable model

# The ClientApp lives at module level and main() hands Flower the copy imported as module
# `run_flower`, so Ray pickles it by reference (as with a `flwr run` app), not by value per call.
client_app = ClientApp()


def _actor_state(cfg):
    """Load the data file and build the model once per actor process (on its first message)."""
    global _ACTOR_STATE
    if _ACTOR_STATE is None:
        torch.set_num_threads(int(cfg["client-threads"]))
        data = workload.load(Path(str(cfg["data"])))
        _ACTOR_STATE = (torch.from_numpy(data.train_x), torch.from_numpy(data.train_y),
                        data.client_indices, workload.torch_mlp())
    return _ACTOR_STATE


@client_app.train()
def train(msg: Message, context: Context) -> Message:
    cfg = msg.content["config"]
    x, y, indices, model = _actor_state(cfg)
    pid = int(context.node_config["partition-id"])
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    opt = torch.optim.SGD(model.parameters(), lr=workload.LR)
    rng = np.random.default_rng([int(cfg["seed"]), int(cfg["server-round"]), pid])
    need = workload.LOCAL_STEPS * workload.BATCH
    order = np.resize(rng.permutation(indices[pid]), need)  # wraps only if a client has < need
    for step in range(workload.LOCAL_STEPS):
        batch = torch.from_numpy(order[step * workload.BATCH:(step + 1) * workload.BATCH])
        opt.zero_grad()
        F.cross_entropy(model(x[batch]), y[batch]).backward()
        opt.step()
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()),
                          "metrics": MetricRecord({"num-examples": len(indices[pid])})})
    return Message(content=content, reply_to=msg)


def make_server_app(args, test_x, test_y) -> ServerApp:
    app = ServerApp()
    k = workload.WORKLOADS[args.workload]

    def evaluate_fn(server_round: int, arrays: ArrayRecord) -> MetricRecord:
        model = workload.torch_mlp()
        model.load_state_dict(arrays.to_torch_state_dict())
        acc, loss = workload.evaluate(model, test_x, test_y)
        if server_round > 0:  # round 0 = initial model, part of setup
            RESULTS["round_end_s"].append(time.perf_counter() - T0)
            RESULTS["accuracy"].append(acc)
            RESULTS["loss"].append(loss)
        return MetricRecord({"accuracy": acc, "loss": loss})

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        random.seed(args.seed)  # FedAvg samples nodes with the `random` module
        torch.manual_seed(args.seed)
        initial = ArrayRecord(workload.torch_mlp().state_dict())
        strategy = FedAvg(fraction_train=k / workload.CLIENTS, min_train_nodes=k,
                          fraction_evaluate=0.0, min_available_nodes=workload.CLIENTS)
        train_config = ConfigRecord({"data": str(args.data.resolve()), "seed": args.seed,
                                     "client-threads": args.client_threads})
        strategy.start(grid=grid, initial_arrays=initial, num_rounds=args.rounds,
                       train_config=train_config, evaluate_fn=evaluate_fn)

    return app


def main() -> None:
    parser = workload.arguments(__doc__)
    parser.add_argument("--option", choices=sorted(OPTIONS), default=DEFAULT_OPTION)
    args = parser.parse_args()

    cpus_per_client, args.client_threads = OPTIONS[args.option](args.threads)
    torch.set_num_threads(args.threads)  # server-side evaluation (clients idle meanwhile)
    data = workload.load(args.data)
    test_x, test_y = torch.from_numpy(data.test_x), torch.from_numpy(data.test_y)
    del data

    logging.getLogger("flwr").setLevel(logging.WARNING)
    backend_config = {
        "client_resources": {"num_cpus": cpus_per_client, "num_gpus": 0.0},
        "init_args": {"num_cpus": args.threads, "include_dashboard": False,
                      "logging_level": logging.ERROR, "log_to_driver": False},
    }
    app_module = importlib.import_module(Path(__file__).stem)  # importable in the actors too
    run_simulation(server_app=make_server_app(args, test_x, test_y),
                   client_app=app_module.client_app,
                   num_supernodes=workload.CLIENTS, backend_name="ray",
                   backend_config=backend_config)
    if len(RESULTS["round_end_s"]) != args.rounds:
        sys.exit(f"flower: {len(RESULTS['round_end_s'])} evaluated rounds, not {args.rounds}")

    n_actors = int(args.threads / cpus_per_client)
    config = (f"ServerApp/ClientApp via flwr.simulation.run_simulation, Ray backend: "
              f"{n_actors} actor(s) x num_cpus={cpus_per_client:g}, torch threads "
              f"{args.client_threads}/client, {args.threads} for server eval; ClientApp pickled "
              f"by reference, data loaded once per actor (option '{args.option}')")
    print(json.dumps({"tool": "flower", "version": flwr.__version__, "config": config,
                      **RESULTS}), flush=True)


if __name__ == "__main__":
    main()
