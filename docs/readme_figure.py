"""Draw the README's figure (docs/img/accuracy_vs_time.png) from runs it makes itself.

    python docs/readme_figure.py

The quickstart scenario (scenarios/quickstart.yaml: 20 clients under 4 edge servers, each cell a
shared 10 Mbit/s radio) with its cloud further away (core links of 20 Mbit/s and 50 ms instead of
1 Gbit/s and 20 ms), run to its last round rather than stopped at its target, with hierarchical
FedAvg and with flat FedAvg: test accuracy against simulated time, the target accuracy as a
dashed line. The runs are deterministic (seed 7), so the figure is the same on every machine;
they take a few seconds.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import netfl  # noqa: E402

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "quickstart.yaml"
OUT = Path(__file__).parent / "img" / "accuracy_vs_time.png"
DISTANT_CLOUD = ["links.core.rate=20 Mbps", "links.core.delay=50 ms"]
KINDS = {"hier-fedavg": "hierarchical FedAvg", "fedavg": "FedAvg (every round via the cloud)"}


def runs() -> dict[str, netfl.RunResult]:
    """The figure's runs, by algorithm kind (nothing written to disk)."""
    return {kind: netfl.run(netfl.load_scenario(SCENARIO, overrides=[
        f"algorithm.kind={kind}", "stop.at_target=false", "output.plots=false", *DISTANT_CLOUD]),
        write=False) for kind in KINDS}


def main() -> None:
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    for kind, result in runs().items():
        label, target = KINDS[kind], result.scenario.stop.target_accuracy
        metrics, reached = result.metrics, result.summary["time_to_target_s"]
        (line,) = ax.plot(metrics["sim_time_s"], metrics["accuracy"],
                          label=f"{label}: target at {reached:.1f} s")
        ax.plot([reached], [target], "o", color=line.get_color())
        print(f"{kind}: time to target {result.summary['time_to_target_s']:.1f} s, "
              f"final accuracy {result.summary['final_accuracy']:.3f}")
    ax.axhline(target, color="grey", linestyle="--", linewidth=1,
               label=f"target accuracy {target:g}")
    ax.set(xlabel="simulated time (s)", ylabel="test accuracy", ylim=(0, 1))
    ax.set_title("20 clients, 4 edge servers, the cloud 50 ms away", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    OUT.parent.mkdir(exist_ok=True)
    fig.savefig(OUT, dpi=100)
    print(OUT)


if __name__ == "__main__":
    main()
