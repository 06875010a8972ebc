"""The ``model`` kinds: netfl's own models (MLP, logistic regression, the papers' CNNs and
ResNets, the fake model of latency-only runs) and plug-in models (netfl.scenario.plugins)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveFloat, PositiveInt

from netfl.scenario.extension_fields import or_extension
from netfl.scenario.model_base import TorchModel
from netfl.scenario.plugins import MODEL_GROUP
from netfl.scenario.types import Probability, Section


class MlpModel(TorchModel):
    """Fully connected network with ReLU: input -> hidden[0] -> ... -> classes. Without
    ``hidden``: the Fed-CHS MLP, 200/200 for 28x28 inputs (or smaller), 256/512 for larger."""

    kind: Literal["mlp"]
    hidden: list[PositiveInt] | None = None


class LogisticModel(TorchModel):
    """Multinomial logistic regression (one linear layer, softmax cross-entropy)."""

    kind: Literal["logistic"]


class ArchitectureModel(TorchModel):
    """A fixed architecture from the papers: lenet (Fed-CHS), chfl-cnn (CHFL Table 2), pwp-cnn
    (HFL-PWP), resnet-small and preact-resnet18 (GroupNorm); see docs/models/architectures.md."""

    kind: Literal["lenet", "chfl-cnn", "pwp-cnn", "resnet-small", "preact-resnet18"]


class FakeModel(Section):
    """No torch: a synthetic learning curve with a declared size and cost, for fast tests and
    latency-only studies. Accuracy rises towards ``max_accuracy`` with local steps."""

    kind: Literal["fake"]
    params: PositiveInt = 100_000
    flops_per_sample: PositiveFloat = Field(1e6, description="forward FLOPs of one sample")
    train_flops_per_sample: PositiveFloat | None = Field(
        None, description="training FLOPs of one sample (forward and backward); default 3x "
                          "flops_per_sample")
    max_accuracy: Probability = 0.9
    learning_rate_gain: PositiveFloat = Field(0.05, description="progress per local step")


BuiltinModel = Annotated[MlpModel | LogisticModel | ArchitectureModel | FakeModel,
                         Field(discriminator="kind")]
# a built-in kind, or a plug-in's (netfl.scenario.plugins: a class with a Spec and build)
Model = or_extension(BuiltinModel, MODEL_GROUP)


# ------------------------------------------------------------------------------ stop, output
