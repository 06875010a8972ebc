"""What went into each asynchronously aggregated model: updates.csv, one row per update mixed
in or buffered (its time, source, aggregator, base version, version after, staleness, weight),
and the staleness percentiles of summary.json, per tier of the aggregator. Runs with no such
update (every synchronous algorithm's) get neither: their results stay as they were."""

from __future__ import annotations

import numpy as np
import pandas as pd

from netfl.sim.trace import ModelMixed, TraceBus

UPDATE_COLUMNS = ["time_s", "node", "tier", "source", "base_version", "version", "staleness",
                  "weight"]


class UpdateLog:
    """Subscribes to ``model_mixed`` records; ``tier(node)`` names an aggregator's tier."""

    def __init__(self, trace: TraceBus, tier):
        self.rows: list[tuple] = []
        self._tier = tier
        trace.subscribe(self._mixed, ModelMixed)

    def _mixed(self, r: ModelMixed) -> None:
        self.rows.append((r.time_s, r.node, self._tier(r.node), r.source, r.base_version,
                          r.version, r.staleness, r.weight))

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=UPDATE_COLUMNS)

    def summary(self) -> dict:
        """``updates_mixed``, ``staleness_p50``/``_p90``/``_max`` over every update, and
        ``staleness_by_tier`` (tier -> updates, p50, p90, max); empty without updates."""
        if not self.rows:
            return {}
        table = self.table()
        overall = staleness_percentiles(table["staleness"].to_numpy())
        by_tier = {tier: {"updates": int(len(group)),
                          **staleness_percentiles(group["staleness"].to_numpy())}
                   for tier, group in table.groupby("tier", sort=True)}
        return {"updates_mixed": len(table), "staleness_p50": overall["p50"],
                "staleness_p90": overall["p90"], "staleness_max": overall["max"],
                "staleness_by_tier": by_tier}


def staleness_percentiles(staleness: np.ndarray) -> dict:
    """p50, p90 (linear interpolation) and max of a non-empty array of stalenesses."""
    return {"p50": float(np.percentile(staleness, 50)),
            "p90": float(np.percentile(staleness, 90)), "max": int(staleness.max())}


def updates_by_source(table: pd.DataFrame, top: int = 5) -> pd.DataFrame:
    """Per source (client or edge) of ``updates.csv``: updates taken, their share, and their
    median staleness; the ``top`` most frequent (who dominates the model)."""
    grouped = table.groupby("source")["staleness"]
    out = pd.DataFrame({"updates": grouped.size(), "median_staleness": grouped.median()})
    out["share"] = out["updates"] / len(table)
    return out.sort_values(["updates", "median_staleness"], ascending=[False, True]).head(top)
