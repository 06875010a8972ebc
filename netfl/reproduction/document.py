"""docs/reproduction.md's generated parts, rebuilt from results.

The document is hand-written prose (each paper's setting beside ours, the reasons in words)
around generated blocks, each between two markers::

    <!-- reproduction:chfl -->            a section: its studies' tables, the rounds' critical
    ...                                   paths, the figures and the findings' verdicts
    <!-- /reproduction:chfl -->
    <!-- reproduction:summary -->         the headline findings, a row each, every reading's
    ...                                   verdict in it (also in README.md where it has the block)
    <!-- reproduction:verdicts -->        every finding's verdict in one table
    <!-- reproduction:host-times -->      host time per section, from host_times.json

Rebuilding replaces what is between the markers and nothing else; a block the document lacks is
appended at its end. A section with no runs at all in the results folder, whose block the
document already fills, is kept as it is, with its rows of the verdict and host-time tables:
its results live elsewhere (rendered on another machine, or in a results folder since lost), and
an empty folder is no evidence against them. The document is written whole to a temporary file
and renamed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from netfl.errors import NetflError
from netfl.reproduction.cells import collect
from netfl.reproduction.execute import HOST_TIMES, arm_runs, has_index, write_host_times
from netfl.reproduction.plan import Finding, Plan
from netfl.reproduction.readings import judged_findings, readings_table
from netfl.reproduction.render import (
    claim_text,
    finding_verdict,
    markdown_rows,
    round_table,
    study_figures,
    study_table,
    verdict_rows,
)
from netfl.reproduction.verdicts import NOT_RUN, Verdict
from netfl.results.collect import plural
from netfl.sim.clock import format_duration, parse_quantity

VERDICTS, HOST_TIME_BLOCK, SUMMARY = "verdicts", "host-times", "summary"
NOTHING_RUN = "Nothing of this section has run yet."
VERDICT_HEAD = ["paper", "finding", "verdict", "measured"]


def _marker(name: str) -> tuple[str, str]:
    return f"<!-- reproduction:{name} -->", f"<!-- /reproduction:{name} -->"


def block_body(text: str, name: str) -> str | None:
    """What block ``name`` of ``text`` holds, stripped (None where the block is missing)."""
    start, end = _marker(name)
    match = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.DOTALL)
    return None if match is None else match.group(1).strip()


def kept_sections(plans: list[Plan], out_dir: Path, doc: Path, quick: bool = False
                  ) -> list[Plan]:
    """The plans whose block ``rebuild`` keeps: no run of theirs in ``out_dir`` (not even a
    failed one), and a block in ``doc`` that shows results."""
    text = doc.read_text() if doc.is_file() else ""
    return [plan for plan in plans
            if block_body(text, plan.section) not in (None, "", NOTHING_RUN)
            and not any(has_index(run) for run in arm_runs(plan, out_dir, quick))]


def _table_lines(body: str | None, first_cell: str) -> list[str]:
    """The lines of a markdown table in ``body`` whose first cell is ``first_cell``."""
    return [line for line in (body or "").splitlines()
            if line.startswith(f"| {first_cell} |")]


def _duration_s(text: str) -> float:
    """Seconds of a ``format_duration`` text such as '6 h 51 min' ('none run': 0)."""
    words = text.split()
    if words == ["none", "run"]:
        return 0.0
    try:
        if len(words) % 2:
            raise ValueError("not pairs of a number and a unit")
        return sum(parse_quantity(f"{number} {unit}", "time")
                   for number, unit in zip(words[::2], words[1::2], strict=True))
    except ValueError as exc:
        raise NetflError(f"the host-time table's row of a kept section says {text!r}, which "
                         f"does not read as a duration ({exc}); mend the row or rerun the "
                         f"section") from None


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
                         for f in judged_findings(study, plan.findings)]
            continue
        results = collect(study, mine)
        counts = sorted({run.seeds for run in mine})
        seeds = f"{counts[0]}-{counts[-1]}" if len(counts) > 1 else str(counts[0])
        parts.append(f"#### {study.title}\n")
        settings = f", {plural(len(study.points), 'setting')}" if study.points else ""
        per_point = f"{seeds} seed{'' if seeds == '1' else 's'} per point"
        grid = f"; grid {', '.join(study.grid)}" if study.grid else ""
        one_run = 1 in results.row_sizes()
        parts.append(f"{plural(results.count(), 'run')} done "
                     f"({plural(len(study.arms), 'arm')}{settings}, "
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
        if study.readings:
            parts.append("Settings the paper states two ways, each run as its own arms; every "
                         "finding they touch is judged under each reading:\n")
            parts.append(readings_table(study) + "\n")
        verdicts += [(finding, finding_verdict(finding, results))
                     for finding in judged_findings(study, plan.findings)]
    if verdicts:
        parts.append("#### Verdicts\n")
        parts.append(verdict_rows(verdicts) + "\n")
    if not parts:
        parts.append(NOTHING_RUN + "\n")
    return "\n".join(parts), verdicts


def host_time_block(out_dir: Path, kept: dict[str, str] | None = None) -> str:
    """The host-time table from host_times.json; a section in ``kept`` (section -> its row
    of the document's table) shows that row instead, and counts its total in "all" (a kept
    "all" row stands as it is)."""
    kept = dict(kept or {})
    path = out_dir / HOST_TIMES
    if not path.is_file():
        return "No run has finished yet."
    data = json.loads(path.read_text())
    def shown(seconds: float) -> str:
        return format_duration(seconds) if seconds else "none run"

    head = ["section", "host time", "per study"]
    lines, total = markdown_rows(head, []).splitlines(), 0.0
    for section, info in data["sections"].items():
        if section in kept:
            lines.append(kept[section])
            total += _duration_s(kept[section].split("|")[2].strip())
            continue
        total += info["total_s"]
        lines += markdown_rows(head, [[section, shown(info["total_s"]), ", ".join(
            f"{k} {shown(v)}" for k, v in info["studies"].items())]]).splitlines()[2:]
    if "all" in kept:  # every section kept: its total as shown, not re-added from rounded rows
        lines.append(kept.pop("all"))
    else:
        lines += markdown_rows(head, [["all", format_duration(total), ""]]).splitlines()[2:]
    note = (f" Sections {', '.join(kept)}: kept as rendered from results not in this folder."
            if kept else "")
    return ("Host time of the runs (summary.json's host_time_s summed over runs; on 2 workers "
            "the wall-clock time is about half)." + note + "\n\n" + "\n".join(lines))


def rebuild(plans: list[Plan], out_dir: Path, doc: Path, figures: Path, quick: bool = False,
            title: str = "Reproduction", kept: list[Plan] | None = None,
            readme: Path | None = None) -> list[tuple[Finding, Verdict]]:
    """Rewrite the generated blocks of ``doc`` (created if missing) from the results in
    ``out_dir``; figures go to ``figures``. Sections of ``kept_sections`` keep their blocks
    (``kept``: that list, where the caller has it already).
    ``readme``: a file whose summary block gets the same front table.
    Returns the verdict of every finding of the sections rebuilt."""
    write_host_times(out_dir, plans, quick)
    text = doc.read_text() if doc.is_file() else f"# {title}\n"
    if kept is None:
        kept = kept_sections(plans, out_dir, doc, quick)
    old_verdicts, old_hosts = block_body(text, VERDICTS), block_body(text, HOST_TIME_BLOCK)
    everything, lines = [], []
    for plan in plans:
        if plan in kept:
            lines += _table_lines(old_verdicts, plan.title)
            continue
        body, verdicts = section_block(plan, out_dir, doc, figures, quick)
        text = replace_block(text, plan.section, body)
        everything += [(plan, f, v) for f, v in verdicts]
        rows = [[plan.title, claim_text(f), f"**{v.verdict}**",
                 "" if v.verdict == NOT_RUN else v.reason] for f, v in verdicts]
        lines += markdown_rows(VERDICT_HEAD, rows).splitlines()[2:]
    table = "\n".join(markdown_rows(VERDICT_HEAD, []).splitlines() + lines)
    text = replace_block(text, VERDICTS, table if lines else "No finding has been tested yet.")
    summary = summary_table(every_plan_findings(plans, everything, kept))
    text = replace_block(text, SUMMARY, summary)
    if readme is not None:
        _write(readme, replace_block(readme.read_text(), SUMMARY, summary))
    hosts = {plan.section: row for plan in kept
             for row in _table_lines(old_hosts, plan.section)[:1]}
    if len(kept) == len(plans) and _table_lines(old_hosts, "all"):
        hosts["all"] = _table_lines(old_hosts, "all")[0]
    text = replace_block(text, HOST_TIME_BLOCK, host_time_block(out_dir, hosts))
    _write(doc, text)
    return [(f, v) for _plan, f, v in everything]


def _write(path: Path, text: str) -> None:
    """Write ``text`` whole to a temporary file beside ``path``, then rename it over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


