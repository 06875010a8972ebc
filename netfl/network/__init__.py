"""Links on the world graph and the transfers that cross them (see docs/models/network.md).

``build_network`` (``helper.py``) makes a :class:`Network` from the scenario's ``links``.
"""

from netfl.network.helper import build_network
from netfl.network.link import Link
from netfl.network.transfer import Network

__all__ = ["Link", "Network", "build_network"]
