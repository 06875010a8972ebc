"""The user's own algorithms: the example package of examples/netfl-example (installed
by the README's test command) on every world and in a sweep, ``module:Class`` references, and
every way an extension can be wrong, each a clear error."""

from __future__ import annotations

import copy
import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import netfl
from netfl.cli import app
from netfl.extensions import clear_cache, installed
from netfl.sweep import DaskExecutor, LocalExecutor, load_sweep, read_index, run_sweep
from tests.conftest import TINY

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "hier-prox-momentum"
FAST = ["model={kind: fake}", "data={dataset: synthetic, partition: {kind: dirichlet, "
        "alpha: 0.6}}"]


@pytest.fixture(autouse=True)
def _fresh_extensions():
    clear_cache()
    yield
    clear_cache()


def test_the_example_package_is_installed():
    assert EXAMPLE in installed(), (
        "install examples/netfl-example (the README's test command does: pip install -e "
        "'.[dev]' -e examples/netfl-example)")


@pytest.mark.parametrize("base", ["quickstart.yaml", "iov/short.yaml", "leo/short.yaml"])
def test_the_example_algorithm_runs_on_every_world(base):
    scenario = netfl.load_scenario(ROOT / "scenarios" / base, [
        f"algorithm={{kind: {EXAMPLE}, rounds: 3, mu: 0.01, beta: 0.5}}", *FAST])
    result = netfl.run(scenario, write=False)
    assert result.summary["algorithm"] == EXAMPLE and result.summary["rounds"] == 3
    assert result.summary["bytes_by_tag"]["edge->cloud"] > 0  # it did go through the cloud


def test_the_example_learns_with_a_real_model():
    scenario = netfl.load_scenario(ROOT / "scenarios" / "quickstart.yaml",
                                   [f"algorithm={{kind: {EXAMPLE}, rounds: 20, lr: 0.1}}"])
    assert netfl.run(scenario, write=False).summary["final_accuracy"] > 0.85


def test_its_parameters_are_checked_with_file_line_and_field(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**TINY, "algorithm": {"kind": EXAMPLE, "beta": 1.5,
                                                           "muu": 1}}, sort_keys=False))
    with pytest.raises(netfl.ScenarioError) as info:
        netfl.load_scenario(path)
    found = {p.path: p for p in info.value.problems}
    line = path.read_text().splitlines().index("  beta: 1.5") + 1
    assert found["algorithm.beta"].line == line and found["algorithm.beta"].value == 1.5
    assert "less than 1" in found["algorithm.beta"].message
    assert "did you mean 'mu'" in found["algorithm.muu"].message


def test_a_scenario_with_the_extension_round_trips_and_sweeps_against_a_builtin(tmp_path):
    """The resolved scenario reloads, and a sweep (worker processes: the Spec pickles) runs
    the extension beside hier-fedavg."""
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": EXAMPLE, "rounds": 3}
    resolved = netfl.run(scenario, out_dir=tmp_path / "one")
    again = netfl.load_scenario(resolved.path / "scenario.yaml")
    assert again.algorithm == resolved.scenario.algorithm
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({**scenario, "sweep": {"grid": {
        "algorithm.kind": [EXAMPLE, "hier-fedavg"]}}}))
    result = run_sweep(load_sweep(path), tmp_path / "sweep", LocalExecutor(workers=2))
    assert result.counts["done"] == 2
    local = read_index(tmp_path / "sweep").set_index("algorithm")
    assert sorted(local.index) == ["hier-fedavg", EXAMPLE]
    dask = run_sweep(load_sweep(path), tmp_path / "dask", DaskExecutor(workers=1))
    assert dask.counts["done"] == 2
    on_dask = read_index(tmp_path / "dask").set_index("algorithm")
    for column in ("final_accuracy", "sim_time_s", "bytes_total"):
        assert list(on_dask.loc[local.index, column]) == list(local[column])


def test_netfl_list_shows_installed_extensions():
    result = CliRunner().invoke(app, ["list", "algorithms"])
    assert result.exit_code == 0 and EXAMPLE in result.output and "netfl-example" in result.output


