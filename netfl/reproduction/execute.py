"""Running a reproduction plan: each study's arms as sweeps, resumable, on any executor.

Folder layout under the output folder (``results/reproduction`` by default,
``results/reproduction-quick`` for ``--quick``)::

    <section>/<study>/<arm>/        one sweep folder per arm (sweep.json, index, runs/, logs/)
    host_times.json                 host seconds per section and study, summed over the runs

A run whose folder is complete is never run again (netfl.sweep.runner), so rerunning the same
command resumes where a killed one stopped, and a section can run on another machine and be
copied in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from netfl.errors import NetflError
from netfl.reproduction.plan import Arm, Plan, Study
from netfl.sweep.grid import Sweep, load_sweep
from netfl.sweep.runner import Observer, SweepResult, read_index, run_sweeps

HOST_TIMES = "host_times.json"


@dataclass(frozen=True)
class ArmRun:
    """One arm of one study as it runs: its sweep definition and folder."""

    plan: Plan
    study: Study
    arm: Arm
    scenario: Path
    grid: dict[str, list]
    seeds: int
    overrides: list[str]
    folder: Path
    point: str = ""  # the named point's label ('' where the study has none)

    def load(self) -> Sweep:
        return load_sweep(self.scenario, grid_arguments(self.grid), self.seeds, self.overrides)


def slug(label: str) -> str:
    """A folder name for an arm label: lower case, runs of other characters as '-'."""
    return re.sub(r"[^a-z0-9.]+", "-", label.lower()).strip("-") or "arm"


def grid_arguments(grid: dict[str, list]) -> list[str]:
    """``--grid`` strings for a grid (each value as flow YAML, so lists and strings survive)."""
    def text(value: object) -> str:
        dumped = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
        return dumped.removesuffix("...").strip()

    return [f"{key}={','.join(text(v) for v in values)}" for key, values in grid.items()]


def arm_runs(plan: Plan, out_dir: Path, quick: bool = False) -> Iterator[ArmRun]:
    """The sweeps of every study of ``plan``; in quick mode only the arms the study's ``quick``
    names, on their short scenarios (studies without ``quick`` are left out)."""
    for study in plan.studies:
        if quick and study.quick is None:
            continue
        points = [(p.label, p.set, p.seeds) for p in study.points] or [("", [], None)]
        if quick and study.quick.points is not None:
            points = [p for p in points if p[0] in study.quick.points]
        for arm in study.arms:
            for label, point_set, point_seeds in points:
                if arm.points is not None and label not in arm.points:
                    continue
                folder = out_dir / plan.section / study.id / slug(arm.label)
                if label:
                    folder = folder / slug(label)
                if quick:
                    scenario = study.quick.arms.get(arm.label)
                    if scenario is None:
                        continue
                    yield ArmRun(plan, study, arm, plan.resolve(scenario),
                                 study.quick.grid if study.quick.grid is not None
                                 else study.grid, study.quick.seeds,
                                 [*study.quick.set, *point_set], folder, label)
                else:
                    yield ArmRun(plan, study, arm, plan.resolve(arm.scenario), study.grid,
                                 arm.seeds or point_seeds or study.seeds,
                                 [*study.set, *arm.set, *point_set], folder, label)


def run_plans(plans: list[Plan], out_dir: Path, executor_factory: Callable[[], object],
              observer: Observer | None = None, quick: bool = False
              ) -> list[tuple[ArmRun, SweepResult]]:
    """Run every arm of every plan (validating all of them first, so a typo in the last plan
    stops nothing half-way), section by section; within a section every arm's sweep shares one
    executor, so no worker idles while another sweep has runs left. Records host times.
    Returns each arm with its sweep's result."""
    runs = [(run, run.load()) for plan in plans for run in arm_runs(plan, out_dir, quick)]
    if not quick:  # quick's short runs stop at their targets by design
        for run, sweep in runs:
            check_accuracy_findings(run, sweep)
    results = []
    for plan in plans:
        mine = [(run, sweep) for run, sweep in runs if run.plan is plan]
        if not mine:
            continue
        swept = run_sweeps([(sweep, run.folder) for run, sweep in mine], executor_factory(),
                           observer)
        results += [(run, result) for (run, _sweep), result in zip(mine, swept, strict=True)]
        write_host_times(out_dir, plans, quick)
    return results


ACCURACY_METRICS = ("final_accuracy", "best_accuracy")


def check_accuracy_findings(run: ArmRun, sweep: Sweep) -> None:
    """NetflError where a finding compares final or best accuracy of an arm whose runs stop at
    their target: each would end at about the target, so the finding could not tell the arms
    apart (the study needs ``stop.at_target=false`` to spend its whole budget). Checked before
    a paper-scale run starts; the short runs of ``--quick`` stop at their targets by design, and
    such a finding's verdict there says it is not judged (render.finding_verdict)."""
    for finding in run.plan.findings:
        if (finding.study != run.study.id or finding.rule.metric not in ACCURACY_METRICS
                or run.arm.label not in finding.compared([a.label for a in run.study.arms])):
            continue
        stopping = next((p for p in sweep.points if p.scenario.stop.at_target
                         and p.scenario.stop.target_accuracy is not None), None)
        if stopping is not None:
            raise NetflError(
                f"{run.plan.path}: finding {finding.id!r} compares {finding.rule.metric} in "
                f"study {run.study.id!r}, but arm {run.arm.label!r} stops at its target "
                f"(stop.target_accuracy={stopping.scenario.stop.target_accuracy:g}), so every "
                "run ends at about the target; add stop.at_target=false to the study's set")


def has_index(run: ArmRun) -> bool:
    """Whether the arm's sweep has started here (its folder holds an index)."""
    return (run.folder / "index.parquet").exists() or (run.folder / "index.csv").exists()


def study_rows(run: ArmRun) -> list[dict]:
    """The index rows of an arm's sweep (empty where it has not run)."""
    if not has_index(run):
        return []
    return read_index(run.folder).to_dict("records")


def host_times(plans: list[Plan], out_dir: Path, quick: bool = False) -> dict:
    """Host seconds summed over the done runs, per section and per study, and in all. A run
    two studies share (the same run id: one run, copied to the second's folder) counts once,
    in the first study that has it."""
    sections: dict[str, dict] = {}
    counted: set[str] = set()
    for plan in plans:
        studies: dict[str, float] = {}
        for run in arm_runs(plan, out_dir, quick):
            rows = [r for r in study_rows(run)
                    if r.get("status") == "done" and r["run_id"] not in counted]
            counted.update(r["run_id"] for r in rows)
            seconds = sum(float(r.get("host_time_s") or 0.0) for r in rows)
            studies[run.study.id] = studies.get(run.study.id, 0.0) + seconds
        sections[plan.section] = {"total_s": sum(studies.values()), "studies": studies}
    return {"total_s": sum(s["total_s"] for s in sections.values()), "sections": sections}


def write_host_times(out_dir: Path, plans: list[Plan], quick: bool = False) -> None:
    """host_times.json for the sections of ``plans`` (others already there are kept)."""
    path = out_dir / HOST_TIMES
    known = json.loads(path.read_text()) if path.exists() else {"sections": {}}
    fresh = host_times(plans, out_dir, quick)
    known["sections"].update(fresh["sections"])
    known["total_s"] = sum(s["total_s"] for s in known["sections"].values())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(known, indent=2) + "\n")
    tmp.replace(path)
