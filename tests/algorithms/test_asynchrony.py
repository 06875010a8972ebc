"""The asynchronous primitives: mailboxes, versions and staleness, atomic mixes, timers, and
background loops cancelled (and counted) where run() returns."""

from __future__ import annotations

import numpy as np
import pytest

import netfl
from netfl.algorithms.asynchrony import Update
from netfl.algorithms.fedavg import FedAvg
from netfl.simulation import Simulation


def simulation(tiny) -> Simulation:
    tiny["algorithm"] = {"kind": "fedavg", "rounds": 1, "local_steps": 1}
    return Simulation(netfl.load_scenario(tiny))


def run_process(sim, generator):
    process = sim.env.process(generator)
    sim.env.run(process)
    return process.value


def test_receive_takes_updates_in_arrival_order_and_a_timeout_loses_none(tiny):
    sim = simulation(tiny)
    algo, env = sim.algorithm, sim.env
    box = algo.mailbox(sim.world.cloud)

    def arrive(at, name):
        yield env.timeout(at)
        box.deliver(Update(name, np.zeros(1), 0))

    env.process(arrive(5.0, "late"))
    env.process(arrive(2.0, "early"))

    def take():
        nothing = yield from algo.receive(box, timeout=1.0)  # nothing by t = 1
        first = yield from algo.receive(box)
        second = yield from algo.receive(box, timeout=10.0)
        return nothing, first.source, second.source, env.now

    assert run_process(sim, take()) == (None, "early", "late", 5.0)


def test_two_mixes_that_arrive_together_both_count(tiny):
    """A plug-in that read the model before its processor charge ran lost one of two updates
    arriving together; mix applies them one after the other, each to the model the other left."""
    sim = simulation(tiny)
    algo = sim.algorithm
    slot = algo.model_slot(sim.world.cloud, np.zeros(3))
    updates = [Update("a", np.full(3, 1.0), 0), Update("b", np.full(3, 2.0), 0)]
    jobs = [sim.env.process(algo.mix(slot, u, 0.5, "cloud")) for u in updates]
    sim.env.run(sim.env.all_of(jobs))
    # (0 -> 0.5 with a) then (0.5 -> 1.25 with b): both in, in arrival order
    np.testing.assert_allclose(slot.params, np.full(3, 1.25))
    assert slot.version == 2 and [j.value for j in jobs] == [1, 2]
    assert sim.env.now > 0  # each charged to the cloud's processor
    assert algo.staleness(slot, updates[0]) == 2


def test_a_buffered_step_traces_each_update_with_its_staleness(tiny):
    from netfl.sim.trace import ModelMixed

    sim = simulation(tiny)
    seen = []
    sim.trace.subscribe(seen.append, ModelMixed)
    algo = sim.algorithm
    slot = algo.model_slot(sim.world.cloud, np.zeros(2))
    slot.version = 3
    updates = [Update("a", np.ones(2), 1), Update("b", np.ones(2), 3)]
    run_process(sim, algo.apply_model(slot, lambda w: w + 1.0, updates, [0.5, 0.5], "cloud"))
    assert slot.version == 4 and [(r.source, r.staleness, r.version) for r in seen] == [
        ("a", 2, 4), ("b", 0, 4)]


def test_a_ticker_ticks_on_its_period_and_counts_ticks_the_work_overran(tiny):
    sim = simulation(tiny)
    algo, env = sim.algorithm, sim.env

    def loop():
        ticker = algo.every(10.0)
        times = []
        for work in (3.0, 25.0, 1.0):
            tick = yield from ticker.next()
            times.append((tick, env.now))
            yield env.timeout(work)
        return times, ticker.missed

    times, missed = run_process(sim, loop())
    assert times == [(1, 10.0), (2, 20.0), (5, 50.0)] and missed == 2
    with pytest.raises(ValueError, match="positive"):
        algo.every(0.0)


def test_background_loops_are_cancelled_and_counted_where_run_returns(tiny):
    """Loops beside run() that are still uploading when it returns count their transfers as
    cancelled (a plug-in's in-flight work was once counted neither cancelled nor lost)."""

    class Uploads(FedAvg):
        def run(self):
            w = self.trainer.init_params()
            self.evaluate(w, 0)
            for client in self.world.clients[:3]:
                self.background(self.forever(client))
            yield self.env.timeout(0.5)  # in the middle of their first uploads
            self.end_round(1, w)

        def forever(self, client):
            while True:
                yield from self.send(client, self.world.cloud, 10_000_000)

    tiny["algorithm"] = {"kind": "fedavg", "rounds": 1}
    sim = Simulation(netfl.load_scenario(tiny))
    sim.algorithm.__class__ = Uploads
    sim.algorithm._background = []
    sim.run()
    summary = sim.summary()
    assert summary["transfers_cancelled"] == 3 and summary["transfers_delivered"] == 0
    assert sim.env.now == pytest.approx(0.5)  # cancelling took no simulated time