# ------------------------------------------------------------- module:Class references


def write_module(tmp_path, monkeypatch, body: str) -> str:
    """Write ``body`` as a module of a name of its own (imports are cached by name)."""
    name = "my_algos_" + "".join(c if c.isalnum() else "_" for c in tmp_path.name)
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def hook_module(tmp_path, monkeypatch, spec_base: str, hook: str, body: str,
                imports: str = "") -> str:
    """A module with one extension class X: a Spec (subclass of ``spec_base``, given as
    ``module.Class``) with ``kind: str``, and the static method ``hook`` whose code is ``body``
    (one line per statement, in the hook's own indentation). Returns ``module:X``."""
    base_module, base = spec_base.rsplit(".", 1)
    code = "\n".join(["import numpy as np", f"from {base_module} import {base}", imports,
                      "", f"class XSpec({base}):", "    kind: str", "", "class X:",
                      "    Spec = XSpec", "", "    @staticmethod", f"    def {hook}:"]
                     + ["        " + line for line in body.split("\n")])
    name = "my_algos_" + "".join(c if c.isalnum() else "_" for c in tmp_path.name)
    (tmp_path / f"{name}.py").write_text(code + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{name}:X"


GOOD = """
    from netfl.algorithms.base import Algorithm
    from netfl.scenario.algorithm_base import AlgorithmSpec

    class OneShotSpec(AlgorithmSpec):
        kind: str
        WORLDS = ("edge",)

    class OneShot(Algorithm):
        '''Every client trains once from the initial model; the edge averages.'''
        Spec = OneShotSpec

        def run(self):
            w = self.trainer.init_params()
            edge = self.world.edge_servers[0]
            result = yield from self.train_round(edge, self.world.clients_of(edge), w, 1)
            w = yield from self.aggregate(edge, result.updates, result.weights, "edge", 1)
            self.end_round(1, w)
"""


def test_a_module_class_reference_needs_no_installation(tmp_path, monkeypatch):
    module = write_module(tmp_path, monkeypatch, GOOD)
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": f"{module}:OneShot", "rounds": 1}
    result = netfl.run(scenario, write=False)
    assert result.summary["rounds"] == 1 and result.summary["algorithm"] == f"{module}:OneShot"


def test_an_extension_refuses_worlds_it_does_not_declare(tmp_path, monkeypatch):
    module = write_module(tmp_path, monkeypatch, GOOD)
    scenario = yaml.safe_load((ROOT / "scenarios" / "iov" / "short.yaml").read_text())
    scenario["algorithm"] = {"kind": f"{module}:OneShot"}
    with pytest.raises(netfl.ScenarioError, match="declares it runs on edge worlds"):
        netfl.load_scenario(scenario)


CHECKED = GOOD.replace('        WORLDS = ("edge",)\n', '''        WORLDS = ("edge",)
        CHARGES_COST = True

        def check_scenario(self, scenario):
            super().check_scenario(scenario)
            if scenario.world.edge_servers < 3:
                raise ValueError("one-shot needs world.edge_servers >= 3")
''')


def test_an_extension_checks_the_scenario_as_netfls_own_kinds_do(tmp_path, monkeypatch):
    # the hook netfl's own kinds use (netfl.scenario.kinds): an extension's check_scenario
    # runs after the world's and its ValueError is reported like any other; CHARGES_COST
    # lets stop.max_cost through
    module = write_module(tmp_path, monkeypatch, CHECKED)
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": f"{module}:OneShot"}
    scenario["stop"] = {"max_cost": "10 s"}
    scenario["world"] = {**scenario["world"], "edge_servers": 2}
    with pytest.raises(netfl.ScenarioError, match="one-shot needs world.edge_servers >= 3"):
        netfl.load_scenario(scenario)
    scenario["world"]["edge_servers"] = 3
    assert netfl.load_scenario(scenario).stop.max_cost == 10.0


@pytest.mark.parametrize("body, kind, words", [
    (GOOD, "no_such_module:OneShot", "cannot import module 'no_such_module'"),
    (GOOD, "{m}:Nope", "module '{m}' has no attribute 'Nope'"),
    ("raise RuntimeError('boom')\n", "{m}:X", "importing module '{m}' failed: "
     "RuntimeError: boom"),
    ("X = 3\n", "{m}:X", "is 3, not a subclass of netfl.algorithms.base.Algorithm"),
    ("from netfl.algorithms.base import Algorithm\nclass X(Algorithm):\n    pass\n",
     "{m}:X", "needs a Spec attribute"),
    (GOOD.replace("kind: str", "kind: int"), "{m}:OneShot", "must declare 'kind: str'"),
])
def test_a_broken_extension_is_a_clear_error_at_its_kind(tmp_path, monkeypatch, body, kind,
                                                         words):
    module = write_module(tmp_path, monkeypatch, body)
    kind, words = kind.format(m=module), words.format(m=module)
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": kind}
    with pytest.raises(netfl.ScenarioError) as info:
        netfl.load_scenario(scenario)
    [problem] = info.value.problems
    assert problem.path == "algorithm.kind" and problem.value == kind
    assert words in problem.message


NOT_AN_ALGORITHM = """
    from netfl.scenario.algorithm_base import AlgorithmSpec

    class NotOneSpec(AlgorithmSpec):
        kind: str

    class NotOne:
        Spec = NotOneSpec
"""


def test_a_class_that_is_no_algorithm_is_named_where_it_is_built(tmp_path, monkeypatch):
    # the schema checks the Spec only (it validates without importing the algorithms);
    # whether the class is an Algorithm is checked when the run is built
    module = write_module(tmp_path, monkeypatch, NOT_AN_ALGORITHM)
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": f"{module}:NotOne"}
    netfl.load_scenario(scenario)
    with pytest.raises(netfl.NetflError, match=f"algorithm '{module}:NotOne' \\(module "
                       f"'{module}'\\) is <class '{module}.NotOne'>, not a subclass of "
                       f"netfl.algorithms.base.Algorithm"):
        netfl.run(scenario, write=False)


def test_an_unknown_kind_mentions_extensions():
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": "hier-prox-momentun"}
    with pytest.raises(netfl.ScenarioError) as info:
        netfl.load_scenario(scenario)
    message = info.value.problems[0].message
    assert ("or an installed extension ('hier-fedbuff', 'hier-first-k', 'hier-prox-momentum')"
            in message)
    assert "'package.module:Class'" in message


def test_the_cli_runs_an_extension_named_in_a_scenario_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**TINY, "algorithm": {"kind": EXAMPLE, "rounds": 2}}))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert f"({EXAMPLE}): 2 rounds" in result.output


