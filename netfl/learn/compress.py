"""Compression of uploads: QSGD (Alistarh et al. 2017), int8 weights, and the bits each
payload takes.

QSGD with s levels quantizes each bucket v (``bucket_size`` consecutive coordinates; the whole
vector when None) as

    Q_s(v)_i = ||v||_2 * sign(v_i) * xi_i / s,
    xi_i = l + 1 with probability |v_i| s / ||v|| - l, else l,   l = floor(|v_i| s / ||v||)

which is unbiased: E[Q_s(v)] = v. Encoding (chosen here; the paper's Elias coding is
value-dependent): per bucket one float32 norm, per coordinate one sign bit and ceil(log2(s + 1))
bits for xi. So a payload's size is known before any value is sent:

    bits = 32 * buckets + d * (1 + ceil(log2(s + 1)))

The simulation only needs the dequantized vector (what the receiver reconstructs) and the bit
count; the bit string itself is never built.
"""

from __future__ import annotations

import collections
import math
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

FLOAT_BITS = 32
_DRAW_THREAD: ThreadPoolExecutor | None = None  # one per process, made at the first draw-ahead
# Draws made ahead take at most this many bytes (the 199k-parameter MLP's 0.8 MB blocks: 40 calls
# ahead; a FedAvg + QSGD round of 100 uploads spent 14.4 s of 200 rounds in the quantization
# with 1 call ahead, 12.0 s with 8, 10.1 s with 100, the helper thread drawing while training
# and the event loop run)
DRAW_AHEAD_BYTES = 32 << 20


def _is_tensor(vector) -> bool:
    """Whether ``vector`` is a torch tensor, without importing torch (a run with the fake
    model never loads it: 1 s and 0.45 GB)."""
    torch_module = sys.modules.get("torch")
    return torch_module is not None and isinstance(vector, torch_module.Tensor)


class NoCompression:
    """Float32 on the wire, values unchanged."""

    name = "none"
    applies_to = "update"

    def payload_bytes(self, num_params: int) -> float:
        return num_params * FLOAT_BITS / 8

    def compress(self, vector: torch.Tensor) -> torch.Tensor:
        return vector


