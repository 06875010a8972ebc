"""Which links and shared media held a run back: one row per channel, and the top ones.

Every :class:`~netfl.network.flow.Channel` (one direction of a link, or a medium that several
links share: a shared-access cell, an 802.11p RSU's air, a broadcast) keeps its statistics
online as flows join and leave it (``Channel.statistics``). ``link_rows`` turns those of
every channel that carried a flow into links.csv; ``bottlenecks`` picks the most utilised for
summary.json. Nothing here enters the simulation: the statistics are read at the run's end.

Columns:

* ``channel``: the channel's name ('c3->e0', 'cell e0 up', 'cell e1' for an 802.11p RSU's
  air); ``kind``: 'link' (one direction of one link), 'medium' (shared by several links) or
  'broadcast' (on no link: an RSU's broadcast or multicast); ``link_class``: the class of
  the links that cross it (access, backhaul, core; '' where they differ or none does);
* ``capacity_bps``: its mean capacity while busy (its capacity at the end where never busy);
* ``busy_s``: seconds with at least one flow; ``busy_fraction``: busy_s / the run's duration;
* ``utilisation``: bits carried / (capacity_bps x the run's duration), in [0, 1];
* ``bytes``: what its flows carried (those cut short as far as they got, those still on it
  at the end so far); ``wasted_bytes``: what flows then cancelled or failed by a link going
  down had carried (the part of an upload resumed after leaving coverage is counted here
  too: its flow failed, though the transfer kept what it had sent);
* ``mean_flows``: the time-averaged number of flows on it over its busy time;
  ``peak_flows``: the most at once.

A satellite beam and an LTE carrier share their capacity among their users' channels (each
user's direction is a channel whose capacity the medium sets): each user's direction has its
row, and the beam or the carrier's direction one more (kind 'medium', named 'sat3 beam 0 up',
'cell e1 down'), whose flows are its users', whose capacity at a moment is the sum of its busy
users' and whose bytes are theirs (``netfl.network.flow.Medium``).

``utilisation_over_time`` gives the most utilised channels' utilisation per time bin (each
channel's carried bits per bin over its mean capacity while busy times the bin's length; a
flow's bits spread evenly over its time on the channel), for links.png.
"""

from __future__ import annotations

import math

import pandas as pd

from netfl.network.flow import Medium
from netfl.network.time_bins import FIRST_BIN_S, MAX_BINS

LINK_COLUMNS = ["channel", "kind", "link_class", "capacity_bps", "busy_s", "busy_fraction",
                "utilisation", "bytes", "wasted_bytes", "mean_flows", "peak_flows"]
BOTTLENECK_FIELDS = ("channel", "utilisation", "busy_s", "mean_flows", "peak_flows",
                     "wasted_bytes")
TOP = 3
HEAT_MAP_TOP = 30  # channels in links.png


def link_table(network, duration_s: float) -> pd.DataFrame:
    """One row per channel of ``network`` that carried a flow (``LINK_COLUMNS``), in the order
    of their first flows; the statistics are those from the start to ``network.env.now``,
    rated over ``duration_s`` (the run's simulated duration). Built column by column: a
    million clients' two million channels as arrays, not as dicts."""
    now = network.env.now
    # channel or medium -> [the link-directions crossing it, their class, one class only]
    crossed: dict = {}
    for link in network.links():
        for src, dst in ((link.u, link.v), (link.v, link.u)):
            for channel in link.channels(src, dst):
                for counted in (channel, channel.medium):
                    if counted is not None:
                        entry = crossed.get(counted)
                        if entry is None:
                            crossed[counted] = [1, link.link_class, True]
                        else:
                            entry[0] += 1
                            entry[2] = entry[2] and entry[1] == link.link_class
    columns: dict[str, list] = {name: [] for name in LINK_COLUMNS}
    (names, kinds, link_classes, capacities, busy, fractions, utilisations, carried, wasted,
     mean_flows, peak_flows) = (columns[name] for name in LINK_COLUMNS)
    unused = (0, "", True)
    for channel in network.fabric.channels_used:
        stats = channel.statistics(now)
        directions, link_class, one_class = crossed.get(channel, unused)
        names.append(channel.name)
        kinds.append("medium" if isinstance(channel, Medium) or directions > 1 else
                     "broadcast" if not directions else "link")
        link_classes.append(link_class if directions and one_class else "")
        capacities.append(stats.capacity_bit / stats.busy_s if stats.busy_s > 0
                          else stats.capacity_bps)
        busy.append(stats.busy_s)
        fractions.append(stats.busy_s / duration_s if duration_s > 0 else 0.0)
        utilisations.append(stats.utilisation(duration_s))
        carried.append(stats.carried_bits / 8.0)
        wasted.append(stats.wasted_bits / 8.0)
        mean_flows.append(stats.mean_flows)
        peak_flows.append(stats.peak_flows)
    return pd.DataFrame(columns, columns=LINK_COLUMNS)


