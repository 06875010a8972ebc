"""Every path of scenario validation: each error names file, line, field, value, what is allowed."""

import textwrap

import pytest
import yaml

from netfl import ScenarioError, load_scenario
from netfl.scenario import dump_scenario


def write(tmp_path, data, name="s.yaml"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def problems(source, overrides=()):
    with pytest.raises(ScenarioError) as info:
        load_scenario(source, overrides)
    return info.value.problems


def only(source, overrides=()):
    found = problems(source, overrides)
    assert len(found) == 1, [p.format() for p in found]
    return found[0]


def test_a_valid_scenario_loads_with_units_parsed(tiny):
    tiny["links"]["access"] = {"rate": "1.5 Mbps", "delay": "20 ms"}
    tiny["stop"] = {"max_sim_time": "2 h", "target_accuracy": 0.8}
    scenario = load_scenario(tiny)
    assert scenario.links.access.rate == 1.5e6
    assert scenario.links.access.delay == pytest.approx(0.02)
    assert scenario.stop.max_sim_time == 7200


def test_misspelt_key_names_the_allowed_keys_and_the_closest(tiny):
    tiny["world"]["clientz"] = tiny["world"].pop("clients")
    found = problems(tiny)
    extra = next(p for p in found if p.path == "world.clientz")
    assert "allowed keys: kind, clients, edge_servers" in extra.message
    assert "did you mean 'clients'" in extra.message
    assert any(p.path == "world.clients" and "missing" in p.message for p in found)


def test_keys_inside_a_mapping_of_sections_name_that_section(tiny):
    """A misspelt key under ``energy.radios.<tier>`` lists the radio's keys, not the energy
    section's, and no branch label of its union shows in the path."""
    tiny["devices"]["clients"]["power"] = {"active": "2 W"}
    tiny["devices"]["edge"] = {"flops": "1 GFLOPS", "power": {"active": "2 W"}}
    tiny["energy"] = {"radios": {"edge": {"tx": "1 W", "rxx": "2 W"},
                                 "clients": {"kind": "lte"}}}
    found = {p.path: p for p in problems(tiny)}
    assert "allowed keys: tx, rx" in found["energy.radios.edge.rxx"].message
    assert "did you mean 'rx'" in found["energy.radios.edge.rxx"].message
    assert "'fixed', 'lte-throughput'" in found["energy.radios.clients.kind"].message


def test_bad_unit_names_the_units(tiny):
    tiny["links"]["access"]["rate"] = "10 Mbs"
    p = only(tiny)
    assert p.path == "links.access.rate" and p.value == "10 Mbs"
    assert "unknown rate unit 'Mbs'" in p.message and "Mbps" in p.message


def test_number_without_unit_is_the_base_unit(tiny):
    tiny["links"]["access"]["delay"] = 0.25
    assert load_scenario(tiny).links.access.delay == 0.25


def test_negative_quantity_is_refused(tiny):
    tiny["links"]["access"]["delay"] = "-5 ms"
    p = only(tiny)
    assert p.path == "links.access.delay" and "greater than or equal to 0" in p.message


def test_unknown_kind_lists_the_kinds(tiny):
    tiny["world"]["topology"] = {"kind": "rnig"}
    p = only(tiny)
    assert p.path == "world.topology.kind" and p.value == "rnig"
    assert "'star', 'ring', 'random', 'file'" in p.message


def test_missing_kind_lists_the_kinds(tiny):
    tiny["model"] = {"params": 10}
    p = only(tiny)
    assert p.path == "model" and "needs a 'kind'" in p.message and "mlp" in p.message


def test_fields_of_a_variant_are_checked(tiny):
    tiny["algorithm"]["edge_rounds"] = 0
    p = only(tiny)
    assert p.path == "algorithm.edge_rounds" and "greater than 0" in p.message


def test_a_field_of_another_variant_is_unknown(tiny):
    tiny["algorithm"]["kind"] = "fedavg"
    tiny["algorithm"]["edge_rounds"] = 2
    p = only(tiny)
    assert p.path == "algorithm.edge_rounds" and "clients_per_round" in p.message


def test_cross_field_rules(tiny):
    tiny["world"]["assignment"] = {"kind": "by-size", "sizes": [2, 3]}
    p = only(tiny)
    assert p.path == "world" and "summing to clients=6" in p.message


def test_cross_section_rules(tiny):
    tiny["algorithm"] = {"kind": "fedavg", "clients_per_round": 99}
    p = only(tiny)
    assert "clients_per_round (99) exceeds world.clients (6)" in p.message


def test_every_problem_is_reported_at_once(tiny):
    tiny["seed"] = "x"
    tiny["world"]["clients"] = 0
    tiny["links"]["core"]["rate"] = "fast"
    tiny["algorithm"]["lr"] = -1
    assert {p.path for p in problems(tiny)} == {
        "seed", "world.clients", "links.core.rate", "algorithm.lr"}


def test_problems_carry_the_file_and_line(tmp_path):
    path = write(tmp_path, textwrap.dedent("""\
        name: s
        world:
          kind: edge
          clients: 4
          edge_servers: 2
        model: {kind: fake}
        algorithm:
          kind: fedavg
          rounds: -3
        """))
    p = only(path)
    assert (p.source, p.line, p.path, p.value) == (str(path), 9, "algorithm.rounds", -3)
    assert p.format().startswith(f"{path}:9: algorithm.rounds = -3: ")


def test_missing_file(tmp_path):
    p = only(tmp_path / "nope.yaml")
    assert p.source.endswith("nope.yaml") and "file not found" in p.message


def test_invalid_yaml_gives_the_line(tmp_path):
    p = only(write(tmp_path, "name: a\nworld: [unclosed\n"))
    assert "not valid YAML" in p.message and p.line is not None


def test_not_a_mapping(tmp_path):
    assert "must be a mapping" in only(write(tmp_path, "- a\n- b\n")).message


def test_bad_name_for_a_directory(tiny):
    tiny["name"] = "../escape"
    assert only(tiny).path == "name"


def test_override_sets_nested_fields_and_parses_yaml_values(tiny):
    s = load_scenario(tiny, ["algorithm.rounds=9", "links.access.rate=2 Gbps",
                             "world.topology={kind: ring}", "output.trace=true"])
    assert s.algorithm.rounds == 9 and s.links.access.rate == 2e9
    assert s.world.topology.kind == "ring" and s.output.trace is True


def test_override_switches_kind(tiny):
    tiny["algorithm"].pop("kind")
    tiny["algorithm"]["kind"] = "hier-fedavg"
    assert load_scenario(tiny, ["algorithm.kind=fedavg"]).algorithm.kind == "fedavg"


def test_override_creates_missing_sections(tiny):
    tiny.pop("stop", None)
    assert load_scenario(tiny, ["stop.target_accuracy=0.7"]).stop.target_accuracy == 0.7


def test_override_errors_are_labelled_as_overrides(tiny):
    p = only(tiny, ["algorithm.lr=abc"])
    assert (p.source, p.path, p.value) == ("--set", "algorithm.lr", "abc")


def test_override_misspelt_key(tiny):
    p = only(tiny, ["algorithm.rouds=3"])
    assert p.source == "--set" and "did you mean 'rounds'" in p.message


@pytest.mark.parametrize("text", ["rounds", "=3", "a..b=3"])
def test_override_syntax(tiny, text):
    assert "KEY=VALUE" in only(tiny, [text]).message


def test_override_through_a_value(tiny):
    p = only(tiny, ["seed.x=3"])
    assert "seed is a value" in p.message


def test_override_list_index(tiny):
    tiny["model"] = {"kind": "mlp", "hidden": [8, 8]}
    assert load_scenario(tiny, ["model.hidden.1=4"]).model.hidden == [8, 4]
    assert "no item 5" in only(tiny, ["model.hidden.5=4"]).message


def test_relative_paths_resolve_against_the_scenario_file(tmp_path, tiny):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "assign.csv").write_text("client,edge_server\n")
    tiny["world"]["assignment"] = {"kind": "file", "path": "assign.csv"}
    path = write(tmp_path / "sub", tiny)
    assert load_scenario(path).world.assignment.path == tmp_path / "sub" / "assign.csv"