def test_the_tutorials_code_is_the_example_packages():
    """docs/extending.md shows code from the example package: each block marked with its file
    must appear there verbatim, so the tutorial cannot drift from the code the tests run."""
    text = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    blocks = text.split("<!-- from: ")[1:]
    assert len(blocks) >= 3
    for block in blocks:
        path, rest = block.split(" -->", 1)
        code = rest.split("```python\n", 1)[1].split("```", 1)[0]
        assert code in (ROOT / path).read_text(encoding="utf-8"), path


# ------------------------------------------------------------- models and partitions


def test_the_example_model_and_partition_are_installed_and_train():
    assert "residual-mlp" in installed("netfl.models")
    assert "zipf-sizes" in installed("netfl.partitions")
    scenario = netfl.load_scenario(ROOT / "scenarios" / "quickstart.yaml", [
        "model={kind: residual-mlp, width: 64, blocks: 1}",
        "data.partition={kind: zipf-sizes, exponent: 0.8}", "algorithm.rounds=10"])
    result = netfl.run(scenario, write=False)
    assert result.summary["final_accuracy"] > 0.8
    assert result.summary["model_params"] == 64 * 64 + 64 + 64 * 64 * 2 + 64 * 2 + 64 * 10 + 10
    assert result.summary["clients"] == 20


