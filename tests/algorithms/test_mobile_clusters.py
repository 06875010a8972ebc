"""CHFL, SFL and HFL-PWP on mobile worlds (IoV, LEO), where the papers' fixed clusters do not
exist: each draws its clients among those an edge server serves when it draws them."""

import pytest

from netfl import load_scenario
from netfl.algorithms.moves import ModelMoves
from netfl.algorithms.rounds import ClientRounds
from netfl.errors import ScenarioError
from netfl.runner import run_scenario
from tests.algorithms.test_fed_chs_leo import USERS, leo_fed_chs
from tests.world.test_iov import iov_scenario

ALGORITHMS = {
    "chfl": {"kind": "chfl", "rounds": 3, "edge_rounds": 2, "clients_per_round": 2,
             "local_steps": 2, "batch_size": 16},
    "sfl": {"kind": "sfl", "rounds": 3, "clients_per_round": 4, "local_steps": 2,
            "batch_size": 16},
    "hfl-pwp": {"kind": "hfl-pwp", "rounds": 3, "master_period": 4, "local_steps": 2,
                "clients_per_round": 2, "eta_c": 3, "batch_size": 16},
}


def mobile(world: str, tiny: dict, algorithm: dict) -> dict:
    if world == "iov":
        scenario = iov_scenario(tiny)
    else:  # a Walker shell with every ISL up, a gateway under the users (HFL-PWP's master)
        scenario = leo_fed_chs(tiny, hours=0.5)
        scenario["world"]["ground_stations"] = {"positions": [list(USERS[0])]}
        scenario["output"] = {"plots": False}
        # the shell has gaps: rounds with nobody in view pass idle until the budget
        scenario["stop"] = {"max_sim_time": "30 min", "max_local_steps": 24}
        algorithm = {**algorithm, "rounds": 100000}
    scenario["algorithm"] = dict(algorithm)
    return scenario


@pytest.mark.parametrize("world", ["iov", "leo"])
@pytest.mark.parametrize("kind", sorted(ALGORITHMS))
def test_a_cluster_algorithm_trains_only_clients_its_edge_serves(world, kind, tiny, monkeypatch):
    # before: these algorithms were refused on mobile worlds (fixed clusters only)
    drawn = []
    original = ClientRounds.train_round

    def recording(self, server, clients, *args, **kwargs):
        if self.world.tier(server) == "edge":
            drawn.append(all(c in self.world.primary_clients_of(server) for c in clients))
        return original(self, server, clients, *args, **kwargs)

    monkeypatch.setattr(ClientRounds, "train_round", recording)
    result = run_scenario(mobile(world, tiny, ALGORITHMS[kind]), write=False)
    assert result.summary["rounds"] >= 1
    assert result.summary["local_steps"] > 0
    assert all(drawn)  # SFL trains on its clients directly (no edge round): nothing drawn here
    assert drawn or kind == "sfl"


@pytest.mark.parametrize("world", ["iov", "leo"])
@pytest.mark.parametrize("field", [{"cluster_periods": [2, 2]}, {"sample_sizes": [1, 3]}])
def test_hfl_pwp_per_cluster_settings_are_refused_where_clusters_move(world, field, tiny):
    scenario = mobile(world, tiny, {**ALGORITHMS["hfl-pwp"], **field})
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario)
    name = next(iter(field))
    assert f"algorithm.{name} gives each cluster its own value" in str(caught.value)
    assert f"on a {world} world clusters change as workers move" in str(caught.value)


@pytest.mark.parametrize("world", ["iov", "leo"])
def test_sfl_keeps_the_model_at_an_edge_server_between_clients_where_they_move(world, tiny,
                                                                             monkeypatch):
    # before: the model went from client to client, and a vehicle that drove off took it along
    moves = []
    original = ModelMoves.carry_model

    def recording(self, holder, node, round_):
        tiers = (holder and self.world.tier(holder), self.world.tier(node))
        after = yield from original(self, holder, node, round_)
        moves.append((holder, node, after == node, *tiers))
        return after

    monkeypatch.setattr(ModelMoves, "carry_model", recording)
    run_scenario(mobile(world, tiny, ALGORITHMS["sfl"]), write=False)
    assert [m for m in moves if m[3:] == ("client", "edge") and m[2]]  # handed back
    # every turn starts from an edge server (or, the first, from nowhere): never from a client
    assert {m[3] for m in moves if m[4] == "client"} <= {None, "edge"}