def test_a_missing_referenced_file(tmp_path, tiny):
    tiny["world"]["assignment"] = {"kind": "file", "path": "nope.csv"}
    p = only(write(tmp_path, tiny))
    assert p.path == "world.assignment.path" and "file not found" in p.message


def test_schedule_intervals_must_be_ordered(tiny):
    tiny["links"]["core"]["availability"] = {"kind": "schedule", "down": [["5 s", "2 s"]]}
    assert "down < up" in only(tiny).message


def test_device_needs_a_preset_or_flops(tiny):
    tiny["devices"]["clients"] = {"jitter": 0.1}
    assert "give a preset or flops" in only(tiny).message


def test_unknown_device_preset_lists_the_presets(tiny):
    tiny["devices"]["clients"] = {"preset": "raspi"}
    p = only(tiny)
    assert p.path == "devices.clients.preset" and "'raspberry-pi-4'" in p.message


def test_the_resolved_scenario_round_trips(tiny):
    scenario = load_scenario(tiny)
    again = load_scenario(yaml.safe_load(dump_scenario(scenario)))
    assert again == scenario


@pytest.mark.parametrize("override, field", [
    ("stop.target_screen_samples=-1", "stop.target_screen_samples"),
    ("model.threads=0", "model.threads"),
    ("algorithm.schedule_period=0", "algorithm.schedule_period"),
    ("algorithm.cov_definition=stdev", "algorithm.cov_definition"),
])
def test_the_new_measurement_and_baseline_fields_are_validated(tiny, override, field):
    if field == "model.threads":
        tiny["model"] = {"kind": "mlp", "hidden": [8]}
    if field == "algorithm.schedule_period":
        tiny["algorithm"]["kind"] = "fedavg"
        tiny["algorithm"].pop("edge_rounds", None)
    if field == "algorithm.cov_definition":
        tiny["algorithm"]["kind"] = "group-fel"
    problem = only(tiny, [override])
    assert problem.format().startswith(f"--set: {field} = ")


