"""What went into each asynchronously aggregated model: updates.csv, one row per update mixed
in or buffered (its time, source, aggregator, base version, version after, staleness, weight,
and its life: where the time went from its source's download of the model it started from to
the step that took it), and the staleness percentiles of summary.json, per tier of the
aggregator. Runs with no such update (every synchronous algorithm's) get neither: their
results stay as they were.

An update's life, from its source's trace: ``started_s`` the start of the download that
brought its source the model (the last transfer down into the source before it sent),
``download_s`` that transfer, ``work_s`` from the download's end to the end of the source's
training (or to its upload's start where it trained nothing itself: an edge server's whole
cycle with its clients; any queue), ``held_s`` from that training's end to the upload's start
(a satellite out of contact, a vehicle out of coverage: the update ready, no way up),
``upload_s`` its upload, ``waited_s`` from its arrival to the step that took it (a buffer
filling, the aggregator's lock). They add up to its age, time_s - started_s. Where the
source's download left no record of its own (a broadcast), the life is empty. The update that
arrived last among those a step took is what that version waited for: its life is the
version's critical path."""

from __future__ import annotations

import numpy as np
import pandas as pd

from netfl.sim.trace import ModelMixed, TraceBus, TrainEnd, TransferEnd

LIFE_COLUMNS = ["started_s", "download_s", "work_s", "held_s", "upload_s", "waited_s"]
UPDATE_COLUMNS = ["time_s", "node", "tier", "source", "base_version", "version", "staleness",
                  "weight", *LIFE_COLUMNS]
_RANK = {"client": 0, "edge": 1, "cloud": 2}
_NO_LIFE = (float("nan"),) * len(LIFE_COLUMNS)


class UpdateLog:
    """Subscribes to ``model_mixed`` records; ``tier(node)`` names an aggregator's tier. With
    ``lives`` (an asynchronous algorithm's run), also to transfers, to follow each update's
    life (module docstring); without, its life columns are empty and no transfer is read."""

    def __init__(self, trace: TraceBus, tier, lives: bool = False):
        self.rows: list[tuple] = []
        self._tier = tier
        self._lives = lives
        self._started: dict[str, tuple] = {}  # source -> (its last download's start, length)
        # (source, arrival) -> the life of the update that arrived then, until a step takes it
        self._arrived: dict[tuple[str, float], tuple] = {}
        self._trained: dict[str, float] = {}  # source -> when its last training ended
        trace.subscribe(self._mixed, ModelMixed)
        if lives:
            trace.subscribe(self._transfer, TransferEnd)
            trace.subscribe(self._train_end, TrainEnd)

    def _train_end(self, r: TrainEnd) -> None:
        if r.ok:
            self._trained[r.node] = r.time_s

    def _transfer(self, r: TransferEnd) -> None:
        down = _RANK[self._tier(r.src)] - _RANK[self._tier(r.dst)]
        if down > 0:  # the model comes down to r.dst: what it sends next started here
            self._started[r.dst] = (r.time_s - r.duration_s, r.duration_s)
        elif down < 0 and (began := self._started.get(r.src)) is not None:
            started, download = began
            sent = r.time_s - r.duration_s
            trained = self._trained.get(r.src)
            done = trained if trained is not None and started + download <= trained <= sent \
                else sent
            self._arrived[(r.src, r.time_s)] = (started, download, done - started - download,
                                                sent - done, r.duration_s)

    def _life(self, r: ModelMixed) -> tuple:
        """The life of the update ``r`` took, keyed by its source and arrival (the mailbox's
        stamp): a source's next download cannot overwrite it."""
        if not self._lives or r.arrived_s < 0:
            return _NO_LIFE
        life = self._arrived.pop((r.source, r.arrived_s), None)
        return _NO_LIFE if life is None else (*life, r.time_s - r.arrived_s)

    def _mixed(self, r: ModelMixed) -> None:
        self.rows.append((r.time_s, r.node, self._tier(r.node), r.source, r.base_version,
                          r.version, r.staleness, r.weight, *self._life(r)))

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=UPDATE_COLUMNS)

    def summary(self) -> dict:
        """``updates_mixed``, ``staleness_p50``/``_p90``/``_max`` over every update,
        ``staleness_by_tier`` (tier -> updates, p50, p90, max) and the same per tier as
        scalars (``staleness_p50_edge``, ...: the sweep index's columns); empty without
        updates."""
        if not self.rows:
            return {}
        table = self.table()
        overall = staleness_percentiles(table["staleness"].to_numpy())
        by_tier = {tier: {"updates": int(len(group)),
                          **staleness_percentiles(group["staleness"].to_numpy())}
                   for tier, group in table.groupby("tier", sort=True)}
        flat = {f"staleness_{q}_{tier}": stats[q] for tier, stats in by_tier.items()
                for q in ("p50", "p90", "max")}  # the sweep index keeps scalars only
        return {"updates_mixed": len(table), "staleness_p50": overall["p50"],
                "staleness_p90": overall["p90"], "staleness_max": overall["max"],
                "staleness_by_tier": by_tier, **flat}


def staleness_percentiles(staleness: np.ndarray) -> dict:
    """p50, p90 (linear interpolation) and max of a non-empty array of stalenesses."""
    return {"p50": float(np.percentile(staleness, 50)),
            "p90": float(np.percentile(staleness, 90)), "max": int(staleness.max())}


def version_paths(table: pd.DataFrame) -> pd.DataFrame:
    """Per step (aggregator and version) of ``table`` (updates.csv), the life of the update
    that arrived last among those it took: what that version waited for."""
    lived = table.dropna(subset=["started_s"])
    if not len(lived):
        return lived
    arrival = lived["time_s"] - lived["waited_s"]
    last = arrival.groupby([lived["node"], lived["version"]]).idxmax()
    return lived.loc[last.to_numpy()].reset_index(drop=True)


def updates_by_source(table: pd.DataFrame, top: int = 5) -> pd.DataFrame:
    """Per source (client or edge) of ``updates.csv``: updates taken, their share, and their
    median staleness; the ``top`` most frequent (who dominates the model)."""
    grouped = table.groupby("source")["staleness"]
    out = pd.DataFrame({"updates": grouped.size(), "median_staleness": grouped.median()})
    out["share"] = out["updates"] / len(table)
    return out.sort_values(["updates", "median_staleness"], ascending=[False, True]).head(top)
