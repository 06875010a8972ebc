"""The README and the docs say what the repository does: the quickstart's output is run here and
compared, the scenario shown is the quickstart's, the numbers quoted are what their commands
give, every relative link leads to a file, and docs/benchmarks.md is what its renderer makes of
benchmarks/results/. A page that drifts from the code fails here, not in a reader's hands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import benchmark_module

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMAND = "$ netfl run scenarios/quickstart.yaml"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def readme_lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def block_after(lines: list[str], start: int) -> list[str]:
    """The lines of the first fenced block at or after line ``start`` (fences excluded)."""
    opening = next(i for i in range(start, len(lines)) if lines[i].startswith("```"))
    closing = lines.index("```", opening + 1)
    return lines[opening + 1:closing]


def marked_command(marker: str) -> list[str]:
    """The command after an HTML-comment marker, as .ci/run and the tests read it."""
    lines = readme_lines()
    return block_after(lines, lines.index(f"<!-- {marker} -->") + 1)


def shown_output() -> list[str]:
    """The lines the README shows under the quickstart command, up to the closing fence."""
    lines = readme_lines()
    start = lines.index(COMMAND) + 1
    return lines[start:lines.index("```", start)]


def comparable(line: str) -> str:
    """A line less what differs between identical runs: host time, the run id's timestamp."""
    line = re.sub(r"in [\d.]+ s host time", "in <host> s host time", line)
    return re.sub(r"results: .*", "results: <folder>", line)


def test_the_two_commands_are_where_ci_and_users_find_them():
    quickstart, tests = marked_command("quickstart-command"), marked_command("test-command")
    assert len(quickstart) == 1 and quickstart[0].endswith("netfl run scenarios/quickstart.yaml")
    assert len(tests) == 1 and "pip install -e '.[dev]'" in tests[0]
    assert tests[0].endswith(".venv/bin/python -m pytest")


def test_the_readme_shows_what_the_quickstart_prints(tmp_path):
    # the limit only catches a hang: the quickstart takes about a minute alone, and over ten
    # beside two training processes on 2 cores (300 s failed there)
    run = subprocess.run([sys.executable, "-m", "netfl", "run", "scenarios/quickstart.yaml",
                          "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=1800, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin",
                                           "HOME": str(Path.home())})
    assert run.returncode == 0, run.stderr
    printed = [comparable(line) for line in run.stdout.splitlines()]
    bar, *shown = shown_output()
    assert printed == [comparable(line) for line in shown]
    progress = re.search(r"\d+/\d+ rounds · sim [^·]+ · acc [\d.]+", bar).group(0)
    assert progress in run.stderr  # the bar's last state, as shown


def test_the_scenario_shown_is_the_quickstart():
    from netfl import load_scenario

    lines = readme_lines()
    shown = yaml.safe_load("\n".join(block_after(lines, lines.index("```yaml"))))
    assert shown == {**shown, "name": "quickstart"}
    assert (load_scenario(shown).model_dump()
            == load_scenario(ROOT / "scenarios" / "quickstart.yaml").model_dump())


def test_the_readme_is_a_front_door_not_a_lab_notebook():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 160
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\bUTC\b|this machine|\bissue \d", text)


def test_the_figures_numbers_are_what_its_runs_give():
    """The README figure's alt text quotes each run's time to the target."""
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import readme_figure
    finally:
        sys.path.remove(str(ROOT / "docs"))
    alt = re.search(r"!\[([^\]]*)\]\(docs/img/accuracy_vs_time.png\)",
                    README.read_text(encoding="utf-8")).group(1)
    runs = readme_figure.runs()
    for kind, name in (("hier-fedavg", "hierarchical FedAvg"), ("fedavg", "FedAvg")):
        reached = runs[kind].summary["time_to_target_s"]
        assert f"{name} reaches the 0.92 target at {reached:.1f} s" in alt \
            or f"{name} at {reached:.1f} s" in alt


def test_the_ns3_numbers_quoted_are_what_the_harness_prints(capsys):
    with benchmark_module("validate_ns3") as harness:
        rows = harness.main(["--reference"])
        medians = [re.search(r"median ([\d.]+)%", harness.summary_line(rows, radio, medium))[1]
                   for radio, medium in ((False, None), (True, "wifi-80211p"), (True, "lte"))]
    counts = [sum(r["medium"] == m for r in rows) for m in ("p2p", "wifi-80211p", "lte")]
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert (f"{counts[0]} point-to-point cases, {counts[1]} 802.11p cells and {counts[2]} LTE "
            f"cells") in text
    assert f"{medians[0]}%, {medians[1]}% and {medians[2]}%" in text


def markdown_pages() -> list[Path]:
    return [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(page):
    if not page.exists():
        pytest.skip(f"{page.name} does not exist")
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page
        if not (page.parent / target.split("#")[0]).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"


def test_docs_benchmarks_is_what_the_renderer_makes_of_the_results():
    with benchmark_module("report") as report:
        rendered = report.render()
    assert (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8") == rendered, \
        "run python benchmarks/report.py"


def test_ci_runs_the_long_tests_the_readme_names():
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'long_command=".venv/bin/python -m pytest -m long"' in ci
    assert "`.venv/bin/python -m pytest -m long`" in README.read_text(encoding="utf-8")
