"""Plots of one run. The only module that imports matplotlib (with the Agg backend: no screen)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _time_axis(seconds: pd.Series) -> tuple[pd.Series, str]:
    span = float(seconds.max()) if len(seconds) else 0.0
    if span >= 3 * 3600:
        return seconds / 3600.0, "simulated time (h)"
    if span >= 3 * 60:
        return seconds / 60.0, "simulated time (min)"
    return seconds, "simulated time (s)"


def _bytes_axis(nbytes: pd.Series) -> tuple[pd.Series, str]:
    span = float(nbytes.max()) if len(nbytes) else 0.0
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if span >= scale:
            return nbytes / scale, f"bytes delivered ({unit})"
    return nbytes, "bytes delivered (B)"


def plot_run(metrics: pd.DataFrame, out_dir: Path, title: str,
             target_accuracy: float | None = None) -> list[Path]:
    """Write accuracy_vs_time.png and accuracy_vs_bytes.png; return their paths."""
    plt = _pyplot()
    written = []
    for x_name, axis, filename in (
        ("sim_time_s", _time_axis, "accuracy_vs_time.png"),
        ("bytes_total", _bytes_axis, "accuracy_vs_bytes.png"),
    ):
        x, label = axis(metrics[x_name])
        fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
        ax.plot(x, metrics["accuracy"], marker="o", markersize=3, linewidth=1.5)
        if target_accuracy is not None:
            ax.axhline(target_accuracy, color="grey", linestyle="--", linewidth=1,
                       label=f"target {target_accuracy:g}")
            ax.legend(loc="lower right")
        ax.set_xlabel(label)
        ax.set_ylabel("test accuracy")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = Path(out_dir) / filename
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written
