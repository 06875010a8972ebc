"""rounds.png: each round's critical path as a stacked bar, and each part's distribution over
the rounds (netfl.results.rounds), in the categories' colours (netfl.results.palette); on a
road under a constellation also the critical path's transfers by hop."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from netfl.results.palette import colour
from netfl.results.rounds import PARTS, SEGMENTS

# the palette's name of each part
PART_CATEGORY = {"download": "download", "compute": "training", "upload": "upload",
                 "aggregation": "aggregation", "group_operation": "group operations",
                 "handover": "hand-over", "waiting": "waiting"}
HOP_LABELS = {"radio": "vehicle radio", "terminal": "RSU - satellite", "isl": "ISLs",
              "feeder": "satellite - gateway", "fibre": "fibre"}
MAX_BARS = 400  # more rounds than this: the bars of an even sample, said in the title


def plot_rounds(rounds: pd.DataFrame, path: Path, title: str) -> Path | None:
    """Draw ``rounds`` (rounds.csv's table) into ``path``; None (nothing drawn) without
    rounds."""
    if rounds is None or rounds.empty:
        return None
    from matplotlib.figure import Figure

    shown = rounds
    if len(rounds) > MAX_BARS:
        step = -(-len(rounds) // MAX_BARS)
        shown = rounds.iloc[::step]
    parts = [p for p in PARTS if (rounds[f"{p}_s"] > 0).any()]
    hops = [h for h in SEGMENTS if f"{h}_s" in rounds and (rounds[f"{h}_s"] > 0).any()]
    fig = Figure(figsize=(14 if hops else 11, 4.2), layout="constrained")
    if hops:  # a road under a constellation: the critical path's transfers by hop
        bars, spread, by_hop = fig.subplots(1, 3, width_ratios=[3, 1, 1])
        by_hop.boxplot([rounds[f"{h}_s"] for h in hops], orientation="horizontal",
                       showfliers=True, tick_labels=[HOP_LABELS[h] for h in hops])
        by_hop.set(xlabel="seconds per round", title="its transfers by hop")
    else:
        bars, spread = fig.subplots(1, 2, width_ratios=[3, 1])
    bottom = pd.Series(0.0, index=shown.index)
    for part in parts:
        values = shown[f"{part}_s"]
        bars.bar(shown["round"], values, bottom=bottom, width=1.0,
                 color=colour(PART_CATEGORY[part]), label=part.replace("_", " "), linewidth=0)
        bottom += values
    sample = "" if shown is rounds else f" ({len(shown)} of {len(rounds)} rounds shown)"
    bars.set(xlabel="round", ylabel="simulated seconds",
             title=f"{title}: each round's critical path{sample}")
    bars.legend(fontsize=8, ncols=2)
    data = [rounds[f"{p}_s"] for p in parts]
    box = spread.boxplot(data, orientation="horizontal", patch_artist=True, showfliers=True,
                         tick_labels=[p.replace("_", " ") for p in parts])
    for patch, part in zip(box["boxes"], parts, strict=True):
        patch.set_facecolor(colour(PART_CATEGORY[part]))
    spread.set(xlabel="seconds per round", title="the parts over the rounds")
    fig.savefig(path, dpi=110)
    return path
