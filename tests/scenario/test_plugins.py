"""The plug-in registry checks Specs only: validating a scenario that names plug-ins imports
neither the algorithms, the network, the compute layer, the world nor learn, and a Spec that
declares what the schema cannot use is named at its kind."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap

import pytest

import netfl
from netfl.scenario.plugins import clear_cache
from tests.conftest import TINY

# A plug-in of each kind whose module imports only the scenario layer: its classes are what
# the schema sees (Specs), not yet what netfl builds (an Algorithm, a build, a split, a load).
PLUGIN = """
from typing import ClassVar

from netfl.scenario.algorithm_base import AlgorithmSpec
from netfl.scenario.model_base import TorchModel
from netfl.scenario.types import Section


class LightSpec(AlgorithmSpec):
    kind: str
    WORLDS = ("edge",)
    USES_CLOUD = True


class Light:
    Spec = LightSpec


class TinyModelSpec(TorchModel):
    kind: str
    width: int = 4


class TinyModel:
    Spec = TinyModelSpec


class HalvesSpec(Section):
    kind: str


class Halves:
    Spec = HalvesSpec
"""

VALIDATE = """
import json, sys
import netfl
scenario = json.loads(sys.argv[1])
netfl.load_scenario(scenario)
print(json.dumps(sorted(sys.modules)))
"""


@pytest.fixture(autouse=True)
def _fresh_plugins():
    clear_cache()
    yield
    clear_cache()


def plugin_scenario(module: str) -> dict:
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": f"{module}:Light", "rounds": 2}
    scenario["model"] = {"kind": f"{module}:TinyModel", "width": 8}
    scenario["data"]["partition"] = {"kind": f"{module}:Halves"}
    return scenario


def test_validating_plugins_imports_no_layer_above_the_schema(tmp_path):
    module = "light_plugins_" + "".join(c if c.isalnum() else "_" for c in tmp_path.name)
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(PLUGIN))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])}
    result = subprocess.run([sys.executable, "-c", VALIDATE,
                             json.dumps(plugin_scenario(module))],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    modules = json.loads(result.stdout)
    assert module in modules  # the plug-in was loaded, and its Specs validated
    above = [m for m in modules if m.split(".")[:2] in (
        ["netfl", "algorithms"], ["netfl", "network"], ["netfl", "compute"],
        ["netfl", "world"], ["netfl", "learn"])]
    assert above == []
    assert "torch" not in modules


@pytest.mark.parametrize("declaration, words", [
    ('WORLDS = "edge"', "its Spec's WORLDS must be a tuple of world kinds (edge, iov, leo), "
                        "got 'edge'"),
    ('WORLDS = ("edge", "mars")', "WORLDS must be a tuple of world kinds"),
    ("USES_CLOUD = 1", "its Spec's USES_CLOUD must be True or False, got 1"),
    ("check_scenario: ClassVar = None", "its Spec's check_scenario must be a method"),
])
def test_an_algorithm_spec_that_declares_what_the_schema_cannot_read_is_named(
        tmp_path, monkeypatch, declaration, words):
    module = "bad_plugins_" + "".join(c if c.isalnum() else "_" for c in tmp_path.name)
    body = textwrap.dedent(PLUGIN).replace("    USES_CLOUD = True\n",
                                           f"    USES_CLOUD = True\n    {declaration}\n")
    (tmp_path / f"{module}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    scenario = copy.deepcopy(TINY)
    scenario["algorithm"] = {"kind": f"{module}:Light"}
    with pytest.raises(netfl.ScenarioError) as info:
        netfl.load_scenario(scenario)
    [problem] = info.value.problems
    assert problem.path == "algorithm.kind" and words in problem.message
