"""The README shows what its commands print: the quickstart's output is run here and compared,
so the page cannot go stale (it once showed the target at round 19 when runs reached it at 15)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "$ netfl run scenarios/quickstart.yaml"


def shown_output() -> list[str]:
    """The lines the README shows under the quickstart command, up to the closing fence."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(COMMAND) + 1
    return lines[start:lines.index("```", start)]


def comparable(line: str) -> str:
    """A line less what differs between identical runs: host time, the run id's timestamp."""
    line = re.sub(r"in [\d.]+ s host time", "in <host> s host time", line)
    return re.sub(r"results: .*", "results: <folder>", line)


def test_the_readme_shows_what_the_quickstart_prints(tmp_path):
    run = subprocess.run([sys.executable, "-m", "netfl", "run", "scenarios/quickstart.yaml",
                          "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin",
                                           "HOME": str(Path.home())})
    assert run.returncode == 0, run.stderr
    printed = [comparable(line) for line in run.stdout.splitlines()]
    bar, *shown = shown_output()
    assert printed == [comparable(line) for line in shown]
    progress = re.search(r"\d+/\d+ rounds · sim [^·]+ · acc [\d.]+", bar).group(0)
    assert progress in run.stderr  # the bar's last state, as shown
