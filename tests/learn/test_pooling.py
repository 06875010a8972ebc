"""MaxPool2x2 against nn.MaxPool2d(2): the same values at evaluation (its own maxima) and the
very same gradients in training, also through a whole CNN's training and under vmap."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from netfl.learn.architectures import chfl_cnn, lenet, pwp_cnn
from netfl.learn.pooling import MaxPool2x2, window_maxima


def _tied(shape, seed=0):
    """Values rounded to one decimal, with a constant corner: windows of equal members, as an
    image's background gives."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).round(decimals=1)
    x[..., :4, :4] = 0.5
    return x


@pytest.mark.parametrize("shape", [(32, 10, 24, 24), (5, 3, 7, 9), (2, 20, 8, 8), (1, 1, 3, 3),
                                   (4, 6, 6)])
def test_the_same_values_and_gradients_as_max_pool2d(shape):
    x = _tied(shape)
    assert torch.equal(window_maxima(x), F.max_pool2d(x, 2))
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    g = torch.randn(F.max_pool2d(x, 2).shape, generator=torch.Generator().manual_seed(1))
    out = MaxPool2x2()(ours)
    assert torch.equal(out, F.max_pool2d(theirs, 2))
    (out * g).sum().backward()
    (F.max_pool2d(theirs, 2) * g).sum().backward()
    assert torch.equal(ours.grad, theirs.grad)
    with torch.no_grad():
        assert torch.equal(MaxPool2x2()(x), F.max_pool2d(x, 2))


def _with_torch_pooling(model: nn.Module) -> nn.Module:
    for name, module in model.named_children():
        if isinstance(module, MaxPool2x2):
            setattr(model, name, nn.MaxPool2d(2))
    return model


@pytest.mark.parametrize("build", [chfl_cnn, pwp_cnn, lenet])
def test_a_cnn_trains_to_the_same_bits_as_with_max_pool2d(build):
    torch.manual_seed(3)
    ours = build((1, 28, 28), 10)
    theirs = _with_torch_pooling(build((1, 28, 28), 10))
    theirs.load_state_dict(ours.state_dict())
    x = _tied((16, 1, 28, 28), seed=4)
    x[:, :, :10, :] = 0.0  # a blank band, as around a garment
    y = torch.randint(0, 10, (16,), generator=torch.Generator().manual_seed(5))
    for model in (ours, theirs):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(5):
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)


def test_per_sample_gradients_under_vmap_match_max_pool2d():
    torch.manual_seed(6)
    ours = chfl_cnn((1, 28, 28), 10)
    theirs = _with_torch_pooling(chfl_cnn((1, 28, 28), 10))
    theirs.load_state_dict(ours.state_dict())
    params = {k: v.detach() for k, v in ours.named_parameters()}
    x = _tied((4, 1, 1, 28, 28), seed=7)
    y = torch.randint(0, 10, (4, 1), generator=torch.Generator().manual_seed(8))

    def loss(model):
        return lambda p, xb, yb: F.cross_entropy(functional_call(model, p, (xb,)), yb)

    ours_g = vmap(grad(loss(ours)), in_dims=(None, 0, 0))(params, x, y)
    theirs_g = vmap(grad(loss(theirs)), in_dims=(None, 0, 0))(params, x, y)
    for name in params:
        assert torch.equal(ours_g[name], theirs_g[name]), name
