"""Scenario files: the pydantic schema, YAML loading, ``--set`` overrides and error reports.

``load_scenario(path_or_dict, overrides)`` is the one way in; ``Scenario`` is the validated result.
"""

from netfl.scenario.loader import dump_scenario, load_scenario, variants
from netfl.scenario.schema import Scenario

__all__ = ["Scenario", "dump_scenario", "load_scenario", "variants"]
