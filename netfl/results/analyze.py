"""Why a run's rounds took as long as they did, from its results folder (``netfl analyze``).

A run writes rounds.csv (each round's critical path, netfl.results.rounds) and
participation.csv; a traced run made before those files existed is analysed again from its
events.parquet, where its records allow: the critical path needs the ``round_end`` records
(recorded since netfl analysed rounds), and is reported as unavailable without them, never
guessed. The bottlenecks are summary.json's ``bottlenecks`` where the run has them.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from netfl.results.participation import PARTICIPATION_COLUMNS, Participation
from netfl.results.rounds import ROUND_COLUMNS, RoundAnalyzer, round_statistics
from netfl.sim import trace as trace_module
from netfl.sim.trace import Record, TraceBus
from netfl.world.base import CLIENT, CLOUD, EDGE


def tier_from_name(node: str) -> str:
    """A node's tier from its name (c<i>: a client, e<j>: an edge server or satellite, the
    cloud and ground stations: the cloud tier), for a run whose world is not rebuilt."""
    if re.fullmatch(r"c\d+", node):
        return CLIENT
    if re.fullmatch(r"e\d+", node):
        return EDGE
    return CLOUD  # the cloud (CLOUD_NAME) and ground stations


@dataclass
class Analysis:
    """What ``analyze_run`` found: the tables (None where the run's records do not allow
    them), the statistics of its rounds, its bottlenecks, and notes on what was missing."""

    rounds: pd.DataFrame | None
    participation: pd.DataFrame | None
    statistics: dict
    bottlenecks: list
    summary: dict
    notes: list[str] = field(default_factory=list)


def _record_types() -> dict[str, type]:
    """The record classes by their ``kind``, as the trace module exports them (a slotted
    dataclass is a new class: ``Record.__subclasses__`` also lists the classes it replaced)."""
    return {value.kind: value for value in vars(trace_module).values()
            if isinstance(value, type) and issubclass(value, Record) and value is not Record
            and isinstance(getattr(value, "kind", None), str)}


def replay(events: pd.DataFrame) -> tuple[RoundAnalyzer, Participation]:
    """The analysers fed with a stored event table's records, in order."""
    bus = TraceBus()
    rounds, people = RoundAnalyzer(bus, tier_from_name), Participation(bus, tier_from_name)
    types = _record_types()
    wanted = {"transfer_end", "transfer_fail", "train_end", "aggregate", "busy", "selected",
              "round_end"}
    chosen = events[events["kind"].isin(wanted)]
    for row in chosen.to_dict("records"):
        cls = types[row["kind"]]
        names = [f.name for f in dataclasses.fields(cls)]
        values = {n: row[n] for n in names if n in row and not _missing(row[n])}
        if "path" in values:
            values["path"] = tuple(values["path"])
        bus.emit(cls(**values))
    return rounds, people


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def analyze_run(run_dir: Path) -> Analysis:
    """The analysis of the run in ``run_dir`` (a results folder)."""
    run_dir = Path(run_dir)
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        raise FileNotFoundError(f"{run_dir}: no summary.json (not a finished run's folder)")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    notes: list[str] = []
    rounds = participation = None
    if (run_dir / "rounds.csv").is_file():
        rounds = pd.read_csv(run_dir / "rounds.csv")
        if (run_dir / "participation.csv").is_file():
            participation = pd.read_csv(run_dir / "participation.csv")
    elif (run_dir / "events.parquet").is_file():
        events = pd.read_parquet(run_dir / "events.parquet")
        if not (events["kind"] == "round_end").any():
            notes.append("its events have no round_end records (the run was made before netfl "
                         "recorded them): the rounds cannot be told apart, so neither their "
                         "critical paths nor the participation per round can be given")
        else:
            analyzer, people = replay(events)
            rounds = pd.DataFrame(analyzer.rows, columns=ROUND_COLUMNS)
            participation = pd.DataFrame(people.rows, columns=PARTICIPATION_COLUMNS)
            notes.append("analysed again from events.parquet")
    else:
        notes.append("no rounds.csv and no events.parquet (run it again, with "
                     "--set output.trace=true for the event table)")
    statistics = (round_statistics(rounds.to_dict("records")) if rounds is not None
                  else summary.get("round_critical_path", {}))
    bottlenecks = summary.get("bottlenecks") or []
    if not bottlenecks:
        notes.append("no bottlenecks in summary.json (a run made before netfl measured links)")
    return Analysis(rounds, participation, statistics, bottlenecks, summary, notes)