def link_rows(network, duration_s: float) -> list[dict]:
    """``link_table`` as a list of row dicts."""
    return link_table(network, duration_s).to_dict("records")


def _ranked(table: pd.DataFrame) -> pd.DataFrame:
    """``table``'s rows by utilisation, then busy time (both falling), then name."""
    return table.sort_values(["utilisation", "busy_s", "channel"],
                             ascending=[False, False, True], kind="mergesort")


def bottlenecks(rows: list[dict] | pd.DataFrame, top: int = TOP) -> list[dict]:
    """The ``top`` rows of ``link_table`` (or of ``link_rows``) by utilisation (ties by busy
    time, then name), each as {channel, utilisation, busy_s, mean_flows, peak_flows,
    wasted_bytes}: for summary.json."""
    table = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows, columns=LINK_COLUMNS)
    # plain floats and ints: a clock fed numpy delays makes numpy scalars, which JSON writes
    # differently
    return [{field: row[field] if field == "channel" else int(row[field])
             if field == "peak_flows" else float(row[field]) for field in BOTTLENECK_FIELDS}
            for row in _ranked(table).head(top).to_dict("records")]


def utilisation_over_time(network, duration_s: float, rows: list[dict] | None = None,
                          top: int = HEAT_MAP_TOP) -> pd.DataFrame:
    """The ``top`` channels of ``rows`` (``link_table(network, duration_s)``, computed when
    None, or its ``link_rows``; its rows follow the fabric's channels one for one) by
    utilisation,
    most utilised first, as rows (index: channel) of their utilisation per time bin (columns:
    each bin's start, s): bits carried in the bin / (the channel's mean capacity while busy x
    the bin's length within ``duration_s``). Bins are those of the channels (a power of two
    times ``FIRST_BIN_S``, at most ``MAX_BINS`` of them over the run), merged to one width."""
    now = network.env.now
    table = link_table(network, duration_s) if rows is None else (
        rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows, columns=LINK_COLUMNS))
    table = table.reset_index(drop=True)
    channels = list(network.fabric.channels_used)  # link_table's order: one row each
    ranked_table = _ranked(table)
    ranked = ranked_table.index[ranked_table["bytes"] > 0].tolist()[:top]
    rows = {i: table.loc[i].to_dict() for i in ranked}
    bins = {i: channels[i].time_bins(now) for i in ranked}
    width = FIRST_BIN_S
    while duration_s >= width * MAX_BINS:
        width *= 2
    width = max([width, *(b.width_s for b in bins.values())])
    count = max(math.ceil(duration_s / width), 1)
    starts = [k * width for k in range(count)]
    lengths = [min(width, duration_s - start) if duration_s > start else width
               for start in starts]
    names, table = [], []
    for i in ranked:
        values = (bins[i].at_width(width) + [0.0] * count)[:count]
        capacity = rows[i]["capacity_bps"]
        names.append(rows[i]["channel"])
        table.append([v / (capacity * length) if capacity > 0 and length > 0
                      and math.isfinite(capacity) else 0.0
                      for v, length in zip(values, lengths, strict=True)])
    return pd.DataFrame(table, index=names, columns=starts, dtype=float)
