"""Why an arm's rounds took as long, and cost as many bits, as they did: medians over its runs'
summary.json (the critical path's parts, the busiest channel, bits per round and by traffic).
Used by the tables and by the reasons the verdicts give."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from netfl.reproduction.cells import StudyResults
from netfl.results.rounds import PARTS, SEGMENTS
from netfl.sim.clock import format_bits, format_duration, format_share

HOP_NAMES = {"radio": "vehicle radio", "terminal": "RSU - satellite", "isl": "ISLs",
             "feeder": "satellite - gateway", "fibre": "fibre"}


@dataclass(frozen=True)
class ArmRounds:
    """An arm's rounds over its runs: the median round (s), its critical path's two largest
    parts [(part, s)], the channel most often busiest with its highest utilisation, and the
    median rounds to the target (None where no run reached it)."""

    median_s: float
    parts: list[tuple[str, float]]
    channel: str
    rounds_to_target: float | None
    hops: list[tuple[str, float]] = ()  # a satellite backhaul: the transfers' time by hop

    def hops_text(self) -> str:
        """The transfers by hop (a road under a constellation): 'radio 9.6 s, terminal 0.8 s'."""
        return ", ".join(f"{HOP_NAMES[h]} {format_duration(s)}" for h, s in self.hops)

    def parts_text(self) -> str:
        """The critical path's largest parts: 'download 1.3 s, upload 1.2 s'."""
        return ", ".join(f"{p.replace('_', ' ')} {format_duration(s)}" for p, s in self.parts)

    def text(self) -> str:
        parts = self.parts_text()
        rounds = (f"{self.rounds_to_target:.0f} rounds of " if self.rounds_to_target is not None
                  else "rounds of ")
        return f"{rounds}{format_duration(self.median_s)}" + (f" ({parts})" if parts else "")


def arm_rounds(results: StudyResults, arm: str, point: str | None = None) -> ArmRounds | None:
    """``arm``'s rounds from its runs' summary.json, at one setting (``point``) or over all of
    them (None without a critical path)."""
    durations, parts, channels, to_target = [], {p: [] for p in PARTS}, {}, []
    hops = {h: [] for h in SEGMENTS}
    runs = (results.arm_runs(arm) if point is None
            else results.runs.get(arm, {}).get(point, []))
    for run in runs:
        summary = run.summary
        path = summary.get("round_critical_path") or {}
        if "duration_s" not in path:
            continue
        durations.append(path["duration_s"]["p50"])
        for part in PARTS:
            parts[part].append(path.get(f"{part}_s", {}).get("p50", 0.0))
        for hop in SEGMENTS:
            if f"{hop}_s" in path:
                hops[hop].append(path[f"{hop}_s"]["p50"])
        for bottleneck in (summary.get("bottlenecks") or [])[:1]:
            channels.setdefault(bottleneck["channel"], []).append(bottleneck["utilisation"])
        if summary.get("rounds_to_target") is not None:
            to_target.append(summary["rounds_to_target"])
    if not durations:
        return None
    shares = sorted(((float(pd.Series(v).median()), p) for p, v in parts.items() if v),
                    reverse=True)[:2]
    busiest = max(channels.items(), key=lambda kv: len(kv[1]), default=None)
    return ArmRounds(float(pd.Series(durations).median()),
                     [(p, s) for s, p in shares if s > 0],
                     f"{busiest[0]} ({format_share(max(busiest[1]))})" if busiest else "-",
                     float(pd.Series(to_target).median()) if to_target else None,
                     [(h, m) for h, v in hops.items() if v
                      and (m := float(pd.Series(v).median())) > 0])


def arm_traffic(results: StudyResults, arm: str) -> str | None:
    """``arm``'s bits to the target as rounds x bits per round, and the traffic (a transfer
    tag: client->edge, edge->edge, ...) with the largest share of them: medians over the runs
    that reached the target (None where none did)."""
    rounds, per_round, shares = [], [], {}
    for run in results.arm_runs(arm):
        summary = run.summary
        reached, bits = summary.get("rounds_to_target"), summary.get("bits_to_target")
        if not reached or bits is None:
            continue
        rounds.append(reached)
        per_round.append(bits / reached)
        tags = summary.get("bytes_to_target_by_tag") or {}
        total = sum(tags.values())
        for tag, value in tags.items():
            shares.setdefault(tag, []).append(value / total if total else 0.0)
    if not rounds:
        return None
    text = (f"{float(pd.Series(rounds).median()):.0f} rounds of "
            f"{format_bits(float(pd.Series(per_round).median()))}")
    if shares:
        tag, share = max(((t, float(pd.Series(v).median())) for t, v in shares.items()),
                         key=lambda pair: pair[1])
        text += f" ({tag} {100 * share:.0f}%)"
    return text