def test_an_unknown_transport_lists_the_kinds(tiny):
    tiny["links"]["transport"] = {"kind": "quic"}
    p = only(tiny)
    assert p.path.startswith("links.transport") and p.value == "quic"
    assert all(kind in p.message for kind in ("tcp", "fluid", "store-and-forward"))


def test_tcp_parameters_are_checked_with_the_field_named(tiny):
    tiny["links"]["transport"] = {"kind": "tcp", "mss": 10, "receive_window": "64 KiB"}
    p = only(tiny)
    assert p.path == "links.transport.mss" and p.value == 10
    tiny["links"]["transport"] = {"kind": "tcp", "receive_window": "64 KiB", "handshake": False}
    transport = load_scenario(tiny).links.transport
    assert transport.receive_window == 65536 and not transport.handshake


def test_a_link_class_takes_its_own_transport(tiny):
    tiny["links"]["core"]["transport"] = {"kind": "store-and-forward", "custody_timeout": "10 min"}
    links = load_scenario(tiny).links
    assert links.core.transport.custody_timeout == 600 and links.access.transport is None
    tiny["links"]["core"]["transport"] = {"kind": "carrier-pigeon"}
    assert only(tiny).path.startswith("links.core.transport")


# ------------------------------------------------------------------------- careless input


def test_a_key_written_twice_is_an_error_naming_both_lines(tmp_path):
    p = only(write(tmp_path, "name: a\nseed: 1\nname: b\n"))
    assert p.line == 3 and "'name' appears twice" in p.message and "line 1" in p.message


def test_a_key_written_twice_in_a_nested_section(tmp_path, tiny):
    text = yaml.safe_dump(tiny, sort_keys=False).replace(
        "  clients: 6\n", "  clients: 6\n  clients: 7\n", 1)
    assert "'clients' appears twice" in only(write(tmp_path, text)).message


@pytest.mark.parametrize("data", [b"name: caf\xe9\n", bytes(range(256))])
def test_a_file_that_is_not_utf8_is_named_with_the_byte(tmp_path, data):
    path = tmp_path / "s.yaml"
    path.write_bytes(data)
    p = only(path)
    assert "not UTF-8" in p.message and p.source == str(path)


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    text = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    assert "alias bomb" in only(write(tmp_path, text)).message


def test_aliases_within_reason_still_load(tmp_path, tiny):
    text = yaml.safe_dump(tiny, sort_keys=False).replace(
        "  access:\n", "  access: &access\n", 1).replace("  core:\n", "  core_:\n", 1)
    text = text.replace("  core_:\n", "  backhaul: *access\n  core:\n")
    scenario = load_scenario(write(tmp_path, text))
    assert scenario.links.backhaul.rate == scenario.links.access.rate


def test_nesting_too_deep_is_an_error_not_a_recursion_error(tmp_path):
    assert "nested too deeply" in only(
        write(tmp_path, "name: " + "[" * 100_000 + "]" * 100_000 + "\n")).message


def assert_refused(tiny, field, value, words):
    """Set the dotted ``field`` of ``tiny`` to ``value``: the one problem names it and says
    ``words``."""
    node = tiny
    *parents, last = field.split(".")
    for key in parents:
        node = node[key]
    node[last] = value
    p = only(tiny)
    assert p.path.startswith(field) and words in p.message, p.format()


@pytest.mark.parametrize("field, value, words", [
    ("links.access.delay", float("inf"), "finite"),
    ("links.access.delay", float("nan"), "finite"),
    ("links.access.rate", "1e400 Mbps", "not a finite rate"),
    ("links.retry", {"attempts": 2, "backoff": float("inf")}, "finite"),
    ("seed", True, "valid integer"),
    ("seed", -1, "greater than or equal to 0"),
    ("world.clients", True, "valid integer"),
    ("devices.clients.jitter", 1e6, "less than or equal to 3"),
])
def test_nonsense_numbers_are_named(tiny, field, value, words):
    assert_refused(tiny, field, value, words)


def test_a_boolean_still_sets_a_boolean_field(tiny):
    tiny["output"]["plots"] = True
    assert load_scenario(tiny).output.plots is True


