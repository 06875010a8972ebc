"""Algorithm sections: one model per algorithm, chosen by ``kind``.

Fields common to every algorithm live in :class:`AlgorithmSpec`
(netfl.scenario.algorithm_base), so switching ``kind`` with ``--set algorithm.kind=...`` keeps a
scenario valid as long as it sets only common fields. Group-FEL's sections are in
netfl.scenario.group_fel.
"""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

from netfl.scenario.algorithm_base import (
    AlgorithmSpec,
    Compression,
    ConstantLr,
    LrSchedule,
    QsgdSpec,
)
from netfl.scenario.extension_fields import or_extension
from netfl.scenario.kinds import algorithm_kinds, builtin_algorithm, union_of
from netfl.scenario.plugins import ALGORITHM_GROUP
from netfl.scenario.types import Section


@builtin_algorithm
class FedAvgSpec(AlgorithmSpec):
    """FedAvg: the cloud trains with clients over the multi-hop network ("Communication-Efficient
    Learning of Deep Networks from Decentralized Data", AISTATS 2017).

    clients_per_round: clients sampled per round without replacement (all when absent).
    schedule: the rate of round t is eta_k with k = (t - 1) mod ``schedule_period`` (K), for
    all local steps of the round. The Fed-CHS paper's B.1 gives FedAvg "K = 20" with
    "1/(K sqrt(k+1)) in the k-th communication" and one local iteration per round: each round
    is one communication, and k counts them in blocks of K as Fed-CHS's k counts its K
    interactions per round (so both walk the same step sizes, communication by communication).
    """

    kind: Literal["fedavg"]
    IMPLEMENTATION = "netfl.algorithms.fedavg:FedAvg"
    WORLDS = ("edge", "iov", "leo")
    SATELLITE_CLIENTS = True
    USES_CLOUD = True
    clients_per_round: PositiveInt | None = None
    schedule: LrSchedule = ConstantLr()
    schedule_period: PositiveInt = 20

    def check_scenario(self, scenario) -> None:
        super().check_scenario(scenario)
        world = scenario.world
        if (world.kind == "edge" and self.clients_per_round is not None
                and self.clients_per_round > world.clients):
            raise ValueError(f"algorithm.clients_per_round ({self.clients_per_round}) exceeds "
                             f"world.clients ({world.clients})")


@builtin_algorithm
class FedAvgQsgdSpec(FedAvgSpec):
    """FedAvg whose client uploads (model updates) are QSGD-quantized (the Fed-CHS paper's
    baseline "FedAvg + QSGD")."""

    kind: Literal["fedavg-qsgd"]
    IMPLEMENTATION = "netfl.algorithms.fedavg:FedAvg"
    WORLDS = ("edge",)
    SATELLITE_CLIENTS = False
    USES_CLOUD = True
    compression: Compression = QsgdSpec(kind="qsgd")


@builtin_algorithm
class HierFedAvgSpec(AlgorithmSpec):
    """Hierarchical FedAvg (HierFAVG: "Client-Edge-Cloud Hierarchical Federated Learning", IEEE
    ICC 2020): ``local_steps`` local steps per edge round, edge aggregation every edge round,
    cloud aggregation every ``edge_rounds`` edge rounds.

    edges_per_round: S edge servers sampled uniformly without replacement each cloud round (all
        when null), as the CHFL paper samples S edges for every algorithm (its App. B.1).
    clients_per_round: P clients of each sampled edge, sampled anew each edge round (all when
        null).
    schedule: eta_k of edge round k = 0..edge_rounds-1 within each cloud round, with
        K = edge_rounds (the Fed-CHS paper's "1/(K sqrt(k+1)) in the k-th communication" within
        the ESs); constant ``lr`` by default.
    """

    kind: Literal["hier-fedavg"]
    IMPLEMENTATION = "netfl.algorithms.hier_fedavg:HierFedAvg"
    WORLDS = ("edge", "iov", "leo")
    SATELLITE_CLIENTS = True
    USES_CLOUD = True
    edge_rounds: PositiveInt = 2
    edges_per_round: PositiveInt | None = None
    clients_per_round: PositiveInt | None = None
    schedule: LrSchedule = ConstantLr()


