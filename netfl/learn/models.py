"""Models and their cost: training FLOPs per sample feed the device model's training time.

Two counts per model, both for one sample:

* ``flops_per_sample``: one forward pass, 2 x multiply-accumulates of the Linear and Conv2d layers
  (reported in summary.json);
* ``train_flops_per_sample``: one training step's forward and backward passes, as
  ``torch.utils.flop_counter`` counts them on the model itself (matrix products and convolutions,
  their gradients included). This is what the device model charges (netfl.compute.timing). It is
  below 3x the forward count wherever a layer needs no input gradient: the first layer of every
  model (its input is data), which is most of an MLP's work (the Fed-CHS MLP: 2.21x the forward,
  not 3x; the CHFL CNN: 2.70x).

Activations, biases, pooling, the loss and the optimizer's update are left out of both (elementwise
work, a few percent for these models).
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from netfl.extensions import call_extension
from netfl.scenario.sections import ArchitectureModel, LogisticModel, MlpModel

FEDCHS_MLP_SMALL = [200, 200]  # Fed-CHS, 28x28 inputs
FEDCHS_MLP_LARGE = [256, 512]  # Fed-CHS, CIFAR (32x32x3)


def mlp_hidden(input_shape: tuple[int, ...]) -> list[int]:
    """The Fed-CHS MLP's hidden widths: 200/200 up to 28x28 inputs, 256/512 beyond."""
    return FEDCHS_MLP_SMALL if math.prod(input_shape) <= 28 * 28 else FEDCHS_MLP_LARGE


def build_model(spec, input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """The torch module a scenario's ``model`` section describes."""
    inputs = math.prod(input_shape)
    if isinstance(spec, MlpModel):
        layers: list[nn.Module] = [nn.Flatten()]
        width = inputs
        for hidden in spec.hidden or mlp_hidden(input_shape):
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        return nn.Sequential(*layers)
    if isinstance(spec, LogisticModel):
        return nn.Sequential(nn.Flatten(), nn.Linear(inputs, num_classes))
    if isinstance(spec, ArchitectureModel):
        from netfl.learn.architectures import ARCHITECTURES

        return ARCHITECTURES[spec.kind](tuple(input_shape), num_classes)
    # an extension's (netfl.extensions): its class builds it
    module = call_extension("model", spec.kind, "build", spec, tuple(input_shape), num_classes)
    if not isinstance(module, nn.Module):
        raise ValueError(f"model {spec.kind!r}: build() returned {type(module).__name__}, not "
                         f"a torch.nn.Module")
    return module


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def flops_per_sample(model: nn.Module, input_shape: tuple[int, ...]) -> float:
    """Forward FLOPs for one sample: 2 x MACs of every Linear and Conv2d layer."""
    total = 0.0

    def linear_hook(module: nn.Linear, _inputs, _output):
        nonlocal total
        total += 2.0 * module.in_features * module.out_features

    def conv_hook(module: nn.Conv2d, _inputs, output):
        nonlocal total
        kh, kw = module.kernel_size
        per_output = (module.in_channels // module.groups) * kh * kw
        total += 2.0 * per_output * output[0].numel()

    handles = []
    for module in model.modules():
        if isinstance(module, nn.Linear):
            handles.append(module.register_forward_hook(linear_hook))
        elif isinstance(module, nn.Conv2d):
            handles.append(module.register_forward_hook(conv_hook))
    # batch norm cannot take the probe's batch of one in training mode: evaluate it (netfl's
    # own models have none, and keep their mode, so their random streams are untouched)
    batch_norm = any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
    training = model.training
    try:
        if batch_norm:
            model.eval()
        with torch.no_grad():
            model(torch.zeros(1, *input_shape))
    finally:
        model.train(training)
        for handle in handles:
            handle.remove()
    return total


# two samples: batch norm in training mode cannot take one; every counted operation is linear in
# the batch, so half the count is one sample's
_PROBE_BATCH = 2


def train_flops_per_sample(model: nn.Module, input_shape: tuple[int, ...]) -> float:
    """FLOPs of one sample's training step: forward and backward of a cross-entropy loss, as
    ``torch.utils.flop_counter.FlopCounterMode`` counts them (matrix products and convolutions,
    with only the gradients autograd needs: none for the input of the first layer).

    Counted on a copy in training mode, under a forked random state, so the model's parameters,
    buffers and the run's random streams are untouched. ``model`` must be on the CPU."""
    probe = copy.deepcopy(model).train()
    inputs = torch.zeros(_PROBE_BATCH, *input_shape)
    labels = torch.zeros(_PROBE_BATCH, dtype=torch.long)
    with torch.random.fork_rng(devices=[]), FlopCounterMode(display=False) as counter:
        F.cross_entropy(probe(inputs), labels).backward()
    return counter.get_total_flops() / _PROBE_BATCH
