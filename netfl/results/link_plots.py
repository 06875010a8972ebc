"""Heat maps over time: links.png (the most utilised channels' utilisation per time bin,
netfl.results.links) and occupancy.png (clients per cell per time bin,
netfl.results.occupancy). Rows are channels or cells, columns time bins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def _heat_map(table: pd.DataFrame, path: Path, title: str, label: str,
              vmax: float | None) -> Path:
    """Draw ``table`` (index: rows' names, columns: the bins' start times, s) as a heat map."""
    from matplotlib.figure import Figure

    values = table.to_numpy(dtype=float)
    starts = np.asarray(table.columns, dtype=float)
    width = starts[1] - starts[0] if len(starts) > 1 else 1.0
    height = min(max(2.2, 0.28 * len(table) + 1.4), 12.0)
    fig = Figure(figsize=(11, height), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(values, aspect="auto", interpolation="nearest", cmap="viridis",
                      vmin=0.0, vmax=vmax, origin="upper",
                      extent=(starts[0], starts[-1] + width, len(table) - 0.5, -0.5))
    ax.set_yticks(range(len(table)), [str(name) for name in table.index],
                  fontsize=7 if len(table) > 15 else 9)
    ax.set_xlabel("simulated time (s)")
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, label=label, pad=0.01)
    fig.savefig(path, dpi=110)
    return path


def plot_links(table: pd.DataFrame, path: Path, title: str) -> Path | None:
    """links.png from ``links.utilisation_over_time``'s table (most utilised channel on top;
    the colour scale ends at the highest bin's utilisation, at most 1, so that a lightly
    loaded network shows its pattern too); None (nothing drawn) when no channel carried a
    flow."""
    if table is None or table.empty or not len(table.columns):
        return None
    top = float(np.nanmax(table.to_numpy(dtype=float)))
    return _heat_map(table, path, f"{title}: utilisation of the {len(table)} most utilised "
                     f"channels over time", "utilisation in the bin",
                     min(top, 1.0) if top > 0 else 1.0)


def plot_occupancy(table: pd.DataFrame, path: Path, title: str) -> Path | None:
    """occupancy.png from ``occupancy.occupancy_matrix``'s table (time-averaged clients per
    cell in each bin); None (nothing drawn) without cells."""
    if table is None or table.empty or not len(table.columns):
        return None
    top = float(np.nanmax(table.to_numpy(dtype=float)))
    return _heat_map(table, path, f"{title}: clients per cell over time",
                     "clients (mean in the bin)", max(top, 1.0))
