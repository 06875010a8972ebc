"""Draw the partition pictures of docs/models/learning.md (docs/models/img/partition-*.png).

    python docs/models/figures.py

Each picture is the ``partition.png`` a run writes, for 20 clients under 4 edge servers on
Fashion-MNIST (scikit-learn's digits where Fashion-MNIST is absent).
"""

from __future__ import annotations

from pathlib import Path

from netfl import load_scenario
from netfl.results.plots import plot_partition
from netfl.simulation import Simulation

OUT = Path(__file__).parent / "img"
PARTITIONS = {
    "iid": {"kind": "iid"},
    "dirichlet": {"kind": "dirichlet", "alpha": 0.3},
    "dirichlet-normal-sizes": {"kind": "dirichlet", "alpha": 0.3,
                               "sizes": {"kind": "normal", "mean": 110, "std": 45}},
    "labels": {"kind": "labels", "per_client": 2},
    "edge-labels": {"kind": "edge-labels", "per_edge": 4, "per_client": 2},
    "edge-iid-dirichlet": {"kind": "edge-iid-dirichlet", "alpha": 0.3},
}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    dataset = "fashion-mnist"
    for name, partition in PARTITIONS.items():
        scenario = {
            "name": f"partition-{name}", "seed": 0,
            "world": {"kind": "edge", "clients": 20, "edge_servers": 4},
            "data": {"dataset": dataset, "partition": partition, "download": False},
            "model": {"kind": "fake"}, "algorithm": {"kind": "hier-fedavg"},
        }
        try:
            simulation = Simulation(load_scenario(scenario), with_model=False)
        except Exception:  # no Fashion-MNIST here: fall back to the bundled digits
            dataset = scenario["data"]["dataset"] = "digits"
            simulation = Simulation(load_scenario(scenario), with_model=False)
        table = simulation.partition_table()
        path = plot_partition(table, OUT, f"{name}: {partition}")
        path.rename(OUT / f"partition-{name}.png")
        print(OUT / f"partition-{name}.png")


if __name__ == "__main__":
    main()