@pytest.mark.parametrize("base", ["iov/short.yaml", "leo/short.yaml"])
def test_the_example_partition_splits_a_moving_population(base):
    scenario = netfl.load_scenario(ROOT / "scenarios" / base, [
        "data.partition={kind: zipf-sizes}", "algorithm.rounds=2", "model={kind: fake}",
        "data.dataset=synthetic"])
    assert netfl.run(scenario, write=False).summary["rounds"] == 2


@pytest.mark.parametrize("split, words", [
    ("[[0, 1]]", "gave 1 clients' indices for 6 clients"),
    ("[[0], [0], [1], [2], [3], [4]]", "sample 0 is given twice"),
    ("[[0], [1], [2], [3], [4], []]", "1 clients have no samples ([5])"),
    ("[[10**9], [1], [2], [3], [4], [5]]", "an index is outside"),
])
def test_a_partition_extension_that_does_not_partition_is_named(tmp_path, monkeypatch, split,
                                                                 words):
    kind = hook_module(tmp_path, monkeypatch, "netfl.scenario.types.Section",
                       "split(spec, labels, num_classes, groups, rng)", f"return {split}")
    scenario = copy.deepcopy(TINY)
    scenario["data"]["partition"] = {"kind": kind}
    with pytest.raises(netfl.ScenarioError, match=rf"data.partition: partition '{kind}': "
                       rf"{re.escape(words)}"):
        netfl.run(scenario, write=False)


def test_a_model_extension_that_builds_no_module_is_named(tmp_path, monkeypatch):
    kind = hook_module(tmp_path, monkeypatch, "netfl.scenario.models.TorchModel",
                       "build(spec, input_shape, num_classes)", 'return "a string"')
    scenario = copy.deepcopy(TINY)
    scenario["model"] = {"kind": kind}
    with pytest.raises(netfl.ScenarioError,
                       match="build\\(\\) returned str, not a torch.nn.Module"):
        netfl.run(scenario, write=False)


@pytest.mark.parametrize("section, spec_base, words", [
    ("model", "netfl.scenario.models.TorchModel",
     "not a class with build(spec, input_shape, num_classes)"),
    ("partition", "netfl.scenario.types.Section",
     "not a class with split(spec, labels, num_classes, groups, rng)"),
    ("dataset", "netfl.scenario.types.Section", "not a class with load(spec, n_clients, rng)"),
])
def test_a_class_without_its_hook_is_named_where_it_is_built(tmp_path, monkeypatch, section,
                                                             spec_base, words):
    kind = hook_module(tmp_path, monkeypatch, spec_base, "unrelated()", "pass")
    scenario = copy.deepcopy(TINY)
    if section == "model":
        scenario["model"] = {"kind": kind}
    elif section == "partition":
        scenario["data"]["partition"] = {"kind": kind}
    else:
        scenario["data"]["dataset"] = {"kind": kind}
    netfl.load_scenario(scenario)  # its Spec is valid: the schema asks no more
    with pytest.raises(netfl.NetflError, match=re.escape(words)):
        netfl.run(scenario, write=False)


def test_an_unknown_model_or_partition_kind_mentions_extensions():
    for section, kind in (("model", "residual-mpl"), ("partition", "zipf")):
        scenario = copy.deepcopy(TINY)
        if section == "model":
            scenario["model"] = {"kind": kind}
        else:
            scenario["data"]["partition"] = {"kind": kind}
        with pytest.raises(netfl.ScenarioError) as info:
            netfl.load_scenario(scenario)
        assert "installed extension" in info.value.problems[0].message


# ------------------------------------------------------------------------ data sets


def test_the_example_data_set_is_installed_and_trains():
    assert "blobs" in installed("netfl.datasets")
    scenario = netfl.load_scenario(ROOT / "scenarios" / "quickstart.yaml", [
        "data.dataset={kind: blobs, samples: 3000}", "model={kind: mlp, hidden: [32]}",
        "algorithm.rounds=5", "stop.target_accuracy=null"])
    assert scenario.data.dataset_name == "blobs"
    assert netfl.run(scenario, write=False).summary["final_accuracy"] > 0.9


