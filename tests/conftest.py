"""Shared fixtures: tiny scenarios (fake model, no torch), hand-built networks, and the marker
of tests that need Fashion-MNIST on this machine."""

from __future__ import annotations

import copy
import importlib.util
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import simpy

from netfl.network.helper import build_network
from netfl.scenario.sections import EdgeWorld, Links
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import TraceBus
from netfl.world.edge import build_edge_world

TINY = {
    "name": "tiny",
    "seed": 1,
    "world": {"kind": "edge", "clients": 6, "edge_servers": 2},
    # fluid: the algorithm tests check closed forms without TCP's set-up and ramp
    "links": {"access": {"rate": "10 Mbps", "delay": "5 ms"},
              "core": {"rate": "100 Mbps", "delay": "20 ms"}, "transport": {"kind": "fluid"}},
    "devices": {"clients": {"flops": "1 GFLOPS"}},
    "data": {"dataset": "digits", "partition": {"kind": "iid"}},
    "model": {"kind": "fake", "params": 25000, "flops_per_sample": 1e5},
    "algorithm": {"kind": "hier-fedavg", "rounds": 5, "local_steps": 2, "batch_size": 16},
    "output": {"plots": False},
}


def fashion_mnist_folder() -> Path | None:
    """The folder where netfl's loader finds Fashion-MNIST for a scenario without ``data.root``
    (Debian's package, then the cache folder, each also as ``raw/`` and ``FashionMNIST/raw/``:
    the four IDX files, plain or ``.gz``), or None where it would have to download them."""
    from netfl.learn import datasets

    for base in (datasets.DEBIAN_FASHION_MNIST, datasets.default_cache_dir()):
        for folder in (base, base / "raw", base / "FashionMNIST" / "raw"):
            if all((folder / name).is_file() or (folder / f"{name}.gz").is_file()
                   for name in datasets.MNIST_FILES):
                return folder
    return None


# A test that reads Fashion-MNIST itself carries this mark: it runs where the files are (CI
# installs Debian's package) and skips, saying why, on a machine without them; a test never
# downloads a data set. Every other test runs with the Debian folder and the cache hidden (the
# autouse fixture below), so a test that reads the data set without the mark fails on every
# machine, not only on a fresh one without the package.
needs_fashion_mnist = pytest.mark.fashion_mnist

FASHION_MNIST_MISSING = (
    "Fashion-MNIST is not on this machine (apt-get install dataset-fashion-mnist, or its four "
    "IDX files in ~/.cache/netfl/datasets)")
# The path the loader is pointed at in an unmarked test: its name, in the loader's list of the
# folders it searched, says what is wrong.
UNMARKED_DATA_FOLDER = Path("/nonexistent/a-test-that-reads-fashion-mnist-needs-the-"
                            "needs_fashion_mnist-mark")


def pytest_collection_modifyitems(config, items):
    if fashion_mnist_folder() is not None:
        return
    skip = pytest.mark.skip(reason=FASHION_MNIST_MISSING)
    for item in items:
        if item.get_closest_marker("fashion_mnist") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def hide_fashion_mnist_unless_marked(request, monkeypatch):
    """Point netfl's Fashion-MNIST search (Debian's folder and the cache) at a folder that does
    not exist, unless the test carries ``needs_fashion_mnist``."""
    if request.node.get_closest_marker("fashion_mnist") is None:
        from netfl.learn import datasets

        monkeypatch.setattr(datasets, "DEBIAN_FASHION_MNIST", UNMARKED_DATA_FOLDER)
        monkeypatch.setattr(datasets, "DEFAULT_CACHE_DIR", UNMARKED_DATA_FOLDER)


@pytest.fixture
def tiny() -> dict:
    """A fresh copy of a tiny fake-model scenario dict (edit freely)."""
    return copy.deepcopy(TINY)


class NetBench:
    """A network on an edge world, with its env and trace, for physics tests. Its transport is
    ``fluid`` unless ``links`` names one: the closed forms the tests check are the fluid ones
    (TCP's set-up and ramp are tested on their own in tests/network/test_transport.py)."""

    def __init__(self, world_spec: dict, links: dict | None = None, seed: int = 0):
        self.env = simpy.Environment()
        self.trace = TraceBus()
        self.records = []
        self.trace.subscribe(self.records.append)
        streams = RandomStreams(seed)
        self.world = build_edge_world(EdgeWorld(kind="edge", **world_spec), streams.get("world"))
        links = {"transport": {"kind": "fluid"}, **(links or {})}
        self.network = build_network(self.env, self.world, Links(**links), streams, self.trace)

    def send_at(self, start_s: float, src: str, dst: str, nbytes: float, out: dict, key):
        """Start a transfer at ``start_s``; store its end time (or the exception) in out[key]."""
        def proc():
            yield self.env.timeout(start_s)
            try:
                yield self.network.send(src, dst, nbytes)
                out[key] = self.env.now
            except Exception as exc:  # the test inspects it
                out[key] = exc
        return self.env.process(proc())


@pytest.fixture
def netbench():
    return NetBench


def write_fcd(path, vehicles: dict[str, list[tuple[float, float, float]]]):
    """A SUMO FCD trace of the given (time, x, y) points per vehicle (straight between them)."""
    steps: dict[float, list[str]] = {}
    for name, points in vehicles.items():
        for t, x, y in points:
            steps.setdefault(t, []).append(f'<vehicle id="{name}" x="{x}" y="{y}" speed="0"/>')
    body = "".join(f'<timestep time="{t}">{"".join(v)}</timestep>'
                   for t, v in sorted(steps.items()))
    path.write_text(f"<fcd-export>{body}</fcd-export>")
    return path


@contextmanager
def benchmark_module(name: str):
    """``benchmarks/<name>.py`` imported as module ``name`` for the block (registered in
    sys.modules meanwhile: dataclasses look their module up by name)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)
