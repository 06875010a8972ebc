"""``netfl reproduce --quick`` end to end, as CI runs it: every section's short runs, the
document with its tables, figures and verdicts (about 8 minutes on 2 cores; needs Fashion-MNIST;
under the ``long`` marker)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from netfl.reproduction.document import block_body
from netfl.reproduction.plan import load_plans
from netfl.reproduction.readings import judged_findings
from tests.conftest import needs_fashion_mnist

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.long
@needs_fashion_mnist
def test_quick_reproduction_runs_end_to_end(tmp_path):
    out, doc = tmp_path / "quick", tmp_path / "quick" / "reproduction.md"
    done = subprocess.run([sys.executable, "-m", "netfl", "reproduce", "--quick", "--out",
                           str(out), "--doc", str(doc), "-q"], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800, env={**os.environ, "COLUMNS": "400"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = doc.read_text()
    plans = load_plans(ROOT / "scenarios" / "reproduction")
    for plan in plans:
        assert f"<!-- reproduction:{plan.section} -->" in text
    findings = [f for p in plans for f in p.findings]
    judged = [f for p in plans for s in p.studies for f in judged_findings(s, p.findings)]
    assert (f"{doc}: {len(judged)} verdicts on {len(findings)} findings" in done.stdout)
    verdicts = re.findall(r"\*\*(reproduced in direction only|reproduced|not reproduced|not "
                          r"run|not judged)\*\*", block_body(text, "verdicts"))
    assert len(verdicts) == len(judged)  # one per finding, reading and target
    # every run the quick mode asks for finished: no table cell is left without runs
    assert "| not run |" not in text
    assert "| nan" not in text and "inf |" not in text
    figures = list((out / "img" / "reproduction").glob("*.png"))
    assert any("crossover" in f.name for f in figures) and len(figures) >= 8
    assert (out / "host_times.json").is_file()
