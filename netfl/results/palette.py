"""One colour per category, in every figure netfl draws (no matplotlib import: plain colours).

A category means the same thing wherever it appears (the time breakdown of a report, a round's
critical path, the timeline's Gantt chart), so a reader who learnt "grey is waiting" in one
figure reads every other one the same way. ``colour(name)`` is the only way a figure picks a
category's colour; a name it does not know gets a colour of its own from a fixed, separate
list (the same name always the same colour, within and across runs).
"""

from __future__ import annotations

import zlib

# matplotlib's tab10/tab20 colours, spelt out so that figures do not depend on the style
GREEN, BLUE, ORANGE, RED, PURPLE = "#2ca02c", "#1f77b4", "#ff7f0e", "#d62728", "#9467bd"
BROWN, PINK, GREY, OLIVE, CYAN = "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"
LIGHT_GREY, LIGHT_RED, LIGHT_GREEN = "#c7c7c7", "#ff9896", "#98df8a"

CATEGORY_COLOURS: dict[str, str] = {
    # computing
    "compute": GREEN,            # training and aggregation together (breakdown, timeline)
    "training": GREEN,
    "aggregation": LIGHT_GREEN,
    "group operations": OLIVE,
    # sending (the time breakdown's tier pairs, the critical path's directions)
    "transfer": BLUE,
    "download": BLUE,
    "upload": ORANGE,
    "client-edge": BLUE,
    "edge-edge": PURPLE,
    "hand-over": PURPLE,          # the model between edge servers: edge-edge's colour
    "edge-cloud": BROWN,
    "client-cloud": CYAN,
    "other transfers": GREY,
    # time lost
    "failed": RED,               # airtime of transfer attempts that then failed
    "cancelled": LIGHT_RED,      # airtime of transfers their sender cancelled
    "waiting": LIGHT_GREY,       # idle: present, neither computing nor sending
    # the aggregators an update went into (asynchronous runs' updates.png): the colour of the
    # link it came over
    "edge tier": BLUE,
    "cloud tier": BROWN,
    # lines drawn over the categories
    "model": "black",            # where the model is (the IoV and LEO world figures)
    "round": GREY,
}

ALIASES = {"failed transfers": "failed", "failed transfer": "failed",
           "cancelled transfers": "cancelled", "handover": "hand-over",
           "hand-overs": "hand-over", "wait": "waiting", "idle": "waiting",
           "train": "training", "aggregate": "aggregation", "group operation": "group operations",
           "model holder": "model"}

_SPARE = ("#aec7e8", "#ffbb78", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5",
          "#393b79", "#637939", "#8c6d31")  # none of them a category's


def colour(category: str) -> str:
    """The colour of ``category`` (case and the aliases above ignored); an unknown name gets
    one of the spare colours, chosen by a checksum of the name (stable across runs)."""
    key = str(category).strip().lower()
    key = ALIASES.get(key, key)
    if key in CATEGORY_COLOURS:
        return CATEGORY_COLOURS[key]
    return _SPARE[zlib.crc32(key.encode()) % len(_SPARE)]
