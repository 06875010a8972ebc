"""The primitives of netfl.algorithms.base that a user's algorithm is built from: the first K
updates or a deadline, cancelling, the broadcast-aware download, and the clear errors for a
primitive never run and a run() that is not a generator."""

import types

import pytest

from netfl.errors import SimulationError
from netfl.scenario import load_scenario
from netfl.sim.trace import TrainEnd, TransferEnd, TransferFail
from netfl.simulation import Simulation


def algorithm_in(tiny: dict):
    """A Simulation of ``tiny`` whose clients train at different speeds (jitter), its
    algorithm, and the list its trace records go to."""
    tiny["devices"] = {"clients": {"flops": "1 GFLOPS", "jitter": 0.5}}
    sim = Simulation(load_scenario(tiny))
    records: list = []
    sim.trace.subscribe(records.append)
    return sim.algorithm, records


def drive(algorithm, generator):
    """Run ``generator`` as a process to its end; returns (its value, the time it ended)."""
    out = {}

    def process():
        out["value"] = yield from generator
        out["at"] = algorithm.env.now

    algorithm.env.process(process())
    algorithm.env.run()
    return out["value"], out["at"]


def cancelled(records) -> list:
    return [r for r in records if (isinstance(r, TransferFail) and r.reason == "cancelled")
            or (isinstance(r, TrainEnd) and r.cancelled)]


def upload_ends(records, server: str) -> list[float]:
    return sorted(r.time_s for r in records if isinstance(r, TransferEnd) and r.dst == server)


def test_exchange_returns_after_the_first_k_uploads_and_cancels_the_rest(tiny):
    algorithm, records = algorithm_in(tiny)
    server = algorithm.world.edge_servers[0]
    clients = algorithm.world.clients_of(server)
    assert len(clients) == 3
    everyone, _ = drive(algorithm, algorithm.exchange(server, clients, 1, 2))
    assert everyone == clients and not cancelled(records)
    ends = upload_ends(records, server)
    assert ends[0] < ends[1] < ends[2]  # the jitter sets them apart

    algorithm, records = algorithm_in(tiny)
    first, at = drive(algorithm, algorithm.exchange(server, clients, 1, 2, first=2))
    assert len(first) == 2 and at == pytest.approx(ends[1])
    assert upload_ends(records, server) == pytest.approx(ends[:2])
    assert len(cancelled(records)) == 1  # the slowest client, stopped where it was


def test_an_exchange_cut_by_its_deadline_keeps_what_arrived(tiny):
    algorithm, records = algorithm_in(tiny)
    server = algorithm.world.edge_servers[0]
    clients = algorithm.world.clients_of(server)
    drive(algorithm, algorithm.exchange(server, clients, 1, 2))
    ends = upload_ends(records, server)

    algorithm, records = algorithm_in(tiny)
    deadline = (ends[0] + ends[1]) / 2
    got, at = drive(algorithm, algorithm.exchange(server, clients, 1, 2, deadline=deadline))
    assert len(got) == 1 and at == pytest.approx(deadline)
    assert len(cancelled(records)) == 2

    algorithm, records = algorithm_in(tiny)
    got, at = drive(algorithm, algorithm.exchange(server, clients, 1, 2, deadline=ends[0] / 2))
    assert got == [] and algorithm.rounds_without_updates == 1
    assert at == pytest.approx(ends[0] / 2 + algorithm.spec.idle_wait)  # nothing: wait idle
    assert len(cancelled(records)) == 3


def test_wait_for_counts_true_values_and_cancels_the_rest(tiny):
    algorithm, _ = algorithm_in(tiny)
    env = algorithm.env

    def job(delay: float, value):
        yield env.timeout(delay)
        return value

    jobs = [env.process(job(d, v)) for d, v in ((1, False), (2, True), (3, True), (4, True))]
    done, at = drive(algorithm, algorithm.wait_for(jobs, count=2))
    assert done == jobs[1:3] and at == 3
    assert not jobs[3].ok  # cancelled (interrupted), and the run goes on without an error


