"""updates.png for a run that aggregated asynchronously: what went into its models, by tier.

Three panels from updates.csv (netfl.results.updates): the models' versions over simulated
time (one line per aggregator tier: how fast each moved), the staleness of the updates taken
(a bar per staleness value and tier: how old what went in was), and the sources whose updates
went in most often (who dominates the model)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from netfl.results.palette import colour
from netfl.results.updates import updates_by_source

TOP_SOURCES = 10


def plot_updates(table: pd.DataFrame, path: Path, title: str) -> None:
    """Draw updates.png from ``table`` (updates.csv's rows; non-empty)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tiers = sorted(table["tier"].unique())
    colors = {tier: colour(f"{tier} tier") for tier in tiers}
    fig, (versions, stale, sources) = plt.subplots(1, 3, figsize=(15, 4.2))
    for tier in tiers:
        rows = table[table["tier"] == tier]
        versions.step(rows["time_s"], range(1, len(rows) + 1), where="post",
                      color=colors[tier], label=f"{tier} ({len(rows):,} updates)")
    versions.set(xlabel="simulated time (s)", ylabel="updates taken (cumulative)",
                 title="updates into each tier's models")
    versions.legend(loc="upper left", fontsize=8)
    width = 0.8 / len(tiers)
    for i, tier in enumerate(tiers):
        counts = table.loc[table["tier"] == tier, "staleness"].value_counts().sort_index()
        stale.bar(counts.index + (i - (len(tiers) - 1) / 2) * width, counts.to_numpy(),
                  width=width, color=colors[tier], label=tier)
    stale.set(xlabel="staleness (versions since the update left its aggregator)",
              ylabel="updates", title="staleness of what went in")
    stale.legend(fontsize=8)
    top = updates_by_source(table, TOP_SOURCES)
    sources.barh(top.index.astype(str)[::-1], top["share"].to_numpy()[::-1] * 100,
                 color=colour("model"))
    sources.set(xlabel="share of the updates taken (%)",
                title=f"the {len(top)} most frequent sources")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
