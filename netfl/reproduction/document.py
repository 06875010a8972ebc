"""docs/reproduction.md's generated parts, rebuilt from results.

The document is hand-written prose (each paper's setting beside ours, the reasons in words)
around generated blocks, each between two markers::

    <!-- reproduction:chfl -->            a section: its studies' tables, the rounds' critical
    ...                                   paths, the figures and the findings' verdicts
    <!-- /reproduction:chfl -->
    <!-- reproduction:verdicts -->        every finding's verdict in one table
    <!-- reproduction:host-times -->      host time per section, from host_times.json

Rebuilding replaces what is between the markers and nothing else; a block the document lacks is
appended at its end. The document is written whole to a temporary file and renamed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from netfl.reproduction.cells import collect
from netfl.reproduction.execute import HOST_TIMES, arm_runs, write_host_times
from netfl.reproduction.plan import Finding, Plan
from netfl.reproduction.render import (
    finding_verdict,
    markdown_rows,
    round_table,
    study_figures,
    study_table,
    verdict_rows,
)
from netfl.reproduction.verdicts import NOT_RUN, Verdict
from netfl.sim.clock import format_duration

VERDICTS, HOST_TIME_BLOCK = "verdicts", "host-times"


def _marker(name: str) -> tuple[str, str]:
    return f"<!-- reproduction:{name} -->", f"<!-- /reproduction:{name} -->"


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with block ``name``'s content replaced by ``body`` (appended where missing)."""
    start, end = _marker(name)
    block = f"{start}\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _m: block, text, count=1)
    return text.rstrip("\n") + "\n\n" + block + "\n"


def section_block(plan: Plan, out_dir: Path, doc: Path, figures: Path, quick: bool
                  ) -> tuple[str, list[tuple[Finding, Verdict]]]:
    """A section's generated markdown and its findings' verdicts."""
    runs = list(arm_runs(plan, out_dir, quick))
    parts: list[str] = []
    verdicts = []
    for study in plan.studies:
        mine = [r for r in runs if r.study.id == study.id]
        if not mine:  # not run in this mode: its findings say so
            verdicts += [(f, Verdict(NOT_RUN, f"{study.id} is not run here"))
                         for f in plan.findings if f.study == study.id]
            continue
        results = collect(study, mine)
        counts = sorted({run.seeds for run in mine})
        seeds = f"{counts[0]}-{counts[-1]}" if len(counts) > 1 else str(counts[0])
        parts.append(f"#### {study.title}\n")
        settings = (f", {len(study.points)} settings" if study.points else "")
        per_point = f"{seeds} seed{'' if seeds == '1' else 's'} per point"
        grid = f"; grid {', '.join(study.grid)}" if study.grid else ""
        one_run = 1 in results.row_sizes()
        parts.append(f"{results.count()} runs done ({len(study.arms)} arms{settings}, "
                     f"{per_point}{grid}). Each cell: mean ± 95% interval (Student t) over the "
                     "seeds" + ("; a cell of one run is its value, with no interval"
                                if one_run else "") + ".\n")
        if study.note:
            parts.append(study.note.strip() + "\n")
        parts.append(study_table(results) + "\n")
        for arm in study.arms:
            if arm.note:
                parts.append(f"*{arm.label}*: {arm.note.strip()}\n")
        if study.paper is not None and study.paper.note:
            parts.append(f"Paper column: {study.paper.note.strip()}\n")
        rounds = round_table(results)
        if rounds:
            parts.append("Why the rounds took as long as they did (each run's median round, "
                         "median over the row's runs):\n")
            parts.append(rounds + "\n")
        prefix = f"{plan.section}-{study.id}"
        for caption, path in study_figures(results, figures, prefix):
            parts.append(f"![{caption}]({os.path.relpath(path, doc.parent)})\n")
        for finding in plan.findings:
            if finding.study == study.id:
                verdicts.append((finding, finding_verdict(finding, results)))
    if verdicts:
        parts.append("#### Verdicts\n")
        parts.append(verdict_rows(verdicts) + "\n")
    if not parts:
        parts.append("Nothing of this section has run yet.\n")
    return "\n".join(parts), verdicts


def host_time_block(out_dir: Path) -> str:
    path = out_dir / HOST_TIMES
    if not path.is_file():
        return "No run has finished yet."
    data = json.loads(path.read_text())
    def shown(seconds: float) -> str:
        return format_duration(seconds) if seconds else "none run"

    rows = [[section, shown(info["total_s"]),
             ", ".join(f"{k} {shown(v)}" for k, v in info["studies"].items())]
            for section, info in data["sections"].items()]
    rows.append(["all", format_duration(data["total_s"]), ""])
    return ("Host time of the runs (summary.json's host_time_s summed over runs; on 2 workers "
            "the wall-clock time is about half):\n\n"
            + markdown_rows(["section", "host time", "per study"], rows))


def rebuild(plans: list[Plan], out_dir: Path, doc: Path, figures: Path, quick: bool = False,
            title: str = "Reproduction") -> list[tuple[Finding, Verdict]]:
    """Rewrite the generated blocks of ``doc`` (created if missing) from the results in
    ``out_dir``; figures go to ``figures``. Returns every finding's verdict."""
    write_host_times(out_dir, plans, quick)
    text = doc.read_text() if doc.is_file() else f"# {title}\n"
    everything = []
    for plan in plans:
        body, verdicts = section_block(plan, out_dir, doc, figures, quick)
        text = replace_block(text, plan.section, body)
        everything += [(plan, f, v) for f, v in verdicts]
    rows = [[plan.title, f.claim, f"**{v.verdict}**", "" if v.verdict == NOT_RUN else v.reason]
            for plan, f, v in everything]
    text = replace_block(text, VERDICTS,
                         markdown_rows(["paper", "finding", "verdict", "measured"], rows)
                         if rows else "No finding has been tested yet.")
    text = replace_block(text, HOST_TIME_BLOCK, host_time_block(out_dir))
    doc.parent.mkdir(parents=True, exist_ok=True)
    tmp = doc.with_name(f".{doc.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(doc)
    return [(f, v) for _plan, f, v in everything]