def test_a_primitive_called_without_yield_from_is_an_error_naming_the_algorithm(tiny):
    sim = Simulation(load_scenario(tiny))
    algorithm = sim.algorithm

    def forgetful_run(self):
        self.send(self.world.cloud, self.world.edge_servers[0], 1000)  # never runs
        yield from self.wait_idle()
        self.end_round(1, self.trainer.init_params())

    algorithm.run = types.MethodType(forgetful_run, algorithm)
    with pytest.raises(SimulationError, match=r"'hier-fedavg'.*self\.send\(\.\.\.\) but never "
                                              r"ran it.*yield from self\.send"):
        sim.run()


def test_a_primitive_dropped_while_a_signal_interrupts_the_run_ends_it_as_interrupted(
        tiny, monkeypatch):
    """A signal's KeyboardInterrupt can land between a primitive's call and its 'yield from'
    (or be swallowed in a finalizer there): that is the signal's doing, not the algorithm's."""
    import netfl.algorithms.base as base

    sim = Simulation(load_scenario(tiny))
    algorithm = sim.algorithm

    def forgetful_run(self):
        self.send(self.world.cloud, self.world.edge_servers[0], 1000)  # cut short by a signal
        yield from self.wait_idle()
        self.end_round(1, self.trainer.init_params())

    algorithm.run = types.MethodType(forgetful_run, algorithm)
    monkeypatch.setattr(base, "interrupted", lambda: True)
    with pytest.raises(KeyboardInterrupt):
        sim.run()


def test_a_run_that_is_not_a_generator_is_an_error_naming_the_algorithm(tiny):
    sim = Simulation(load_scenario(tiny))
    sim.algorithm.run = types.MethodType(lambda self: None, sim.algorithm)
    with pytest.raises(SimulationError, match=r"'hier-fedavg'.*HierFedAvg\): run\(\) must be a "
                                              r"generator"):
        sim.run()


def test_download_puts_the_model_on_the_air_once_where_the_rsu_broadcasts(tiny):
    from tests.world.test_iov import iov_scenario

    def downloads(medium: dict):
        sim = Simulation(load_scenario(iov_scenario(tiny, medium=medium)))
        records: list = []
        sim.trace.subscribe(records.append)
        sim.world.start(sim.env, sim.streams)
        sim.network.start()
        sim.env.run(until=120.0)
        algorithm = sim.algorithm
        rsu = max(algorithm.world.edge_servers, key=lambda e: len(algorithm.world.clients_of(e)))
        clients = algorithm.world.clients_of(rsu)
        assert len(clients) >= 2
        got, _ = drive(algorithm, algorithm.download(rsu, clients))
        ends = [r for r in records if isinstance(r, TransferEnd) and r.src == rsu]
        return clients, got, ends

    clients, got, ends = downloads({"kind": "802.11p", "downlink": "broadcast"})
    assert got and got <= set(clients) and len(ends) == len(got)
    # one transmission heard by every receiver: its bits are shared among their records
    assert sum(r.wire_bytes for r in ends) < 0.9 * sum(r.nbytes for r in ends)
    clients, got, ends = downloads({"kind": "802.11p"})
    assert got and sum(r.wire_bytes for r in ends) > sum(r.nbytes for r in ends)


def test_a_token_interrupted_before_its_init_ran_reports_nothing_when_it_dies():
    # a SIGTERM that lands inside _Started.__init__ left an object with no slot set, and its
    # __del__ printed an AttributeError traceback over the clean "interrupted" message
    from netfl.algorithms.primitive import _Started

    token = _Started.__new__(_Started)
    token.__del__()  # raised AttributeError before the fix
    forgotten: list = []
    _Started("send", forgotten)  # dies at once, never started: reported
    assert forgotten == ["send"]
