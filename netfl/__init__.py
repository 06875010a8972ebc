"""netfl: a discrete-event network co-simulator for hierarchical federated learning.

The Python API is as strong as the CLI::

    import netfl
    scenario = netfl.load_scenario("scenarios/quickstart.yaml", overrides=["seed=3"])
    result = netfl.run(scenario)            # RunResult
    result.summary["time_to_target_s"], result.metrics.tail()

Heavy modules (torch, matplotlib) load only when a run needs them.
"""

from netfl import float_kernels
from netfl._version import __version__
from netfl.errors import NetflError, ScenarioError, TransferFailed
from netfl.scenario import Scenario, load_scenario

float_kernels.choose()  # before anything imports torch: NETFL_FLOAT_KERNELS=portable pins them


def run(scenario, **kwargs):
    """Run a scenario (a :class:`Scenario`, a path or a dict) and return a ``RunResult``.

    Keyword arguments are those of :func:`netfl.runner.run_scenario`.
    """
    from netfl.runner import run_scenario

    return run_scenario(scenario, **kwargs)


__all__ = [
    "NetflError", "RunResult", "Scenario", "ScenarioError", "TransferFailed", "__version__",
    "load_scenario", "run",
]


def __getattr__(name):
    if name == "RunResult":
        from netfl.runner import RunResult

        return RunResult
    raise AttributeError(f"module 'netfl' has no attribute {name!r}")