@pytest.mark.parametrize("returned, words", [
    ("'nothing'", "load\\(\\) returned str, not a netfl.learn.data.Dataset"),
    ("Dataset('x', np.zeros((4, 2)), np.zeros(3, int), np.zeros((2, 2)), np.zeros(2, int), 2)",
     "x_train \\(4, 2\\) and y_train \\(3,\\)"),
    ("Dataset('x', np.zeros((4, 2)), np.full(4, 5), np.zeros((2, 2)), np.zeros(2, int), 2)",
     "a label is not below num_classes"),
])
def test_a_data_set_extension_that_returns_no_data_set_is_named(tmp_path, monkeypatch,
                                                                returned, words):
    kind = hook_module(tmp_path, monkeypatch, "netfl.scenario.types.Section",
                       "load(spec, n_clients, rng)", f"return {returned}",
                       "from netfl.learn.data import Dataset")
    scenario = copy.deepcopy(TINY)
    scenario["data"]["dataset"] = {"kind": kind}
    with pytest.raises(netfl.NetflError, match=rf"dataset '{re.escape(kind)}': {words}"):
        netfl.run(scenario, write=False)


def test_an_unknown_data_set_section_is_named_at_its_kind():
    scenario = copy.deepcopy(TINY)
    scenario["data"]["dataset"] = {"kind": "blobz"}
    with pytest.raises(netfl.ScenarioError) as info:
        netfl.load_scenario(scenario)
    [problem] = info.value.problems
    assert (problem.path, problem.value) == ("data.dataset.kind", "blobz")
    assert "no dataset 'blobz'" in problem.message


@pytest.mark.parametrize("section, hook, body, words", [
    ("partition", "split(spec, labels, num_classes, groups, rng)", "return None",
     "expected one sequence of sample indices per client"),
    ("partition", "split(spec, labels, num_classes, groups, rng)", "return [[0.5]] * 6",
     "sample indices must be integers"),
    ("partition", "split(spec, labels, num_classes, groups, rng)",
     "raise ValueError('bad split')", "its split() raised ValueError: bad split"),
    ("dataset", "load(spec, n_clients, rng)", "raise OSError('no disk')",
     "its load() raised OSError: no disk"),
])
def test_errors_inside_an_extensions_code_name_it(tmp_path, monkeypatch, section, hook, body,
                                                  words):
    """An exception in a hook is an error naming the plug-in and the hook, not a traceback."""
    kind = hook_module(tmp_path, monkeypatch, "netfl.scenario.types.Section", hook, body)
    scenario = copy.deepcopy(TINY)
    if section == "partition":
        scenario["data"]["partition"] = {"kind": kind}
    else:
        scenario["data"]["dataset"] = {"kind": kind}
    with pytest.raises(netfl.NetflError, match=re.escape(words)):
        netfl.run(scenario, write=False)


def test_a_module_that_exits_on_import_is_an_error_not_an_exit(tmp_path, monkeypatch):
    module = write_module(tmp_path, monkeypatch, "import sys\nsys.exit(3)\n")
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": f"{module}:X"}
    with pytest.raises(netfl.ScenarioError, match="importing module .* failed: SystemExit"):
        netfl.load_scenario(scenario)


def test_a_data_set_extensions_float64_features_are_made_float32(tmp_path, monkeypatch):
    kind = hook_module(tmp_path, monkeypatch, "netfl.scenario.types.Section",
                       "load(spec, n_clients, rng)",
                       "x = rng.normal(size=(200, 4))\ny = (x[:, 0] > 0).astype(int)\n"
                       "return Dataset('x', x[:150], y[:150], x[150:], y[150:], 2)",
                       "from netfl.learn.data import Dataset")
    scenario = copy.deepcopy(TINY)
    scenario["data"]["dataset"] = {"kind": kind}
    scenario["model"] = {"kind": "logistic"}
    assert netfl.run(scenario, write=False).summary["final_accuracy"] > 0.5
