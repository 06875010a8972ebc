"""Draw the comparison pictures of docs/models/group-fel.md from finished runs.

    python docs/models/group_fel_figures.py OUT.png "TITLE" LABEL=RUN_DIR [LABEL=RUN_DIR ...]

Each RUN_DIR is a results folder (with metrics.csv); the picture has one accuracy-vs-cost curve
(eq. 5) per run, as the Group-FEL paper's Figs. 11-13.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from netfl.results.plots import plot_comparison


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        raise SystemExit(__doc__)
    out, title, pairs = Path(argv[0]), argv[1], argv[2:]
    runs = {}
    for pair in pairs:
        label, _, folder = pair.partition("=")
        runs[label] = pd.read_csv(Path(folder) / "metrics.csv")
    print(plot_comparison(runs, "cost_total", out, title))


if __name__ == "__main__":
    main(sys.argv[1:])
