import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from netfl.learn.architectures import (
    ARCHITECTURES,
    chfl_cnn,
    group_norm,
    lenet,
    pwp_cnn,
    resnet_small,
)
from netfl.learn.models import count_params, flops_per_sample, train_flops_per_sample

SHAPES = [(1, 28, 28), (3, 32, 32)]
NAMES = sorted(ARCHITECTURES)


def test_registry_names():
    assert set(ARCHITECTURES) == {"lenet", "chfl-cnn", "pwp-cnn", "resnet-small",
                                  "preact-resnet18"}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", NAMES)
def test_output_shape(name, shape):
    model = ARCHITECTURES[name](shape, 10)
    assert model(torch.randn(2, *shape)).shape == (2, 10)


def test_lenet_param_count_by_hand():
    # MNIST sizes, 28 -> conv5 24 -> pool 12 -> conv5 8 -> pool 4: 256 * 4 * 4 = 4096 features.
    mnist = (1 * 64 * 25 + 64) + (64 * 256 * 25 + 256) + (4096 * 512 + 512) \
        + (512 * 128 + 128) + (128 * 10 + 10)
    assert count_params(lenet((1, 28, 28), 10)) == mnist == 2_576_138
    # CIFAR sizes, 32 -> 28 -> 14 -> 10 -> 5: 64 * 5 * 5 = 1600 features.
    cifar = (3 * 64 * 25 + 64) + (64 * 64 * 25 + 64) + (1600 * 384 + 384) \
        + (384 * 192 + 192) + (192 * 10 + 10)
    assert count_params(lenet((3, 32, 32), 10)) == cifar == 797_962
    # The variant can be forced: CIFAR sizes on one channel (first conv 1*64*25 + 64 weights).
    assert count_params(lenet((1, 32, 32), 10, variant="cifar")) == cifar - 2 * 64 * 25


def test_small_cnn_param_count_by_hand():
    # conv 5x5x10, conv 5x5x20, fc 320x50, fc 50x10 (320 = 20 * 4 * 4 on 28x28).
    mnist = (1 * 10 * 25 + 10) + (10 * 20 * 25 + 20) + (320 * 50 + 50) + (50 * 10 + 10)
    # On 32x32: 32 -> 28 -> 14 -> 10 -> 5, so the first fc takes 20 * 5 * 5 = 500.
    cifar = (3 * 10 * 25 + 10) + (10 * 20 * 25 + 20) + (500 * 50 + 50) + (50 * 10 + 10)
    assert mnist == 21_840 and cifar == 31_340
    for build in (pwp_cnn, chfl_cnn):
        assert count_params(build((1, 28, 28), 10)) == mnist
        assert count_params(build((3, 32, 32), 10)) == cifar
    assert count_params(pwp_cnn((1, 28, 28), 10, dropout=0.5)) == mnist


def test_small_cnn_flops_by_hand():
    # MACs: conv1 10*24*24 outputs x 25, conv2 20*8*8 x 250, fc 320*50 and 50*10; FLOPs = 2 MACs.
    macs = 10 * 24 * 24 * 25 + 20 * 8 * 8 * 250 + 320 * 50 + 50 * 10
    assert flops_per_sample(chfl_cnn((1, 28, 28), 10), (1, 28, 28)) == 2 * macs


def test_small_cnn_training_flops_by_hand():
    # training: forward + weights' gradient (2 + 2 MACs) for conv1, whose input is data; forward +
    # weights' + input gradient (2 + 2 + 2) for the rest. 3x the forward overcharged it by 11%.
    conv1, rest = 10 * 24 * 24 * 25, 20 * 8 * 8 * 250 + 320 * 50 + 50 * 10
    flops = train_flops_per_sample(chfl_cnn((1, 28, 28), 10), (1, 28, 28))
    assert flops == 4 * conv1 + 6 * rest == 2_595_000
    assert 3 * 2 * (conv1 + rest) / flops == pytest.approx(1.111, abs=1e-3)