# --------------------------------------------------------------- training when needed

REAL = {"model": {"kind": "mlp", "hidden": [16]}, "output": {"plots": False}}
NEEDED = [
    {"kind": "fedbuff", "rounds": 4, "concurrency": 4, "buffer_size": 3},
    {"kind": "fedasync", "rounds": 8, "concurrency": 3, "rho": 0.01},
    {"kind": "hier-async", "rounds": 3, "concurrency": 3,
     "edge": {"policy": "buffered", "buffer_size": 2}, "cloud": "async"},
    {"kind": "hier-async", "rounds": 3, "concurrency": 2,
     "edge": {"policy": "deadline", "deadline": "0.1 s", "late": "carry"}, "cloud": "sync"},
    {"kind": "async-hfl", "rounds": 3, "concurrency": 2, "edge_rounds": 2}]


def _train_at_arrival(self, client, base, then=None, **solver):
    """train_later as it was: each client trained (and compressed) when its upload arrived."""
    spec = self.spec
    trained = self.trainer.local_train(base, self.indices([client]), spec.local_steps, spec.lr,
                                       spec.batch_size, momentum=spec.momentum,
                                       weight_decay=spec.weight_decay, **solver)[0]
    model = self.compressed_towards(trained, base)
    return model if then is None else then(model)


@pytest.mark.parametrize("algorithm", NEEDED, ids=lambda a: a["kind"] + str(a.get("edge", "")))
def test_training_when_needed_gives_the_floats_of_training_each_at_its_arrival(
        tiny, monkeypatch, algorithm):
    import netfl
    from netfl.algorithms.asynchrony import AsyncPrimitives

    tiny.update(REAL)
    tiny["devices"] = {"clients": {"flops": "0.2 GFLOPS", "jitter": 0.5}}
    tiny["algorithm"] = {"local_steps": 3, "lr": 0.1, "batch_size": 16, **algorithm}
    needed = netfl.run(tiny, write=False)
    monkeypatch.setattr(AsyncPrimitives, "train_later", _train_at_arrival)
    at_arrival = netfl.run(tiny, write=False)
    drop = ("host_time_s", "host_time_s_by_part")
    assert needed.metrics.equals(at_arrival.metrics)
    assert {k: v for k, v in needed.summary.items() if k not in drop} == {
        k: v for k, v in at_arrival.summary.items() if k not in drop}


def test_a_buffer_trains_its_clients_in_one_call(tiny, monkeypatch):
    import netfl
    from netfl.learn.trainer import TorchTrainer

    sizes = []
    original = TorchTrainer.local_train

    def counted(self, params, clients, *args, **kwargs):
        sizes.append(len(list(clients)))
        return original(self, params, clients, *args, **kwargs)

    monkeypatch.setattr(TorchTrainer, "local_train", counted)
    tiny.update(REAL)
    tiny["algorithm"] = {"kind": "fedbuff", "rounds": 3, "concurrency": 4, "buffer_size": 3,
                         "local_steps": 2}
    netfl.run(tiny, write=False)
    assert max(sizes) >= 3  # a buffer of 3 trained together


@pytest.mark.parametrize("algorithm", [
    {"kind": "fedbuff", "rounds": 4, "concurrency": 4, "buffer_size": 2},
    {"kind": "hier-async", "rounds": 3, "concurrency": 2, "edge": "async", "cloud": "async"}])
def test_a_loop_cancelled_at_the_stop_starts_nothing_more(tiny, algorithm):
    """A cancelled transfer returns False to its loop, which once went on to draw the next
    client and start its download at the final instant (24 transfers started, 20 accounted
    for; phantom 'selected' rows). Every transfer started is now delivered, failed or
    cancelled."""
    import netfl
    from netfl.sim.trace import TransferStart
    from netfl.simulation import Simulation

    tiny["algorithm"] = {"local_steps": 2, **algorithm}
    sim = Simulation(netfl.load_scenario(tiny))
    started = []
    sim.trace.subscribe(started.append, TransferStart)
    sim.run()
    s = sim.summary()
    assert len(started) == (s["transfers_delivered"] + s["transfers_failed"]
                            + s["transfers_cancelled"])