KEPT = "see its section (kept as rendered)"


def every_plan_findings(plans: list[Plan], judged: list[tuple[Plan, Finding, Verdict]],
                        kept: list[Plan]) -> list[tuple[Plan, Finding, list[tuple[Finding,
                                                                                   Verdict]]]]:
    """Each headline finding of ``plans`` with its verdicts (one per reading and target); a
    kept section's findings with none."""
    rows = []
    for plan in plans:
        for finding in plan.findings:
            if not finding.headline:
                continue
            mine = [(f, v) for p, f, v in judged if p is plan and f.id == finding.id]
            rows.append((plan, finding, [] if plan in kept else mine))
    return rows


def summary_table(rows: list[tuple[Plan, Finding, list[tuple[Finding, Verdict]]]]) -> str:
    """The front table: per headline finding its paper, its words, the verdict under each
    reading (and target), and the default's first measured figure."""
    if not rows:
        return "No finding is marked as a headline."
    table = []
    for plan, finding, verdicts in rows:
        cells = []
        for judged, verdict in verdicts:
            label = "; ".join(x for x in (judged.reading.replace(" (default)", ""),
                                          f"at {judged.target:g}" if judged.target else "") if x)
            cells.append(f"**{verdict.verdict}**" + (f" ({label})" if label and len(verdicts) > 1
                                                      else ""))
        figure = next((c.text.split(": ", 1)[-1] for _f, v in verdicts[:1]
                       for c in v.comparisons[:1]), "")
        table.append([plan.title.split(" (")[0], finding.headline,
                      "; ".join(cells) or KEPT, figure])
    return markdown_rows(["paper", "finding", "verdict per reading", "one figure"], table)
