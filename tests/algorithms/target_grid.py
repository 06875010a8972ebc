"""What a target-check grid should find, read off a run that evaluated every round."""

from __future__ import annotations

import pandas as pd


def grid_missing_the_crossing(metrics: pd.DataFrame, column: str, target: float, per_round: float,
                              crossing: int):
    """A grid of a few rounds' worth of ``column`` (3.7, 4.3 or 5.3 times ``per_round``) on
    which the round that first reached ``target`` is not checked, and the row a run on that
    grid must stop at: the first update at or after a multiple of the grid whose accuracy
    reaches the target. ``metrics`` holds a row per round."""
    rows = metrics[metrics["round"] > 0]
    for factor in (3.7, 4.3, 5.3):
        grid, mark = factor * per_round, 0
        for row in rows.itertuples():
            if int(getattr(row, column) // grid) > mark:
                mark = int(getattr(row, column) // grid)
                if row.accuracy >= target:
                    if row.round > crossing:
                        return grid, row
                    break
    raise AssertionError("every grid of 3.7-5.3 rounds checks the crossing itself")
