"""The ``data.partition`` kinds: how a training set is split over the clients (see
netfl.learn.partition for the schemes and docs/models/learning.md for their sources)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, model_validator

from netfl.scenario.extension_fields import builtin_kinds, or_extension
from netfl.scenario.plugins import PARTITION_GROUP
from netfl.scenario.types import ExistingFile, Section


class EqualSizes(Section):
    """All the training data, split as evenly as possible."""

    kind: Literal["equal"] = "equal"


class NormalSizes(Section):
    """Sizes ~ round(N(mean, std)) clipped to [min, max] (Group-FEL: 20 to 200 per client)."""

    kind: Literal["normal"]
    mean: PositiveFloat = 110.0
    std: NonNegativeFloat = 45.0
    min: PositiveInt = 20
    max: PositiveInt = 200

    @model_validator(mode="after")
    def _ordered(self) -> NormalSizes:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        return self


ClientSizes = Annotated[EqualSizes | NormalSizes, Field(discriminator="kind")]


class IidPartition(Section):
    """Shuffle, then cut into the client sizes."""

    kind: Literal["iid"] = "iid"
    sizes: ClientSizes = EqualSizes()


class DirichletPartition(Section):
    """Per client, label proportions drawn from Dirichlet(alpha); smaller alpha, more skew."""

    kind: Literal["dirichlet"]
    alpha: PositiveFloat
    sizes: ClientSizes = EqualSizes()


class LabelsPartition(Section):
    """Each client holds exactly ``per_client`` labels (shards)."""

    kind: Literal["labels"]
    per_client: PositiveInt


class EdgeLabelsPartition(Section):
    """Two-level: each edge holds ``per_edge`` labels (CHFL's p_g; HFL-PWP's k classes per group)
    and each of its clients ``per_client`` of them (CHFL's p_c; HFL-PWP's 2 per worker)."""

    kind: Literal["edge-labels"]
    per_edge: PositiveInt
    per_client: PositiveInt

    @model_validator(mode="after")
    def _nested(self) -> EdgeLabelsPartition:
        if self.per_client > self.per_edge:
            raise ValueError(f"per_client ({self.per_client}) cannot exceed per_edge "
                             f"({self.per_edge})")
        return self


class EdgeIidDirichletPartition(Section):
    """Two-level: iid across edges, Dirichlet(alpha) across the clients inside each edge (Fed-CHS's
    partial data heterogeneity, its Fig. 4)."""

    kind: Literal["edge-iid-dirichlet"]
    alpha: PositiveFloat


EdgeLevelPartition = Annotated[IidPartition | DirichletPartition | LabelsPartition,
                               Field(discriminator="kind")]


class PerEdgePartition(Section):
    """Two-level: the data is split iid over edges (in proportion to their client counts), then
    edge i's share over its clients by ``edges[i]`` (e.g. HFL-PWP's Table 5: one group iid, the
    other non-iid)."""

    kind: Literal["per-edge"]
    edges: list[EdgeLevelPartition]


class NaturalPartition(Section):
    """The data set's own split over devices (synthetic: one device per client)."""

    kind: Literal["natural"]


class FilePartition(Section):
    """The partition of another tool or study, read from ``path``: a JSON object mapping each
    client index (0..N-1, as a string) to its list of training-set indices, or a CSV file with
    columns ``client,sample`` (one row per sample). Each client needs at least one sample; no
    sample may go to two clients or appear twice."""

    kind: Literal["file"]
    path: ExistingFile


BuiltinPartition = Annotated[
    IidPartition | DirichletPartition | LabelsPartition | EdgeLabelsPartition
    | EdgeIidDirichletPartition | PerEdgePartition | NaturalPartition | FilePartition,
    Field(discriminator="kind"),
]
BUILTIN_PARTITIONS = builtin_kinds(BuiltinPartition)
# a built-in kind, or a plug-in's (netfl.scenario.plugins: a class with a Spec and split)
Partition = or_extension(BuiltinPartition, PARTITION_GROUP)