@builtin_algorithm
class HierLocalQsgdSpec(HierFedAvgSpec):
    """Hier-Local-QSGD ("Hierarchical Federated Learning with Quantization: Convergence Analysis
    and System Design", IEEE Transactions on Wireless Communications 2023): hierarchical FedAvg
    with QSGD-quantized uploads at both tiers; the Fed-CHS paper's B.1 sets 5 local iterations
    and K = 20 edge aggregations per cloud round, with eta_k = 1/(K sqrt(k+1)) at edge
    aggregation k (``schedule: {kind: inv-sqrt}``)."""

    kind: Literal["hier-local-qsgd"]
    IMPLEMENTATION = "netfl.algorithms.hier_fedavg:HierFedAvg"
    WORLDS = ("edge",)
    SATELLITE_CLIENTS = False
    USES_CLOUD = True
    local_steps: PositiveInt = 5
    edge_rounds: PositiveInt = 20
    compression: Compression = QsgdSpec(kind="qsgd")


class HandOverSpec(Section):
    """What an edge server does when sending the model to the next one fails: try each candidate
    ``attempts`` times; with ``fallback``, go on to the next candidate in the rule's order. When
    every try fails, the model stays where it is for the next round."""

    attempts: PositiveInt = 2
    fallback: bool = True


@builtin_algorithm
class FedChsSpec(AlgorithmSpec):
    """Fed-CHS (Algorithm 1 of "Sequential FL in Hierarchical Architecture"): in round t only edge
    server m(t) trains, with K local iterations of its clients in ``interactions`` (K) / E
    exchanges (E = local_steps: 1 is the paper's gradient version), then hands the model to a
    neighbour: least visited first, then most data.

    rounds: T; interactions: K; schedule: eta_k over k = 0..K-1.
    """

    kind: Literal["fed-chs"]
    IMPLEMENTATION = "netfl.algorithms.fed_chs:FedCHS"
    WORLDS = ("edge", "iov", "leo")
    USES_CLOUD = False
    rounds: PositiveInt = 400
    local_steps: PositiveInt = 1
    interactions: PositiveInt = 20
    schedule: LrSchedule = ConstantLr()
    handover: HandOverSpec = HandOverSpec()

    @model_validator(mode="after")
    def _blocks(self) -> FedChsSpec:
        if self.interactions % self.local_steps:
            raise ValueError(f"interactions (K={self.interactions}) must be a multiple of "
                             f"local_steps (E={self.local_steps})")
        return self

    def check_scenario(self, scenario) -> None:
        super().check_scenario(scenario)
        world = scenario.world
        if world.kind == "edge" and world.topology.kind == "star":
            raise ValueError("fed-chs passes the model between neighbouring edge servers: give "
                             "world.topology a ring, random or file graph (a star has no "
                             "edge-edge links)")
        if world.kind == "leo" and world.isl.kind == "none" and world.ground_stations is None:
            raise ValueError("fed-chs hands the model between satellites: give world.isl "
                             "kind grid, or world.ground_stations to relay through the ground")


@builtin_algorithm
class WrwgdSpec(AlgorithmSpec):
    """Weighted random-walk gradient descent (Ayache and El Rouayheb 2019): the model walks a
    random client graph of degree at most ``max_degree``; each visited client takes
    ``local_steps`` SGD steps scaled by importance weights; the next client is drawn by
    Metropolis-Hastings with stationary distribution proportional to the clients' estimated
    Lipschitz constants (``weighting: lipschitz``) or uniform over nodes (``uniform``).

    rounds: steps of the walk; local_steps: K, SGD steps per visit; schedule: eta_k over the
    visit's k = 0..K-1 (reset at every visit, as Fed-CHS's k at every round).
    schedule_period: where set, every step of visit t runs at eta_k with k = (t - 1) mod
    ``schedule_period`` and K = ``schedule_period``, as FedAvg's rounds do: the Fed-CHS paper's
    B.1 read with one local iteration per visit ("1/(K sqrt(k+1)) in the k-th communication",
    K = 20), where K = local_steps = 1 would give every step the rate 1.
    """

    kind: Literal["wrwgd"]
    IMPLEMENTATION = "netfl.algorithms.wrwgd:WRWGD"
    WORLDS = ("edge",)
    USES_CLOUD = False
    rounds: PositiveInt = 2000
    max_degree: int = Field(3, ge=2)
    extra_edges: NonNegativeInt | None = Field(
        None, description="edges added to the random spanning tree (default: clients / 2)")
    weighting: Literal["lipschitz", "uniform"] = "lipschitz"
    schedule: LrSchedule = ConstantLr()
    schedule_period: PositiveInt | None = None


