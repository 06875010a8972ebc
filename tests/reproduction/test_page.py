"""docs/reproduction.md and the README's front table rebuild byte-identical from the records
committed under results/reproduction/: the page is what its records say, on any machine."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from netfl.reproduction.document import kept_sections, rebuild
from netfl.reproduction.plan import load_plans

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_and_the_readme_table_rebuild_from_the_committed_records(tmp_path):
    results = tmp_path / "results" / "reproduction"
    shutil.copytree(ROOT / "results" / "reproduction", results)
    doc, readme = tmp_path / "docs" / "reproduction.md", tmp_path / "README.md"
    doc.parent.mkdir()
    shutil.copy(ROOT / "docs" / "reproduction.md", doc)
    shutil.copy(ROOT / "README.md", readme)
    plans = load_plans(ROOT / "scenarios" / "reproduction")
    kept = kept_sections(plans, results, doc)
    rebuild(plans, results, doc, doc.parent / "img" / "reproduction", kept=kept, readme=readme)
    assert doc.read_text() == (ROOT / "docs" / "reproduction.md").read_text(), (
        "docs/reproduction.md differs from what its records give: run "
        "`netfl reproduce --tables-only` and commit the page with the records")
    assert readme.read_text() == (ROOT / "README.md").read_text()
    assert (results / "host_times.json").read_text() == (
        ROOT / "results" / "reproduction" / "host_times.json").read_text()


def test_no_section_is_kept_as_rendered():
    """Every block of the page is rebuilt from committed records: a section without them would
    be kept as it was rendered, on whatever machine that was."""
    plans = load_plans(ROOT / "scenarios" / "reproduction")
    kept = {p.section for p in kept_sections(plans, ROOT / "results" / "reproduction",
                                             ROOT / "docs" / "reproduction.md")}
    assert not kept, f"kept as rendered, without committed records: {sorted(kept)}"


def test_every_run_the_plans_ask_for_is_committed():
    """The page judges every finding on all its runs: a run its plan asks for without a record
    would show as `not run` (a study half done, its verdicts waiting) on a clean checkout."""
    from netfl.reproduction.status import reproduction_status

    plans = load_plans(ROOT / "scenarios" / "reproduction")
    short = [f"{s.section}/{s.study}: {s.done} of {s.planned}"
             for s in reproduction_status(plans, ROOT / "results" / "reproduction")
             if s.done < s.planned]
    assert not short, "runs the plans ask for without a committed record:\n" + "\n".join(short)


def _done_rows():
    """(arm run, its index's rows of done runs) for every arm of every plan that has an index."""
    from netfl.reproduction.execute import arm_runs, has_index
    from netfl.sweep.runner import read_index

    for plan in load_plans(ROOT / "scenarios" / "reproduction"):
        for arm_run in arm_runs(plan, ROOT / "results" / "reproduction"):
            if has_index(arm_run):
                index = read_index(arm_run.folder)
                yield arm_run, index[index["status"] == "done"]


def test_every_done_run_has_its_record_files_committed():
    """An index row says a run is done; its summary, metrics and resolved scenario must be in
    the repository beside it, or a clean checkout renders from an index alone."""
    committed = {p.relative_to(ROOT).as_posix() for p in _committed_record_files()}
    missing, seen = [], 0
    for arm_run, done in _done_rows():
        for path in done["path"]:
            seen += 1
            folder = (arm_run.folder / path).relative_to(ROOT).as_posix()
            missing += [f"{folder}/{name}" for name in RECORD_FILES
                        if f"{folder}/{name}" not in committed]
    assert seen, "no done runs found"
    assert not missing, "done runs whose records are not committed:\n" + "\n".join(missing[:20])


RECORDS_LIMIT_BYTES = 150 * 1000**2
RECORD_FILES = ("summary.json", "metrics.csv", "scenario.yaml")


def _committed_record_files() -> list[Path]:
    """The files under results/reproduction/ that the repository holds: git's list where this
    is a checkout (a working copy also holds each run's plots and traces, which are not
    committed), else every file there (a clean copy holds only those)."""
    folder = ROOT / "results" / "reproduction"
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--", str(folder)], cwd=ROOT,
                                capture_output=True, check=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return [p for p in folder.rglob("*") if p.is_file()]
    return [ROOT / name for name in listed.split("\0") if name]


def test_the_committed_records_stay_under_150_mb():
    files = [p for p in _committed_record_files() if p.is_file()]
    assert files, "no committed records found under results/reproduction/"
    total = sum(p.stat().st_size for p in files)
    assert total <= RECORDS_LIMIT_BYTES, (
        f"results/reproduction/ holds {total / 1e6:.1f} MB of records, over the 150 MB the page "
        "promises: compress the large ones (metrics.csv of long runs)")


def test_every_committed_record_is_a_run_its_plan_asks_for_now():
    """A record whose run id the plan no longer gives (a field added to the scenarios, a
    default that became unhashed) would be rerun by ``netfl reproduce`` and left beside its
    replacement: the page would read records the repository cannot rebuild."""
    stale, seen = [], 0
    for arm_run, rows in _done_rows():
        asked = {point.run_id for point in arm_run.load().points}
        done = set(rows["run_id"])
        seen += len(done)
        stale += [f"{arm_run.folder.relative_to(ROOT)}: {run}" for run in done - asked]
    assert seen, "no committed records found"
    assert not stale, "records whose run ids the plans no longer give:\n" + "\n".join(stale)