class DrawAhead:
    """Uniform [0, 1) draws of one torch generator, in the generator's own order, with the
    next calls' draws made ahead on a helper thread while the caller works.

    ``uniform(shape, dtype)`` returns exactly what ``torch.rand(shape, generator=generator,
    dtype=dtype)`` would at that point of the stream. After each call the helper thread draws
    the blocks of further calls of the same shape and dtype (``ahead_bytes`` of them, at least
    one call's), each with the generator's state before it (torch's CPU generator is serial
    and releases the GIL: 0.57 ms of a 0.95 ms QSGD quantization of the 199k-parameter MLP,
    here); a call of another shape or dtype waits for them, rewinds the generator to the state
    before the first unused block and draws afresh. So the values never depend on timing or on
    whether the thread ran, and the generator is used by one thread at a time (the helper's
    blocks run in order; the caller touches the generator only once they are done)."""

    def __init__(self, generator, ahead_bytes: int = DRAW_AHEAD_BYTES):
        self._generator, self._ahead_bytes = generator, ahead_bytes
        self._ahead: collections.deque = collections.deque()  # ((shape, dtype), future)

    def _draw(self, shape, dtype):
        import torch

        return self._generator.get_state(), torch.rand(shape, generator=self._generator,
                                                       dtype=dtype)

    def uniform(self, shape, dtype):
        global _DRAW_THREAD
        key, draws = (tuple(shape), dtype), None
        if self._ahead:
            ahead_key, future = self._ahead.popleft()
            state, drawn = future.result()
            if ahead_key == key:
                draws = drawn
            else:
                for _, later in self._ahead:
                    later.result()
                self._ahead.clear()
                self._generator.set_state(state)
        if draws is None:
            draws = self._draw(*key)[1]
        if _DRAW_THREAD is None:
            _DRAW_THREAD = ThreadPoolExecutor(1, thread_name_prefix="netfl-draws")
        depth = max(1, self._ahead_bytes // max(draws.numel() * draws.element_size(), 1))
        while len(self._ahead) < depth:
            self._ahead.append((key, _DRAW_THREAD.submit(self._draw, *key)))
        return draws


class QSGD:
    """QSGD with ``levels`` (s) and buckets of ``bucket_size`` coordinates; draws from its own
    torch generator (seeded by the simulation), in call order, each call's draws made ahead
    while the previous call's caller works (:class:`DrawAhead`: the same values)."""

    name = "qsgd"
    applies_to = "update"  # senders quantize their update against the model they received

    def __init__(self, levels: int, bucket_size: int | None, seed: int):
        if levels < 1:
            raise ValueError("QSGD needs at least one level")
        self.levels, self.bucket_size, self._seed = levels, bucket_size, seed
        self._draws = None  # made at the first tensor: the same draws, torch loaded late

    def payload_bytes(self, num_params: int) -> float:
        return qsgd_bits(num_params, self.levels, self.bucket_size) / 8

    def compress(self, vector):
        """The receiver's reconstruction of ``vector``. The fake trainer's one-number "model" is
        passed through unchanged (its declared size is still what goes on the wire)."""
        if not _is_tensor(vector):
            return vector
        import torch

        from netfl.learn.parallel import single_threaded_torch

        if self._draws is None:
            self._draws = DrawAhead(torch.Generator().manual_seed(self._seed))
        # one core for the arithmetic while the other draws the next call's uniforms (torch's
        # two threads on it as well: 0.92 ms a call against 0.69 ms, the 199k-parameter MLP)
        with single_threaded_torch():
            return qsgd_quantize(vector, self.levels, self.bucket_size,
                                 uniform=self._draws.uniform)


def qsgd_bits(dimension: int, levels: int, bucket_size: int | None) -> int:
    """Bits of one QSGD-encoded vector of ``dimension`` coordinates (see the module docstring)."""
    buckets = 1 if bucket_size is None else math.ceil(dimension / bucket_size)
    return FLOAT_BITS * buckets + dimension * (1 + math.ceil(math.log2(levels + 1)))


def qsgd_quantize(vector: torch.Tensor, levels: int, bucket_size: int | None,
                  generator: torch.Generator | None = None, uniform=None) -> torch.Tensor:
    """The dequantized Q_s(vector): unbiased, with at most s + 1 magnitudes per bucket. The
    uniform draws come from ``uniform(shape, dtype)`` where given (a :class:`DrawAhead`'s),
    else from ``torch.rand`` with ``generator``."""
    import torch

    flat = vector.reshape(-1)
    size = flat.numel() if bucket_size is None else bucket_size
    padded = torch.nn.functional.pad(flat, (0, (-flat.numel()) % size))
    buckets = padded.view(-1, size)
    norms = buckets.norm(dim=1, keepdim=True)
    # In place where a temporary is not needed again (1.6x faster on a 200k-parameter MLP,
    # the cost of FedAvg + QSGD's 400,000 uploads); the same operations in the same order, so
    # the same bits as the plain expressions of the docstring.
    scaled = buckets.abs().div_(norms.clamp_min(torch.finfo(flat.dtype).tiny)).mul_(levels)
    lower = scaled.floor()
    draws = (uniform(scaled.shape, scaled.dtype) if uniform is not None
             else torch.rand(scaled.shape, generator=generator, dtype=scaled.dtype))
    draws = draws.to(scaled.device)
    xi = lower.add_(draws.lt_(scaled.sub_(lower)))  # l + 1 with probability |v_i| s / ||v|| - l
    quantized = buckets.sign().mul_(norms).mul_(xi).div_(levels)
    return quantized.reshape(-1)[: flat.numel()].view_as(vector)


class Int8:
    """Weights as int8 with one float32 scale per bucket (max |v| / 127), rounded to nearest:
    what the HFL-PWP paper does to Hier-Local-QSGD's models ("converting the weights from fp32
    into int8"). Applied to the model itself, not to an update."""

    name = "int8"
    applies_to = "model"

    def __init__(self, bucket_size: int | None):
        self.bucket_size = bucket_size

    def payload_bytes(self, num_params: int) -> float:
        buckets = 1 if self.bucket_size is None else math.ceil(num_params / self.bucket_size)
        return (FLOAT_BITS * buckets + 8 * num_params) / 8

    def compress(self, vector):
        if not _is_tensor(vector):
            return vector
        return int8_quantize(vector, self.bucket_size)


def int8_quantize(vector: torch.Tensor, bucket_size: int | None) -> torch.Tensor:
    """The dequantized int8 version of ``vector``: per bucket, round(v / s) * s, s = max|v|/127."""
    import torch

    flat = vector.reshape(-1)
    size = flat.numel() if bucket_size is None else bucket_size
    buckets = torch.nn.functional.pad(flat, (0, (-flat.numel()) % size)).view(-1, size)
    scale = buckets.abs().amax(dim=1, keepdim=True) / 127
    safe = scale.clamp_min(torch.finfo(flat.dtype).tiny)
    quantized = (buckets / safe).round().clamp(-127, 127) * scale
    return quantized.reshape(-1)[: flat.numel()].view_as(vector)


def make_compressor(spec, seed: int):
    """The compressor of a scenario ``compression`` block (None or kind none: no compression)."""
    if spec is None or spec.kind == "none":
        return NoCompression()
    if spec.kind == "qsgd":
        return QSGD(spec.levels, spec.bucket_size, seed)
    if spec.kind == "int8":
        return Int8(spec.bucket_size)
    raise ValueError(f"unknown compression {spec.kind!r}")