@builtin_algorithm
class ChflSpec(AlgorithmSpec):
    """Cyclic HFL (Algorithm 1 of "Convergence of Cyclic HFL"): each global round the model
    travels through ``edges_per_round`` (S; all when null) edge servers in a random permutation
    (``order: permutation``) or a fixed ring (``order: ring``: with S < M the ring rotates, round
    t taking the S edges after round t-1's); at each, ``edge_rounds`` (R)
    rounds of ``clients_per_round`` (P; all when null) clients taking ``local_steps`` (K) steps,
    averaged uniformly (``weighting: uniform``, the paper's 1/|N_i|) or by data size."""

    kind: Literal["chfl"]
    IMPLEMENTATION = "netfl.algorithms.chfl:CHFL"
    WORLDS = ("edge", "iov", "leo")
    USES_CLOUD = False
    local_steps: PositiveInt = 2
    edge_rounds: PositiveInt = 2
    edges_per_round: PositiveInt | None = None
    clients_per_round: PositiveInt | None = None
    order: Literal["permutation", "ring"] = "permutation"
    weighting: Literal["uniform", "data"] = "uniform"
    handover: HandOverSpec = HandOverSpec()


@builtin_algorithm
class CflSpec(ChflSpec):
    """Cyclic FL ("On the Convergence of Federated Averaging with Cyclic Client Participation",
    ICML 2023) as CHFL's special case: one edge round per edge (R = 1), groups (edge servers)
    visited in a fixed cyclic order (``order: ring``, Cho et al.'s), or in CHFL's random
    permutation each round (``order: permutation``: the CHFL paper's "special case of CHFL
    with R = 1")."""

    kind: Literal["cfl"]
    IMPLEMENTATION = "netfl.algorithms.chfl:CHFL"
    WORLDS = ("edge", "iov", "leo")
    USES_CLOUD = False
    edge_rounds: Literal[1] = 1
    order: Literal["permutation", "ring"] = "ring"


@builtin_algorithm
class SflSpec(AlgorithmSpec):
    """Sequential FL (Li and Lyu 2024): each round, ``clients_per_round`` clients (all when null)
    in a random order (or a fixed ``ring``, rotating as CHFL's: round t takes the clients after
    round t-1's), each taking ``local_steps`` steps from the model the previous one passed it."""

    kind: Literal["sfl"]
    IMPLEMENTATION = "netfl.algorithms.sfl:SFL"
    WORLDS = ("edge", "iov", "leo")
    USES_CLOUD = False
    local_steps: PositiveInt = 2
    clients_per_round: PositiveInt | None = None
    order: Literal["permutation", "ring"] = "permutation"
    handover: HandOverSpec = HandOverSpec()


