"""Links on the world graph and the transfers that cross them (see docs/models/network.md)."""

from netfl.network.link import Channel, Link
from netfl.network.transfer import Network

__all__ = ["Channel", "Link", "Network"]
