import pytest
import simpy

from netfl.compute.fleet import Fleet
from netfl.errors import ScenarioError
from netfl.network.helper import build_network
from netfl.scenario.sections import Devices, EdgeWorld, Links
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import Dropout, TraceBus
from netfl.world.edge import build_edge_world


def make_fleet(devices: dict, clients=10, links=None):
    env, trace, streams = simpy.Environment(), TraceBus(), RandomStreams(0)
    world = build_edge_world(EdgeWorld(kind="edge", clients=clients, edge_servers=2),
                             streams.get("world"))
    network = build_network(env, world, Links(**(links or {})), streams, trace)
    return Fleet(env, world, Devices(**devices), streams, trace, network), env, trace


def test_stragglers_are_slower_by_their_factor():
    fleet, *_ = make_fleet({"clients": {"flops": "1 GFLOPS",
                                        "stragglers": {"fraction": 0.3, "slowdown": 5}}})
    slow = [c for c in fleet.world.clients if fleet.slowdown(c) == 5]
    assert len(slow) == 3
    fast = next(c for c in fleet.world.clients if c not in slow)
    assert fleet.train_time_s(slow[0], 1e6, 100) == pytest.approx(
        5 * fleet.train_time_s(fast, 1e6, 100))


def test_server_jobs_queue_beyond_their_accelerators():
    fleet, env, _ = make_fleet({"edge": {"flops": "1 GFLOPS", "accelerators": 2}})
    ends = []

    def job():
        yield from fleet.run_job("e0", 1.0)
        ends.append(env.now)

    for _ in range(3):
        env.process(job())
    env.run()
    assert ends == [1.0, 1.0, 2.0]


def test_a_dropout_fails_transfers_and_voids_training():
    fleet, env, trace = make_fleet({"clients": {"flops": "1 GFLOPS"}},
                                   links={"access": {"rate": "8 Mbps"}})
    dropouts, result = [], {}
    trace.subscribe(dropouts.append, Dropout)

    def upload():
        try:
            yield fleet.network.send("c0", "e0", 1e6)
        except Exception as exc:
            result["upload"] = exc

    def drop():
        yield env.timeout(0.5)
        fleet.set_up("c0", False)
        yield env.timeout(1.0)
        fleet.set_up("c0", True)

    env.process(upload())
    env.process(drop())
    env.run()
    assert type(result["upload"]).__name__ == "TransferFailed"
    assert fleet.dropped_since("c0", 0.0) and not fleet.dropped_since("c0", 0.6)
    assert [(d.time_s, d.up) for d in dropouts] == [(0.5, False), (1.5, True)]


def test_availability_trace(tmp_path):
    path = tmp_path / "avail.csv"
    path.write_text("client,down_s,up_s\n0,1,2\n0,5,6\n3,0.5,9\n")
    fleet, env, trace = make_fleet({"clients": {"flops": "1 GFLOPS", "availability": {
        "kind": "trace", "path": path}}})
    log = []
    trace.subscribe(lambda r: log.append((r.time_s, r.node, r.up)), Dropout)
    fleet.start()
    env.run(until=20)
    assert log == [(0.5, "c3", False), (1, "c0", False), (2, "c0", True), (5, "c0", False),
                   (6, "c0", True), (9, "c3", True)]


@pytest.mark.parametrize(("text", "fragment"), [
    ("client,down\n", "header"), ("client,down_s,up_s\n0,a,1\n", "numeric"),
    ("client,down_s,up_s\n99,1,2\n", "not in 0..9"), ("client,down_s,up_s\n0,3,2\n", "down < up"),
    ("client,down_s,up_s\n0,nan,2\n", "finite"), ("client,down_s,up_s\n0,1,inf\n", "finite"),
    (b"client,down_s,up_s\n0,1,2 \xe9t\xe9\n", "not UTF-8"),
    (b"client,down_s,up_s\n0,1\x00,2\n", "numeric"),
])
def test_availability_trace_errors(tmp_path, text, fragment):
    path = tmp_path / "avail.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ScenarioError) as info:
        make_fleet({"clients": {"flops": "1 GFLOPS", "availability": {
            "kind": "trace", "path": path}}})
    p = info.value.problems[0]
    assert p.source == str(path) and fragment in p.message


def test_random_availability_causes_dropouts():
    fleet, env, trace = make_fleet({"clients": {"flops": "1 GFLOPS", "availability": {
        "kind": "random", "mean_up": "10 s", "mean_down": "2 s"}}})
    log = []
    trace.subscribe(log.append, Dropout)
    fleet.start()
    env.run(until=100)
    assert sum(not d.up for d in log) > 20


def test_a_nodes_jitter_does_not_depend_on_other_nodes():
    spec = {"clients": {"flops": "1 GFLOPS", "jitter": 0.5}}
    a, *_ = make_fleet(spec)
    b, *_ = make_fleet(spec)
    first = [a.train_time_s("c0", 1e6, 10) for _ in range(3)]
    mixed = []
    for _ in range(3):
        b.train_time_s("c1", 1e6, 10)
        mixed.append(b.train_time_s("c0", 1e6, 10))
    assert first == mixed and len(set(first)) == 3
