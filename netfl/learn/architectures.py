"""The neural networks the source papers train, as plain PyTorch modules.

Each builder is ``name(input_shape, num_classes) -> nn.Module`` with ``input_shape = (C, H, W)``
(channels, height and width in pixels, e.g. ``(1, 28, 28)`` for Fashion-MNIST, ``(3, 32, 32)`` for
CIFAR); the module maps a float batch ``(N, C, H, W)`` to logits ``(N, num_classes)``. Every builder
accepts both of those shapes; a shape too small for the network raises ValueError.

All modules are safe under ``torch.func`` (``functional_call``, ``grad``, ``vmap``): no BatchNorm
(GroupNorm wherever a paper would normalize, so no running statistics and nothing shared across
clients or samples beyond the sample's own features), no in-place activations, no buffers, and by
default no dropout (random ops need ``vmap(..., randomness=...)``).

The choices made where a paper is silent, with the paper's own words, are in each builder's
docstring and in docs/models/architectures.md. ``ARCHITECTURES`` maps scenario names to builders.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from netfl.learn.pooling import MaxPool2x2

GN_MAX_GROUPS = 32


def group_norm(channels: int) -> nn.GroupNorm:
    """GroupNorm with min(32, channels // 2) groups (and at least 1), affine.

    32 is Wu & He's (2018) default and best group count; the cap keeps at least two channels per
    group, since one channel per group is instance norm, which they found clearly worse. So 16, 32
    and 64 channels get groups of 2, and 128 / 256 / 512 channels groups of 4 / 8 / 16.
    """
    return nn.GroupNorm(max(1, min(GN_MAX_GROUPS, channels // 2)), channels)


def _check(input_shape: tuple[int, ...], num_classes: int) -> tuple[int, int, int]:
    if len(input_shape) != 3 or any(int(d) < 1 for d in input_shape):
        raise ValueError(f"input_shape must be (C, H, W) with positive sizes, got {input_shape!r}")
    if num_classes < 1:
        raise ValueError(f"num_classes must be at least 1, got {num_classes}")
    channels, height, width = (int(d) for d in input_shape)
    return channels, height, width


def _two_conv5_pool2(input_shape: tuple[int, ...], name: str) -> tuple[int, int]:
    """Spatial size after [5x5 valid conv, 2x2 max pool] twice; ValueError if nothing is left."""
    _, height, width = input_shape
    h, w = (((d - 4) // 2 - 4) // 2 for d in (height, width))
    if h < 1 or w < 1:
        raise ValueError(f"{name} needs H and W of at least 16 pixels (two 5x5 valid convolutions "
                         f"and two 2x2 poolings), got input_shape {tuple(input_shape)!r}")
    return h, w


# --- LeNet of Fed-CHS (Appendix A) ----------------------------------------------------------

LENET_VARIANTS = {  # variant: (conv1 filters, conv2 filters, fc1 width, fc2 width)
    "mnist": (64, 256, 512, 128),
    "cifar": (64, 64, 384, 192),
}


def lenet(input_shape: tuple[int, ...], num_classes: int, *, variant: str | None = None
          ) -> nn.Module:
    """The LENET of the Fed-CHS paper, Appendix A; its sizes depend on the data set.

    Paper: "we add two sets of concatenated convolution layer and pooling layer between the input
    layer and the fully connected layer in LENET. For these two convolution layers, we utilize 64
    and 256 convolution kernels to train MNIST respectively, each with a size of 5x5. And we
    utilize two 64 convolution kernels having been adopted for MNIST to train CIFAR-10 and
    CIFAR-100 respectively. Additionally, all the pooling layers are set to be 2x2. In case of
    MNIST dataset, there are two fully connected layers with dimensions 512x512 and 128x128,
    respectively. For CIFAR-10 and CIFAR-100 datasets, the two fully connected layers have
    dimensions of 384x384 and 192x192."

    Built: conv 5x5 (k1 filters) - ReLU - maxpool 2x2 - conv 5x5 (k2) - ReLU - maxpool 2x2 -
    flatten - fc w1 - ReLU - fc w2 - ReLU - fc num_classes, with (k1, k2, w1, w2) =
    (64, 256, 512, 128) for ``variant="mnist"`` and (64, 64, 384, 192) for ``"cifar"``.
    ``variant=None`` picks "mnist" for one input channel and "cifar" otherwise (Fashion-MNIST,
    which the paper does not use, gets the MNIST sizes).

    Choices where the paper is silent: the "512x512" and "128x128" fully connected layers are
    read as layers of 512 and 128 units (square matrices cannot be chained), followed by an output
    layer; convolutions are unpadded (stride 1, as in LeCun et al. 1998, the cited LeNet-5);
    pooling is max pooling, stride 2; activations are ReLU (the paper names ReLU only for its MLP);
    no normalization and no dropout (none is mentioned).
    """
    channels, _, _ = _check(input_shape, num_classes)
    if variant is None:
        variant = "mnist" if channels == 1 else "cifar"
    if variant not in LENET_VARIANTS:
        raise ValueError(f"lenet variant must be one of {sorted(LENET_VARIANTS)}, got {variant!r}")
    k1, k2, w1, w2 = LENET_VARIANTS[variant]
    h, w = _two_conv5_pool2(input_shape, "lenet")
    return nn.Sequential(
        nn.Conv2d(channels, k1, 5), nn.ReLU(), MaxPool2x2(),
        nn.Conv2d(k1, k2, 5), nn.ReLU(), MaxPool2x2(),
        nn.Flatten(),
        nn.Linear(k2 * h * w, w1), nn.ReLU(),
        nn.Linear(w1, w2), nn.ReLU(),
        nn.Linear(w2, num_classes),
    )


# --- The small CNN of CHFL (Table 2) and of HFL with partial worker participation -------------

def _small_cnn(input_shape: tuple[int, ...], num_classes: int, name: str, dropout: float
               ) -> nn.Module:
    """conv 5x5x10 - maxpool 2 - ReLU - conv 5x5x20 - maxpool 2 - ReLU - fc 50 - ReLU - fc."""
    channels, _, _ = _check(input_shape, num_classes)
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"{name} dropout must be in [0, 1), got {dropout}")
    h, w = _two_conv5_pool2(input_shape, name)
    conv2_drop = [nn.Dropout2d(dropout)] if dropout > 0 else []
    fc_drop = [nn.Dropout(dropout)] if dropout > 0 else []
    return nn.Sequential(
        nn.Conv2d(channels, 10, 5), MaxPool2x2(), nn.ReLU(),
        nn.Conv2d(10, 20, 5), *conv2_drop, MaxPool2x2(), nn.ReLU(),
        nn.Flatten(),
        nn.Linear(20 * h * w, 50), nn.ReLU(), *fc_drop,
        nn.Linear(50, num_classes),
    )


def chfl_cnn(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """The CNN of the CHFL paper's Table 2 ("CNN Architecture for MNIST").

    Paper, Table 2: "Convolution+ReLU 5x5x10; Max Pooling 2x2; Convolution+ReLU 5x5x20; Max
    Pooling 2x2; Fully Connected+ReLU 320x50; Fully Connected 50x10".

    Built: conv 5x5, 10 filters - maxpool 2x2 - ReLU - conv 5x5, 20 filters - maxpool 2x2 - ReLU -
    flatten - fc 50 - ReLU - fc num_classes. ReLU and max pooling commute, so this is the table's
    conv+ReLU-then-pool order exactly.

    Choices: unpadded stride-1 convolutions and stride-2 pooling, which the table's 320 = 20 x 4 x
    4 inputs to the first fully connected layer imply for 28x28 MNIST; for other inputs that layer
    takes 20 x h x w (500 for 32x32). No dropout (the table lists none).
    """
    return _small_cnn(input_shape, num_classes, "chfl_cnn", 0.0)


def pwp_cnn(input_shape: tuple[int, ...], num_classes: int, *, dropout: float = 0.0
            ) -> nn.Module:
    """The MNIST CNN of "HFL with Partial Worker Participation" (two conv, two fc layers).

    Paper, Sec. 5.2: "for MNIST, we use CNN model composed of two convolutional layers and two
    fully connected layers." The paper gives no sizes; they come from the authors' released code
    (github.com/cardistryj/HFL, models/networks.py, class CNN, commit 40a7013), which is the
    same network as :func:`chfl_cnn` plus dropout: conv 5x5, 10 filters - maxpool 2 - ReLU -
    conv 5x5, 20 filters - Dropout2d(0.5) - maxpool 2 - ReLU - fc 320->50 - ReLU - dropout(0.5) -
    fc 50->classes.

    Built: that network, unpadded convolutions, first fc taking 20 x h x w inputs (320 for 28x28,
    500 for 32x32). Choice: ``dropout`` defaults to 0 (no Dropout modules), because the paper's
    text does not mention dropout, dropout makes ``vmap`` need ``randomness="different"``, and a
    trainer that never calls ``.eval()`` would keep dropping units when it evaluates. Pass
    ``dropout=0.5`` for the authors' code exactly.
    """
    return _small_cnn(input_shape, num_classes, "pwp_cnn", dropout)


# --- ResNets, GroupNorm in place of BatchNorm -------------------------------------------------

class BasicBlock(nn.Module):
    """He et al. (2015) CIFAR basic block: conv3-GN-ReLU-conv3-GN, + shortcut, then ReLU.

    The shortcut is the parameter-free "option A": identity, or where the block halves the
    resolution and widens, stride-2 subsampling with the new channels filled with zeros.
    """

    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.norm1 = group_norm(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.norm2 = group_norm(out_channels)
        self.stride, self.extra = stride, out_channels - in_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        shortcut = x[:, :, ::self.stride, ::self.stride] if self.stride > 1 else x
        if self.extra:
            shortcut = F.pad(shortcut, (0, 0, 0, 0, 0, self.extra))
        return F.relu(out + shortcut)


def resnet_small(input_shape: tuple[int, ...], num_classes: int, *, depth: int = 20
                 ) -> nn.Module:
    """CIFAR ResNet of He et al. (2015, Sec. 4.2), depth 6n+2, GroupNorm for BatchNorm.

    Built: conv 3x3, 16 filters - GN - ReLU; three stages of n basic blocks with 16, 32, 64
    filters, the first block of stages 2 and 3 with stride 2; global average pooling; fc
    num_classes. Default depth 20 (n = 3, about 0.27 M parameters); depth=8 is ResNet-8 and
    depth=32 the ResNet-32 the CHFL paper trains on CIFAR-10. Shortcuts are parameter-free
    (option A, as He et al. use on CIFAR). The input may be of any size of at least 1x1: the
    pooling is adaptive (28x28 ends at 7x7, 32x32 at 8x8).
    """
    channels, _, _ = _check(input_shape, num_classes)
    if depth < 8 or (depth - 2) % 6:
        raise ValueError(f"resnet_small depth must be 6n+2 with n >= 1 (8, 14, 20, 32, ...), "
                         f"got {depth}")
    n = (depth - 2) // 6
    layers: list[nn.Module] = [nn.Conv2d(channels, 16, 3, 1, 1, bias=False), group_norm(16),
                               nn.ReLU()]
    width = 16
    for stage, out in enumerate((16, 32, 64)):
        for block in range(n):
            layers.append(BasicBlock(width, out, 2 if stage > 0 and block == 0 else 1))
            width = out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, num_classes)]
    return nn.Sequential(*layers)


class PreActBlock(nn.Module):
    """He et al. (2016) full pre-activation block: GN-ReLU-conv3-GN-ReLU-conv3, + shortcut.

    Where the block changes shape the shortcut is a 1x1 convolution (stride 2 if it
    downsamples) applied to the pre-activated input, as in He et al.'s projection shortcuts.
    """

    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.norm1 = group_norm(in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.norm2 = group_norm(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.shortcut = None
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Conv2d(in_channels, out_channels, 1, stride, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = F.relu(self.norm1(x))
        shortcut = x if self.shortcut is None else self.shortcut(pre)
        out = self.conv1(pre)
        out = self.conv2(F.relu(self.norm2(out)))
        return out + shortcut


def preact_resnet18(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """PreAct ResNet-18 (He et al. 2016, identity mappings), CIFAR form, GroupNorm for BatchNorm.

    The partial-worker-participation paper trains it on CIFAR-10 ("For CIFAR-10, we use PreAct
    ResNet-18 He et al. [2016]"). Built: conv 3x3, 64 filters, stride 1 (no max pool: the CIFAR
    form, small inputs); four stages of two pre-activation blocks with 64, 128, 256, 512 filters,
    strides 1, 2, 2, 2; final GN - ReLU (He et al.'s extra activation after the last block, since
    pre-activation blocks leave their sum unnormalized); global average pooling; fc num_classes.
    About 11.2 M parameters. Adaptive pooling makes any input of at least 1x1 work (28x28 ends
    at 4x4, 32x32 at 4x4).
    """
    channels, _, _ = _check(input_shape, num_classes)
    layers: list[nn.Module] = [nn.Conv2d(channels, 64, 3, 1, 1, bias=False)]
    width = 64
    for out, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [PreActBlock(width, out, stride), PreActBlock(out, out, 1)]
        width = out
    layers += [group_norm(512), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Linear(512, num_classes)]
    return nn.Sequential(*layers)


ARCHITECTURES: dict[str, Callable[..., nn.Module]] = {
    "lenet": lenet,
    "chfl-cnn": chfl_cnn,
    "pwp-cnn": pwp_cnn,
    "resnet-small": resnet_small,
    "preact-resnet18": preact_resnet18,
}

__all__ = ["ARCHITECTURES", "chfl_cnn", "group_norm", "lenet", "preact_resnet18", "pwp_cnn",
           "resnet_small"]