@builtin_algorithm
class HflPwpSpec(AlgorithmSpec):
    """HFL with partial worker participation and three-sided learning rates (Algorithm 1 of
    "HFL with Partial Worker Participation"): each master round, every cluster i runs
    omega_i = G / I_i cluster rounds; in each, n_i sampled workers take I_i SGD steps at rate
    ``lr`` (eta) and the cluster moves by eta_c times their mean update; the master moves by
    eta_g times the clusters' updates weighted by m_i / m.

    rounds: T master rounds; master_period: G; local_steps: I (all clusters) or
    cluster_periods: I_i per cluster; clients_per_round: n (all clusters; all workers when
    null) or sample_sizes: n_i per cluster; sampling: strategy 1 (with replacement) or
    strategy 2 (without).
    """

    kind: Literal["hfl-pwp"]
    IMPLEMENTATION = "netfl.algorithms.hfl_pwp:HflPwp"
    WORLDS = ("edge", "iov", "leo")
    USES_CLOUD = True
    local_steps: PositiveInt = 10
    master_period: PositiveInt = 100
    cluster_periods: list[PositiveInt] | None = None
    eta_c: PositiveFloat = 1.0
    eta_g: PositiveFloat = 1.0
    clients_per_round: PositiveInt | None = None
    sample_sizes: list[PositiveInt] | None = None
    sampling: Literal["with-replacement", "without-replacement"] = "without-replacement"

    def check_scenario(self, scenario) -> None:
        super().check_scenario(scenario)
        per_cluster = [name for name in ("cluster_periods", "sample_sizes")
                       if getattr(self, name) is not None]
        if scenario.world.kind in ("iov", "leo") and per_cluster:
            raise ValueError(f"algorithm.{per_cluster[0]} gives each cluster its own value, but "
                             f"on a {scenario.world.kind} world clusters change as workers "
                             f"move; use local_steps and clients_per_round (every cluster)")

    def periods(self, clusters: int) -> list[int]:
        """I_i of each of ``clusters`` clusters."""
        return list(self.cluster_periods) if self.cluster_periods else [self.local_steps] * clusters

    @model_validator(mode="after")
    def _periods_divide_g(self) -> HflPwpSpec:
        for period in self.cluster_periods or [self.local_steps]:
            if self.master_period % period:
                raise ValueError(f"master_period (G={self.master_period}) must be a common "
                                 f"multiple of the cluster periods; {period} does not divide it")
        return self


@builtin_algorithm
class HierMoSpec(HflPwpSpec):
    """HierMo ("Hierarchical Federated Learning with Momentum Acceleration in Multi-Tier
    Networks", arXiv:2210.14560) in the HFL-PWP setting: momentum in all three tiers. Workers
    train with heavy-ball momentum (``momentum``, gamma) from their cluster's averaged worker
    buffer, which travels with the model (every message carries twice the bytes); each edge
    server keeps an edge momentum buffer over its clusters' mean updates (``edge_momentum``,
    gamma_l) and the cloud one over the clusters' updates (``cloud_momentum``, gamma_a):
    m <- gamma * m + Delta, x <- x - eta * m at each tier (eta_c, eta_g: 1 in HierMo). Zero edge
    and cloud momentum is worker momentum alone."""

    kind: Literal["hier-mo"]
    IMPLEMENTATION = "netfl.algorithms.hfl_pwp:HierMo"
    WORLDS = ("edge",)
    USES_CLOUD = True
    momentum: float = Field(0.9, gt=0, lt=1)
    edge_momentum: float = Field(0.5, ge=0, lt=1)
    cloud_momentum: float = Field(0.5, ge=0, lt=1)


@builtin_algorithm
class MllSgdSpec(HflPwpSpec):
    """MLL-SGD ("Multi-Level Local SGD: Distributed SGD for Heterogeneous Hierarchical
    Networks", ICLR 2021): clusters as in HFL-PWP (eta_c = 1), but no master: every
    G local iterations each hub averages its model with its neighbours' on a peer-to-peer hub
    graph, ``complete`` (every hub) or ``ring`` (hubs in index order), with Metropolis weights.
    The model measured is the paper's u = sum_d b_d y_d, hub models weighted by their share of
    the workers (b_d = m_d / m)."""

    kind: Literal["mll-sgd"]
    IMPLEMENTATION = "netfl.algorithms.mll_sgd:MllSgd"
    WORLDS = ("edge",)
    USES_CLOUD = False
    hub_graph: Literal["complete", "ring"] = "complete"

    def check_scenario(self, scenario) -> None:
        super().check_scenario(scenario)
        if self.compression.kind == "qsgd":
            raise ValueError("mll-sgd hubs exchange whole models, which QSGD (an update "
                             "quantizer) does not fit; use compression int8 or none")


# the asynchronous and Group-FEL's kinds register after the ones above (the order netfl list
# shows them in)
import netfl.scenario.async_algorithms  # noqa: E402, F401
import netfl.scenario.group_fel  # noqa: E402, F401
import netfl.scenario.satellite_algorithms  # noqa: E402, F401

BuiltinAlgorithm = union_of("algorithms")
BUILTIN_KINDS = frozenset(algorithm_kinds())

# What a scenario's algorithm section may be: a built-in kind, or an extension's
# (netfl.scenario.plugins): its own Spec instance, serialized as itself.
Algorithm = or_extension(BuiltinAlgorithm, ALGORITHM_GROUP)
