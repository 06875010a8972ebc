"""The explicit registry of algorithms: scenario ``algorithm.kind`` -> class. No name guessing."""

from __future__ import annotations

from netfl.algorithms.base import Algorithm
from netfl.algorithms.chfl import CHFL
from netfl.algorithms.fed_chs import FedCHS
from netfl.algorithms.fedavg import FedAvg
from netfl.algorithms.fedclar import FedCLAR
from netfl.algorithms.group_fel import GroupFEL
from netfl.algorithms.hfl_pwp import HflPwp, HierMo
from netfl.algorithms.hier_fedavg import HierFedAvg
from netfl.algorithms.mll_sgd import MllSgd
from netfl.algorithms.sfl import SFL
from netfl.algorithms.wrwgd import WRWGD
from netfl.extensions import load_algorithm

# A kind that differs from another only in its defaults (e.g. fedavg-qsgd: compression on)
# maps to the same class; its spec in netfl.scenario.algorithms carries the difference.
ALGORITHMS: dict[str, type[Algorithm]] = {
    "fedavg": FedAvg,
    "fedavg-qsgd": FedAvg,
    "hier-fedavg": HierFedAvg,
    "hier-local-qsgd": HierFedAvg,
    "fed-chs": FedCHS,
    "wrwgd": WRWGD,
    "chfl": CHFL,
    "cfl": CHFL,
    "sfl": SFL,
    "hfl-pwp": HflPwp,
    "hier-mo": HierMo,
    "mll-sgd": MllSgd,
    "group-fel": GroupFEL,
    "group-fedavg": GroupFEL,
    "group-fedprox": GroupFEL,
    "group-scaffold": GroupFEL,
    "ouea": GroupFEL,
    "share": GroupFEL,
    "fedclar": FedCLAR,
}


def algorithm_class(kind: str) -> type[Algorithm]:
    """The class of ``kind``: netfl's own, or an extension's (an installed entry point or a
    ``module:Class`` reference; netfl.extensions)."""
    if kind in ALGORITHMS:
        return ALGORITHMS[kind]
    return load_algorithm(kind)
