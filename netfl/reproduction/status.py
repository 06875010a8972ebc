"""Where a reproduction stands: per study, the runs its plan asks for, those done, the host
time they took, and an estimate of the host time the rest will take (``netfl reproduce
--status``).

The estimate takes each remaining run to cost the median host time of the done runs nearest
to it: of its own arm and named point, else of its arm, else of its study, else of its section;
where nothing of its section has run there is no estimate. Host times are those recorded on
the machine that ran them, with whatever else ran beside them. A run two studies share (the same
run id) counts its host time once, in the first study that has it, as the page's host-time
table does; in a study that lacks it, it counts as done (the next regeneration copies it,
running nothing) and costs no estimate.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from netfl.reproduction.execute import arm_runs, study_rows
from netfl.reproduction.plan import Plan


@dataclass(frozen=True)
class StudyStatus:
    section: str
    study: str
    planned: int
    done: int
    host_done_s: float
    left_s: float | None  # estimated host seconds of the runs not done; None: no basis yet


def estimate_left_s(levels: list[dict[str, list[float]]], remaining: dict[tuple[str, ...], int]
                    ) -> float | None:
    """Host seconds for ``remaining`` runs per key (a tuple of names, finest first: e.g.
    (arm and point, arm, study, section)), each costed at the median of the first level with
    done runs under that key's name at that level; None where a key finds none at any level."""
    total = 0.0
    for key, count in remaining.items():
        if count <= 0:
            continue
        basis = next((level[name] for level, name in zip(levels, key, strict=True)
                      if level.get(name)), None)
        if basis is None:
            return None
        total += count * statistics.median(basis)
    return total


def reproduction_status(plans: list[Plan], out_dir: Path, quick: bool = False
                        ) -> list[StudyStatus]:
    """One StudyStatus per study of ``plans``, in plan order."""
    levels: list[dict[str, list[float]]] = [defaultdict(list) for _ in range(4)]
    planned: dict[tuple[str, ...], int] = defaultdict(int)
    done: dict[tuple[str, ...], int] = defaultdict(int)
    host: dict[tuple[str, str], float] = defaultdict(float)
    order: list[tuple[str, str]] = []
    runs = [(plan, run, [r for r in study_rows(run) if r.get("status") == "done"])
            for plan in plans for run in arm_runs(plan, out_dir, quick)]
    everywhere = {row["run_id"] for _plan, _run, rows in runs for row in rows}
    counted: set[str] = set()
    for plan, run, rows in runs:
        study = (plan.section, run.study.id)
        if study not in order:
            order.append(study)
        key = ("/".join((*study, run.arm.label, run.point)), "/".join((*study,
               run.arm.label)), "/".join(study), plan.section)
        points = 1
        for values in run.grid.values():
            points *= len(values)
        planned[key] += run.seeds * points
        for row in rows:
            done[key] += 1
            if row["run_id"] in counted:
                continue
            counted.add(row["run_id"])
            seconds = float(row.get("host_time_s") or 0.0)
            host[study] += seconds
            for level, name in zip(levels, key, strict=True):
                level[name].append(seconds)
        mine = {row["run_id"] for row in rows}
        if len(rows) < run.seeds * points and everywhere - mine:  # another study's: copied
            done[key] += sum(p.run_id in everywhere and p.run_id not in mine
                             for p in run.load().points)
    out = []
    for study in order:
        mine = {k: planned[k] - done[k] for k in planned if k[2] == "/".join(study)}
        out.append(StudyStatus(
            study[0], study[1], sum(planned[k] for k in mine), sum(done[k] for k in mine),
            host[study], estimate_left_s(levels, mine)))
    return out