def test_resnet_depths():
    # ResNet-20 of He et al. has 0.27 M parameters; GroupNorm has as many as BatchNorm.
    assert count_params(resnet_small((3, 32, 32), 10)) == 269_722
    assert count_params(resnet_small((3, 32, 32), 10, depth=8)) < 100_000
    with pytest.raises(ValueError, match="6n\\+2"):
        resnet_small((3, 32, 32), 10, depth=21)


@pytest.mark.parametrize("name", NAMES)
def test_gradients_reach_every_parameter(name):
    torch.manual_seed(0)
    model = ARCHITECTURES[name]((3, 32, 32), 10)
    loss = nn.functional.cross_entropy(model(torch.randn(2, 3, 32, 32)), torch.tensor([1, 7]))
    loss.backward()
    for pname, param in model.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), pname
        assert param.grad.abs().sum() > 0, pname


@pytest.mark.parametrize("name", NAMES)
def test_no_batchnorm_no_buffers_no_inplace(name):
    for shape in SHAPES:
        model = ARCHITECTURES[name](shape, 10)
        assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
        assert list(model.buffers()) == []
        assert not any(getattr(m, "inplace", False) for m in model.modules())
        assert not any(isinstance(m, nn.modules.dropout._DropoutNd) for m in model.modules())


def test_group_norm_counts():
    assert [group_norm(c).num_groups for c in (16, 32, 64, 128, 256, 512)] == [8, 16, 32, 32,
                                                                                32, 32]


def _vmapped_grads(model, shape=(1, 28, 28), randomness="error"):
    """Per-parameter-set gradients of 3 rescaled copies, via vmap(grad(functional_call))."""
    torch.manual_seed(1)
    base = {k: v.detach() for k, v in model.named_parameters()}
    stacked = {k: torch.stack([v * (1 + 0.1 * i) for i in range(3)]) for k, v in base.items()}
    xs, ys = torch.randn(3, 2, *shape), torch.randint(0, 10, (3, 2))

    def loss_fn(params, x, y):
        return nn.functional.cross_entropy(functional_call(model, params, (x,)), y)

    grads = vmap(grad(loss_fn), randomness=randomness)(stacked, xs, ys)
    return loss_fn, stacked, xs, ys, grads


@pytest.mark.parametrize("name", NAMES)
def test_vmap_over_parameter_sets_matches_a_loop(name):
    # The ResNets pool adaptively, so 16x16 checks the same code at a quarter of the CPU time.
    shape = (1, 16, 16) if "resnet" in name else (1, 28, 28)
    model = ARCHITECTURES[name](shape, 10)
    loss_fn, stacked, xs, ys, grads = _vmapped_grads(model, shape)
    for i in range(3):
        one = {k: v[i] for k, v in stacked.items()}
        expected = grad(loss_fn)(one, xs[i], ys[i])
        for k in one:
            assert torch.allclose(grads[k][i], expected[k], rtol=1e-4, atol=1e-5), k


def test_pwp_cnn_dropout_is_opt_in_and_vmaps_with_randomness():
    model = pwp_cnn((1, 28, 28), 10, dropout=0.5)
    assert sum(isinstance(m, nn.modules.dropout._DropoutNd) for m in model.modules()) == 2
    *_, grads = _vmapped_grads(model, randomness="different")
    assert all(torch.isfinite(g).all() for g in grads.values())


@pytest.mark.parametrize("call, match", [
    (lambda: lenet((1, 12, 12), 10), "at least 16"),
    (lambda: chfl_cnn((28, 28), 10), "\\(C, H, W\\)"),
    (lambda: lenet((1, 28, 28), 10, variant="imagenet"), "variant"),
    (lambda: pwp_cnn((1, 28, 28), 10, dropout=1.0), "dropout"),
    (lambda: resnet_small((3, 32, 32), 0), "num_classes"),
])
def test_bad_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()