def test_a_problem_found_while_building_names_the_file_and_line(tmp_path, tiny):
    """World, data and partition problems are found when the run is built, after validation:
    their message names the scenario's file and line, not <scenario>."""
    from netfl.simulation import Simulation

    tiny["world"]["clients"] = 5000  # more clients than digits has training samples
    path = write(tmp_path, tiny)
    with pytest.raises(ScenarioError) as info:
        Simulation(load_scenario(path), with_model=False)
    [p] = info.value.problems
    line = path.read_text().splitlines().index("  partition:") + 1
    assert (p.source, p.path, p.line) == (str(path), "data.partition", line)


def test_a_build_problem_from_an_override_is_blamed_on_the_override(tmp_path, tiny):
    from netfl.simulation import Simulation

    tiny["model"]["params"] = 10**9
    tiny["devices"]["clients"] = {"flops": "1 GFLOPS"}
    path = write(tmp_path, tiny)
    with pytest.raises(ScenarioError) as info:
        Simulation(load_scenario(path, ["devices.clients.memory=1 GB"]))
    [p] = info.value.problems
    assert (p.source, p.path, p.line) == ("--set", "devices.clients.memory", None)


@pytest.mark.parametrize("field, value, words", [
    ("links.access.loss", {"kind": "retransmit", "probability": 0.999999,
                           "max_retransmissions": 10**9}, "less than or equal to 1000"),
    ("links.retry", {"attempts": 10**9}, "less than or equal to 1000"),
    ("links.retry", {"attempts": 900, "backoff": "1 s", "backoff_factor": 2},
     "past 1e12 s"),
])
def test_work_that_would_never_end_is_bounded_at_validation(tiny, field, value, words):
    """Retransmission probability 0.999999 with 1e9 retries never ended."""
    assert_refused(tiny, field, value, words)


def test_yaml_merge_keys_still_work(tmp_path, tiny):
    """'<<: *anchor' is YAML's merge, not a key written twice."""
    text = yaml.safe_dump(tiny, sort_keys=False).replace(
        "  access:\n", "  access: &access\n", 1)
    text = text.replace("  core:\n", "  backhaul:\n    <<: *access\n    delay: 3 ms\n  core:\n", 1)
    scenario = load_scenario(write(tmp_path, text))
    assert scenario.links.backhaul.rate == scenario.links.access.rate
    assert scenario.links.backhaul.delay == pytest.approx(0.003)


@pytest.mark.parametrize("override", ["algorithm={kind: fedavg, rounds: 3}",
                                      "algorithm.kind=fedavg"])
def test_switching_the_algorithm_keeps_the_files_shared_keys_and_says_which_it_dropped(
        tiny, override):
    """An override that switches algorithm.kind keeps the file's lr and eval_every (they once
    vanished silently with 'algorithm={...}'), and drops, saying so, what the new kind does
    not take."""
    from netfl.scenario.loader import ScenarioNotice

    tiny["algorithm"] = {"kind": "hier-fedavg", "rounds": 5, "edge_rounds": 3, "lr": 0.3,
                         "eval_every": 4, "local_steps": 2}
    with pytest.warns(ScenarioNotice, match=r"--set algorithm: the file's edge_rounds do not "
                                            r"apply to algorithm.kind 'fedavg'"):
        scenario = load_scenario(tiny, [override])
    algorithm = scenario.algorithm
    assert (algorithm.kind, algorithm.lr, algorithm.eval_every, algorithm.local_steps) == (
        "fedavg", 0.3, 4, 2)
    assert algorithm.rounds == (3 if "rounds" in override else 5)
    # a key the override itself gives that the kind does not take is still an error
    with pytest.raises(ScenarioError, match="edge_rounds"):
        load_scenario(tiny, ["algorithm={kind: fedavg, edge_rounds: 2}"])


def test_an_override_that_keeps_the_kind_or_names_another_section_replaces_it_whole(tiny):
    """Only a switch of the algorithm's kind carries the file's keys over: a section given
    whole with its own kind (or any other section) is what the override says, as before."""
    tiny["algorithm"] = {"kind": "hier-fedavg", "rounds": 5, "lr": 0.3, "eval_every": 4}
    same = load_scenario(tiny, ["algorithm={kind: hier-fedavg, rounds: 3}"]).algorithm
    assert (same.rounds, same.lr, same.eval_every) == (3, 0.05, 1)  # the defaults, not 0.3, 4
    tiny["model"] = {"kind": "mlp", "hidden": [16]}
    with pytest.raises(ScenarioError, match="hidden"):  # nothing dropped quietly elsewhere
        load_scenario(tiny, ["model={kind: fake, hidden: [4]}"])
    assert load_scenario(tiny, ["model={kind: fake}"]).model.kind == "fake"
