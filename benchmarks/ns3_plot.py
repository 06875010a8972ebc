"""The figure of the ns-3 cross-validation (benchmarks/validate_ns3.py --plot): each case's
error of netfl against ns-3, one marker per netfl transport, cases grouped as in the table."""

from __future__ import annotations

from pathlib import Path

STYLE = {"tcp": ("o", "#1f77b4"), "fluid": ("s", "#ff7f0e"),
         "store-and-forward": ("^", "#7f7f7f"), "dedicated": ("v", "#d62728")}


LABEL_NOTE = {"tcp": " (the default)", "store-and-forward": " (hop by hop, netfl's earlier model)",
              "dedicated": " channel per vehicle, tcp (netfl's earlier IoV model)"}


def plot_validation(by_transport: dict[str, list[dict]], path: Path) -> None:
    """``by_transport``: transport -> rows (validate_ns3.compare) over the same cases."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = next(iter(by_transport.values()))
    radio = all(r["radio"] for r in rows)
    goal = 25 if radio else 10
    names = [r["name"] + ("" if r["comparable"] else " *") for r in rows]
    fig, ax = plt.subplots(figsize=(11, 5.2))
    ax.axhspan(-goal, goal, color="#2ca02c", alpha=0.10, label=f"goal: within {goal}%")
    ax.axhline(0, color="black", linewidth=0.8)
    for transport, transport_rows in by_transport.items():
        marker, colour = STYLE[transport]
        errors = [100 * r["error"] for r in transport_rows]
        clipped = [max(min(e, 150), -100) for e in errors]
        ax.scatter(range(len(errors)), clipped, marker=marker, color=colour, s=28,
                   label=transport + LABEL_NOTE.get(transport, ""), zorder=3)
        off_scale = [(x, e, c) for x, (e, c) in enumerate(zip(errors, clipped, strict=True))
                     if e != c]
        for k, (x, e, c) in enumerate(off_scale):  # staggered so neighbours do not overlap
            ax.annotate(f"{e:+.0f}%", (x, c), textcoords="offset points",
                        xytext=(6, -4 - 10 * (k % 2)), ha="left", fontsize=7, color=colour)
    groups = [r["group"] for r in rows]
    for x in range(1, len(groups)):
        if groups[x] != groups[x - 1]:
            ax.axvline(x - 0.5, color="#cccccc", linewidth=0.8)
    ax.set_xticks(range(len(names)), names, rotation=75, ha="right", fontsize=8)
    ax.set_ylabel("netfl vs ns-3 TCP: error of the last flow's completion (%)")
    ax.set_ylim(-105, 160)
    ax.set_title("netfl's 802.11p medium against ns-3 3.44 (TCP over an 802.11p cell), per case"
                 if radio else "netfl's network against ns-3 3.44 (TCP over point-to-point "
                 "links), per case", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
