"""What every trainer knows about clients: their data sizes and how mini-batches are drawn.

Torch-free, so the fake trainer shares it without importing torch.
"""

from __future__ import annotations

import numpy as np

from netfl.learn.partition import Partition

BYTES_PER_PARAM = 4  # float32 on the wire


class ClientData:
    """Client sizes and mini-batch drawing from ``rng`` (the training stream)."""

    def __init__(self, partition: Partition, rng: np.random.Generator):
        self.partition = partition
        self.client_sizes = partition.sizes.astype(np.int64)
        self._rng = rng

    def samples_per_step(self, client: int, batch_size: int) -> int:
        """Samples one local step of ``client`` processes (a batch, or all it has)."""
        return int(min(batch_size, self.client_sizes[client]))

    def draw_batch(self, client: int, batch_size: int) -> np.ndarray:
        """Training-set indices of one fresh mini-batch of ``client`` (no repeats in a batch)."""
        own = self.partition.client_indices[client]
        if batch_size >= len(own):
            return own
        return own[self._rng.choice(len(own), size=batch_size, replace=False)]
