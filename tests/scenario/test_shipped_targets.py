"""Every shipped short, IoV and LEO scenario keeps its word about its target.

Running them takes minutes each, so this is a text check: a scenario with a
``stop.target_accuracy`` says beside it (on its line, on the comment lines right after it, or on
the comment lines right above it or above its ``stop:``) whether a run of the current code
reaches it ("reached at T s, round R") or not ("not reached", with what it does reach). Whoever
changes a scenario's results sees the sentence to mend next to the number.
"""

import re
from pathlib import Path

import pytest
import yaml

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SHIPPED = sorted([SCENARIOS / "quickstart.yaml", *SCENARIOS.glob("*/short-*.yaml"),
                  *SCENARIOS.glob("iov/*.yaml"), *SCENARIOS.glob("leo/*.yaml")])


def _comments_round(lines: list[str], i: int) -> str:
    """The comment text on line ``i``, on the comment-only lines after it, and on those above
    it (or above the ``stop:`` line that holds it)."""
    def comment_only(j: int) -> bool:
        return 0 <= j < len(lines) and lines[j].lstrip().startswith("#")

    found = [lines[i].partition("#")[2]]
    j = i + 1
    while comment_only(j):
        found.append(lines[j])
        j += 1
    top = i
    if not lines[i].startswith("stop") and top > 0 and lines[top - 1].startswith("stop:"):
        top -= 1
    j = top - 1
    while comment_only(j):
        found.append(lines[j])
        j -= 1
    return " ".join(found)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_a_shipped_target_says_whether_it_is_reached(path):
    text = path.read_text()
    target = (yaml.safe_load(text).get("stop") or {}).get("target_accuracy")
    if target is None:
        return  # stopped by a budget (Group-FEL's max_cost): no target to keep
    lines = text.splitlines()
    [i] = [n for n, line in enumerate(lines)
           if "target_accuracy" in line.partition("#")[0]]
    said = _comments_round(lines, i)
    reached = re.search(r"(?<!not )reached at [\d,.]+ s, round \d+", said)
    missed = re.search(r"not reached", said) and re.search(r"0\.\d+", said)
    assert reached or missed, (
        f"{path.relative_to(SCENARIOS)}: stop.target_accuracy {target} says neither 'reached "
        "at T s, round R' nor 'not reached' with the accuracy it does reach")


def test_the_check_covers_every_family():
    names = {p.relative_to(SCENARIOS).parts[0] for p in SHIPPED}
    assert {"quickstart.yaml", "chfl", "fedchs", "group_fel", "hfl_pwp", "iov", "leo"} <= names


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("iov/*.yaml")),
                         ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_an_iov_scenarios_traffic_outlasts_its_run(path):
    """Past ``traffic.duration`` no vehicle arrives and the road empties: a run still going then
    idles on an empty road (iov/short with one hour of traffic and no max_sim_time: 262 rounds
    of idle waits after its last vehicle, ending at 0.732 below its target). Built-in traffic
    must last at least until ``stop.max_sim_time``; a SUMO trace brings its own end (the file
    says it)."""
    from netfl import load_scenario

    scenario = load_scenario(path)
    if scenario.world.road.kind == "fcd":
        return
    assert scenario.stop.max_sim_time is not None, "no max_sim_time: the run may outlast traffic"
    assert scenario.stop.max_sim_time <= scenario.world.traffic.duration
