import math

import pytest
import torch

from netfl.learn.compress import QSGD, NoCompression, qsgd_bits, qsgd_quantize


def test_qsgd_is_unbiased():
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(1000, generator=gen)
    mean = torch.stack([qsgd_quantize(v, 4, 100, gen) for _ in range(4000)]).mean(0)
    # each coordinate's estimate has std <= ||bucket|| / (s sqrt(n)); compare in aggregate
    assert (mean - v).abs().max() < 0.1
    assert (mean - v).norm() / v.norm() < 0.03


def test_qsgd_values_are_on_the_level_grid():
    gen = torch.Generator().manual_seed(1)
    v = torch.randn(300, generator=gen)
    q = qsgd_quantize(v, 8, None, gen)
    levels = q.abs() / v.norm() * 8
    torch.testing.assert_close(levels, levels.round(), atol=1e-5, rtol=0)
    assert set(torch.sign(q[q != 0]).tolist()) <= {-1.0, 1.0}
    assert (torch.sign(q[q != 0]) == torch.sign(v[q != 0])).all()


def test_qsgd_keeps_zero_vectors_and_shape():
    q = qsgd_quantize(torch.zeros(2, 3), 4, 2, torch.Generator().manual_seed(0))
    assert q.shape == (2, 3) and torch.equal(q, torch.zeros(2, 3))


def _plain_qsgd(vector, levels, bucket_size, generator):
    """The module docstring's Q_s, written as plain expressions (the reference for the
    in-place version's bits)."""
    flat = vector.reshape(-1)
    size = flat.numel() if bucket_size is None else bucket_size
    buckets = torch.nn.functional.pad(flat, (0, (-flat.numel()) % size)).view(-1, size)
    norms = buckets.norm(dim=1, keepdim=True)
    scaled = buckets.abs() / norms.clamp_min(torch.finfo(flat.dtype).tiny) * levels
    lower = scaled.floor()
    draws = torch.rand(scaled.shape, generator=generator, dtype=scaled.dtype)
    xi = lower + (draws < scaled - lower).to(scaled.dtype)
    return (norms * buckets.sign() * xi / levels).reshape(-1)[: flat.numel()].view_as(vector)


@pytest.mark.parametrize(("d", "levels", "bucket"), [(1000, 16, 512), (1024, 4, 512),
                                                      (37, 1, None), (5000, 255, 100)])
def test_qsgd_gives_the_bits_of_the_plain_expressions(d, levels, bucket):
    v = torch.randn(d, generator=torch.Generator().manual_seed(d)) * 3
    v[::7] = 0.0
    before = v.clone()
    ours, plain = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    for _ in range(3):  # the generator's stream is consumed alike
        assert torch.equal(qsgd_quantize(v, levels, bucket, ours),
                           _plain_qsgd(v, levels, bucket, plain))
    assert torch.equal(v, before)  # the input is not touched


@pytest.mark.parametrize(("d", "s", "bucket", "bits"), [
    (1000, 16, 512, 32 * 2 + 1000 * (1 + 5)),
    (1000, 1, None, 32 + 1000 * 2),
    (10, 255, 4, 32 * 3 + 10 * (1 + 8)),
])
def test_qsgd_bit_count(d, s, bucket, bits):
    assert qsgd_bits(d, s, bucket) == bits
    assert QSGD(s, bucket, 0).payload_bytes(d) == bits / 8
    assert bits == 32 * (1 if bucket is None else math.ceil(d / bucket)) + d * (
        1 + math.ceil(math.log2(s + 1)))


def test_no_compression_is_float32_and_identity():
    v = torch.randn(5)
    assert NoCompression().payload_bytes(5) == 20 and NoCompression().compress(v) is v


def test_int8_rounds_to_a_per_bucket_grid_and_counts_its_bytes():
    from netfl.learn.compress import Int8, int8_quantize

    v = torch.tensor([1.0, -0.5, 0.25, 127.0, 3.0, -6.0])
    q = int8_quantize(v, 3)
    scale = torch.tensor([1.0, 1.0, 1.0, 127.0, 127.0, 127.0]) / 127
    torch.testing.assert_close(q, (v / scale).round() * scale)
    assert (q - v).abs().max() <= scale.max() / 2 + 1e-6
    assert Int8(512).payload_bytes(1000) == (32 * 2 + 8 * 1000) / 8
    assert Int8(512).applies_to == "model"


def test_a_fake_model_run_never_loads_torch():
    # torch costs a fake (latency-only) run 1 s and 0.45 GB; QSGD's generator is made lazily
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        from netfl.scenario import load_scenario
        from netfl.simulation import Simulation
        spec = {"name": "t", "seed": 1, "world": {"kind": "edge", "clients": 4, "edge_servers": 2},
                "data": {"dataset": "synthetic"}, "model": {"kind": "fake"},
                "algorithm": {"kind": "hier-fedavg", "rounds": 2, "edge_rounds": 1,
                              "compression": {"kind": "qsgd", "levels": 4}},
                "output": {"plots": False}}
        Simulation(load_scenario(spec)).run()
        print("torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("ahead_bytes", [1, 4_000, 1 << 20])
def test_draw_ahead_gives_the_generators_own_stream(ahead_bytes):
    """Blocks drawn ahead on the helper thread, and rewinds where a call's shape or dtype
    differs from the last one's, leave exactly the values of plain sequential torch.rand."""
    from netfl.learn.compress import DrawAhead

    calls = [((300,), torch.float32)] * 3 + [((2, 50), torch.float32), ((2, 50), torch.float64),
                                             ((300,), torch.float32), ((7,), torch.float32)] * 2
    plain = torch.Generator().manual_seed(11)
    ahead = DrawAhead(torch.Generator().manual_seed(11), ahead_bytes=ahead_bytes)
    for shape, dtype in calls:
        expected = torch.rand(shape, generator=plain, dtype=dtype)
        got = ahead.uniform(shape, dtype)
        assert got.dtype == dtype and torch.equal(got, expected)


def test_qsgd_compress_draws_as_the_plain_quantization_does():
    model = torch.randn(1000, generator=torch.Generator().manual_seed(3))
    other = torch.randn(130, generator=torch.Generator().manual_seed(4))
    compressor, plain = QSGD(16, 64, seed=9), torch.Generator().manual_seed(9)
    for vector in [model, model, other, model, other, other]:
        assert torch.equal(compressor.compress(vector), _plain_qsgd(vector, 16, 64, plain))
