"""Group-FEL's sections: grouping, group operations, and Group-FEL with its baselines (the
same loop with other settings; netfl/algorithms/group_fel.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

from netfl.scenario.algorithm_base import AlgorithmSpec
from netfl.scenario.kinds import builtin_algorithm
from netfl.scenario.types import Duration, NonNegativeSize, Section


class CovGroupingSpec(Section):
    """CoV-Grouping (Group-FEL's Algorithm 2): groups of at least ``min_group_size`` (MinGS)
    clients, grown greedily until their CoV (eq. 31) is at most ``max_cov`` (MaxCoV)."""

    kind: Literal["cov"]
    min_group_size: PositiveInt = 5
    max_cov: PositiveFloat = 0.5


class RandomGroupingSpec(Section):
    """RG: clients shuffled and cut into groups of about ``group_size`` (at least that many)."""

    kind: Literal["random"]
    group_size: PositiveInt = 5


class CdgGroupingSpec(Section):
    """CDG (OUEA): k-means on label distributions into ``group_size`` clusters, each dealt
    round-robin over n // ``group_size`` groups. Like OUEA, it sets the number of groups but
    not their sizes, which spread around ``group_size``."""

    kind: Literal["cdg"]
    group_size: PositiveInt = 5


class KldGroupingSpec(Section):
    """KLDG (SHARE): greedy assignment that keeps each group's label distribution closest (in
    KL divergence) to its edge server's, over n // ``group_size`` groups. Like SHARE, it sets
    the number of groups but not their sizes (about ``group_size`` on average, uneven)."""

    kind: Literal["kld"]
    group_size: PositiveInt = 5


class QcidGroupingSpec(Section):
    """QCID (Fed-CBS) per edge server: every round each edge server samples new groups of
    ``group_size``, client by client with probability proportional to 1 / QCID^beta. It forms
    and samples at once, so it replaces both grouping and sampling."""

    kind: Literal["qcid"]
    group_size: PositiveInt = 5
    beta: PositiveFloat = 2.0


Sampling = Literal["uniform", "rcov", "srcov", "esrcov"]  # w() of eq. (38)
Grouping = Annotated[CovGroupingSpec | RandomGroupingSpec | CdgGroupingSpec | KldGroupingSpec
                     | QcidGroupingSpec, Field(discriminator="kind")]

# O_g(|g|) = quadratic_s |g|^2 + linear_s |g| + constant_s per client and group round, and the
# bytes each client exchanges with each peer (via its edge server) per group round. Fig. 9 of
# the Group-FEL paper is not legible in the text we have; these are our assumptions, argued in
# docs/models/group-fel.md.
GROUP_OPERATION_DEFAULTS: dict[str, dict[str, float]] = {
    "none": {"quadratic_s": 0.0, "linear_s": 0.0, "constant_s": 0.0, "peer_bytes": 0.0},
    "secure-aggregation": {"quadratic_s": 0.002, "linear_s": 0.01, "constant_s": 0.02,
                           "peer_bytes": 256.0},
    "scaffold-secagg": {"quadratic_s": 0.004, "linear_s": 0.02, "constant_s": 0.04,
                        "peer_bytes": 512.0},
    "backdoor-detection": {"quadratic_s": 0.001, "linear_s": 0.005, "constant_s": 0.01,
                           "peer_bytes": 0.0},
}


class GroupOperationSpec(Section):
    """The group operation every client of a sampled group performs in each group round, and
    its cost O_g(|g|) (Group-FEL's eq. 5): ``quadratic_s`` |g|^2 + ``linear_s`` |g| +
    ``constant_s`` seconds on the client's device. ``peer_bytes``: what a client sends to, and
    receives from, each other member per group round through the edge server (secure
    aggregation's pairwise key exchange and secret shares), so a group's bytes grow with
    |g|^2. Unset coefficients take the defaults of ``kind``."""

    kind: Literal["none", "secure-aggregation", "scaffold-secagg",
                  "backdoor-detection"] = "secure-aggregation"
    quadratic_s: Duration | None = None
    linear_s: Duration | None = None
    constant_s: Duration | None = None
    peer_bytes: NonNegativeSize | None = None

    @model_validator(mode="after")
    def _defaults(self) -> GroupOperationSpec:
        for name, value in GROUP_OPERATION_DEFAULTS[self.kind].items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        return self


@builtin_algorithm
class GroupFelSpec(AlgorithmSpec):
    """Group-FEL (Algorithm 1 of "Group Formation and Sampling in Group-based HFL"): every edge
    server forms groups of its clients (``grouping``), the cloud computes sampling
    probabilities (``sampling``: uniform, RCoV, SRCoV or ESRCoV); each global round it samples
    ``groups_per_round`` (S) groups; each runs ``group_rounds`` (K) group rounds of
    ``local_steps`` (E) local rounds (``local_unit``: an epoch over the client's data, as the
    cost model's E H_i(n_i) reads, or one SGD step), aggregated at its edge server by data
    size; the cloud aggregates the groups (``aggregation``: Line 15's biased weights, eq. 4's
    unbiased or eq. 39's normalized ones). Groups are formed anew every ``regroup_interval``
    rounds (never when null). ``prox_mu`` > 0 adds FedProx's proximal term;
    ``control_variates`` runs SCAFFOLD (a control variate travels with every model: twice the
    bytes). Costs of eq. (5) are charged with ``group_operation``. ``cov_definition``: the
    group CoV of CoV-Grouping, of eq. (38) and of the reported avg_cov: ``std-mean`` (std/mean
    of the group's label counts, which reproduces the paper's Table 1) or ``eq31`` (eq. 31's
    last member read literally, the former divided by sqrt(m)).
    """

    kind: Literal["group-fel"]
    IMPLEMENTATION = "netfl.algorithms.group_fel:GroupFEL"
    WORLDS = ("edge",)
    USES_CLOUD = True
    CHARGES_COST = True
    rounds: PositiveInt = 200
    local_steps: PositiveInt = 2
    local_unit: Literal["epoch", "step"] = "epoch"
    group_rounds: PositiveInt = 5
    groups_per_round: PositiveInt = 12
    grouping: Grouping = CovGroupingSpec(kind="cov")
    sampling: Sampling = "esrcov"
    aggregation: Literal["biased", "unbiased", "normalized"] = "biased"
    regroup_interval: PositiveInt | None = None
    group_operation: GroupOperationSpec = GroupOperationSpec()
    prox_mu: NonNegativeFloat = 0.0
    control_variates: bool = False
    cov_definition: Literal["std-mean", "eq31"] = "std-mean"

    @model_validator(mode="after")
    def _qcid_has_no_p(self) -> GroupFelSpec:
        if self.grouping.kind == "qcid" and (self.sampling != "uniform"
                                             or self.aggregation != "biased"):
            raise ValueError("grouping qcid samples its own groups every round: it takes "
                             "sampling: uniform and aggregation: biased (there is no p_g)")
        return self


@builtin_algorithm
class GroupFedAvgSpec(GroupFelSpec):
    """The paper's hierarchical FedAvg baseline: random grouping, uniform sampling."""

    kind: Literal["group-fedavg"]
    grouping: Grouping = RandomGroupingSpec(kind="random")
    sampling: Sampling = "uniform"


@builtin_algorithm
class GroupFedProxSpec(GroupFedAvgSpec):
    """FedProx ("Federated Optimization in Heterogeneous Networks", MLSys 2020) in the
    hierarchical version: random grouping, uniform sampling,
    proximal term ``prox_mu`` (its extra vector work per SGD step is charged to the clock and
    to eq. 5 as cost ``solver``)."""

    kind: Literal["group-fedprox"]
    prox_mu: PositiveFloat = 0.01


@builtin_algorithm
class GroupScaffoldSpec(GroupFedAvgSpec):
    """SCAFFOLD ("SCAFFOLD: Stochastic Controlled Averaging for Federated Learning", ICML 2020)
    in the hierarchical version: random grouping, uniform
    sampling, control variates (twice the bytes), secured by SCAFFOLD + SecAgg."""

    kind: Literal["group-scaffold"]
    control_variates: Literal[True] = True
    group_operation: GroupOperationSpec = GroupOperationSpec(kind="scaffold-secagg")


@builtin_algorithm
class OueaSpec(GroupFedAvgSpec):
    """OUEA ("Optimal User-Edge Assignment in Hierarchical Federated Learning Based on
    Statistical Properties and Network Topology Constraints", IEEE Transactions on Network
    Science and Engineering 2022): CDG grouping, uniform sampling."""

    kind: Literal["ouea"]
    grouping: Grouping = CdgGroupingSpec(kind="cdg")


@builtin_algorithm
class ShareSpec(GroupFedAvgSpec):
    """SHARE ("SHARE: Shaping Data Distribution at Edge for Communication-Efficient Hierarchical
    Federated Learning", IEEE ICDCS 2021): KLD-based grouping, uniform sampling."""

    kind: Literal["share"]
    grouping: Grouping = KldGroupingSpec(kind="kld")


@builtin_algorithm
class FedClarSpec(GroupFedAvgSpec):
    """FedCLAR ("FedCLAR: Federated Clustering for Personalized Sensor-Based Human Activity
    Recognition", IEEE PerCom 2022) in the hierarchical version: hierarchical FedAvg with
    random groups until ``clustering_round``; then every group trains once, the cloud clusters
    the groups by the cosine similarity of their updates into ``clusters`` clusters
    (agglomerative, average linkage), and each cluster trains a model of its own from then on.
    The reported accuracy is that of the cluster models on the test set, weighted by their
    clusters' data."""

    kind: Literal["fedclar"]
    IMPLEMENTATION = "netfl.algorithms.fedclar:FedCLAR"
    clustering_round: PositiveInt = 20
    clusters: int = Field(3, ge=2)
    control_variates: Literal[False] = False

    @model_validator(mode="after")
    def _fixed_groups(self) -> FedClarSpec:
        if self.regroup_interval is not None:
            raise ValueError("fedclar clusters fixed groups: regroup_interval must be null")
        if self.grouping.kind == "qcid":
            raise ValueError("fedclar clusters fixed groups: grouping qcid samples new groups "
                             "every round; use random, cdg, kld or cov")
        return self

