"""Sweeps: one scenario over a grid of parameters and seeds, on local processes or Dask.

    sweep = load_sweep("scenarios/sweeps/compare.yaml", grid=["algorithm.lr=0.05,0.1"], seeds=3)
    result = run_sweep(sweep, "results/sweeps/compare", LocalExecutor(workers=4))
    result.rows        # the index: one row per run, its parameters, status and summary

``parse`` reads the grid and the sweep: section, ``grid`` expands and validates the points,
``task`` runs one in a worker, ``executors`` says where, ``runner`` resumes and writes the index,
``progress`` draws the bar. docs/sweeps.md is the guide.
"""

from netfl.sweep.executors import DaskExecutor, LocalExecutor
from netfl.sweep.grid import Point, Sweep, load_sweep
from netfl.sweep.runner import Observer, SweepResult, read_index, run_sweep
from netfl.sweep.task import Outcome

__all__ = ["DaskExecutor", "LocalExecutor", "Observer", "Outcome", "Point", "Sweep",
           "SweepResult", "load_sweep", "read_index", "run_sweep"]
