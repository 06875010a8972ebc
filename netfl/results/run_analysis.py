"""A run's analysis, in one place: the analysers that read its trace as it goes (each round's
critical path, who took part) and what the network and the world hold at its end (each
channel's load, the cells' occupancy), read once for summary.json, the tables and the figures
(a 100,000-client run has 200,000 channels: reading them is worth doing once)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from netfl.results.links import bottlenecks, link_table
from netfl.results.occupancy import occupancy, occupancy_summary
from netfl.results.participation import PARTICIPATION_COLUMNS, Participation
from netfl.results.rounds import RoundAnalyzer, round_statistics
from netfl.results.updates import UpdateLog
from netfl.sim.trace import TraceBus


class RunAnalysis:
    """Subscribes its analysers to ``trace`` (before the network is built, as the recorder);
    ``summary``, ``tables`` and ``plot`` read the run's end."""

    def __init__(self, trace: TraceBus, world, asynchronous: bool = False):
        self.world = world
        # each round's critical path (split by hop where the world names a path's segments)
        self.rounds = RoundAnalyzer(trace, world.tier, getattr(world, "hop_segment", None))
        self.participation = Participation(trace, world.tier)
        # asynchronous aggregation's updates (their lives where the algorithm says it is one)
        self.updates = UpdateLog(trace, world.tier, lives=asynchronous)
        self._end: tuple | None = None  # (time, link rows, occupancy) last read

    def _loads(self, network, now_s: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The channels' rows and the cells' occupancy at ``now_s``, read once per time."""
        if self._end is None or self._end[0] != now_s:
            self._end = (now_s, link_table(network, now_s),
                         occupancy(self.world, network, now_s))
        return self._end[1], self._end[2]

    def rounds_table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rounds.rows, columns=self.rounds.columns)

    def summary(self, network, now_s: float) -> dict:
        """summary.json's round_critical_path, bottlenecks, occupancy and participation."""
        links, cells = self._loads(network, now_s)
        return {"round_critical_path": round_statistics(self.rounds.rows),
                "bottlenecks": bottlenecks(links), "occupancy": occupancy_summary(cells),
                "participation": self.participation.summary()} | self.updates.summary()

    def tables(self, network, now_s: float) -> dict[str, pd.DataFrame]:
        """rounds, participation and links (and, on a road or orbital world, occupancy; where
        updates were aggregated asynchronously, updates)."""
        links, cells = self._loads(network, now_s)
        return {"rounds": self.rounds_table(),
                "participation": pd.DataFrame(self.participation.rows,
                                              columns=PARTICIPATION_COLUMNS),
                "links": links.copy()} | (
                    {"occupancy": cells} if len(cells) else {}) | (
                    {"updates": self.updates.table()} if self.updates.rows else {})

    def plot_links(self, network, now_s: float, directory: Path, title: str) -> None:
        """links.png and, on a road or orbital world, occupancy.png."""
        from netfl.results.link_plots import plot_links, plot_occupancy
        from netfl.results.links import utilisation_over_time
        from netfl.results.occupancy import occupancy_matrix

        directory = Path(directory)
        plot_links(utilisation_over_time(network, now_s), directory / "links.png", title)
        plot_occupancy(occupancy_matrix(self._loads(network, now_s)[1]),
                       directory / "occupancy.png", title)
