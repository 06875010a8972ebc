"""What every trainer knows about clients: their data sizes and how mini-batches are drawn.

Torch-free, so the fake trainer shares it without importing torch.
"""

from __future__ import annotations

import numpy as np

from netfl.learn.partition import Partition
from netfl.sim.clock import RandomStreams

BYTES_PER_PARAM = 4  # float32 on the wire


class ClientData:
    """Client sizes and mini-batch drawing.

    Each client draws from its own generator (``training-batches`` stream, keyed by client), so
    its k-th mini-batch does not depend on which other clients trained before it. Generators are
    not thread-safe and their draws are ordered: trainers draw on the calling thread only (the
    torch trainer draws a whole call's batches before its worker threads start).
    """

    def __init__(self, partition: Partition, streams: RandomStreams):
        self.partition = partition
        self.client_sizes = partition.sizes.astype(np.int64)
        self._streams = streams
        self._rngs: dict[int, np.random.Generator] = {}

    def client_rng(self, client: int) -> np.random.Generator:
        """The generator of ``client`` (created on first use)."""
        if client not in self._rngs:
            self._rngs[client] = self._streams.derive_compact("training-batches", client)
        return self._rngs[client]

    def samples_per_step(self, client: int, batch_size: int) -> int:
        """Samples one local step of ``client`` processes (a batch, or all it has)."""
        return int(min(batch_size, self.client_sizes[client]))

    def draw_batch(self, client: int, batch_size: int) -> np.ndarray:
        """Training-set indices of one fresh mini-batch of ``client`` (no repeats in a batch)."""
        own = self.partition.client_indices[client]
        if batch_size >= len(own):
            return own
        return own[self.client_rng(client).choice(len(own), size=batch_size, replace=False)]
