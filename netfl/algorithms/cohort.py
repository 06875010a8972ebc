"""An exchange advanced in closed form (``links.closed_form``): the clients' downloads, local
computations and uploads computed at once instead of simulated event by event.

Where every client of an exchange has its access link to the server to itself
(``netfl.network.own_links``) and a device that runs a job at once for exactly its train time
(``Fleet.closed_form_ready``), nothing another process does can change the clients' times, so
they follow in closed form: each download's arrival (the transport's set-up, slow start and
last bit on the client's own link), then its computation, then its upload. The exchange then
waits once, until the last upload arrives, and books what happened as the per-event path
would: every transfer on its channel and as a TransferEnd record, every computation as a
TrainEnd record, all stamped with their own times and emitted in the order of those times.
Its clients' links and devices are reserved until then; an algorithm that uses one of them
meanwhile is stopped with a SimulationError naming the option.

The exchange is simulated event by event instead where any of this does not hold, where the
exchange waits for the first K updates or a deadline, where the server broadcasts, where the
events table or the timeline wants a transfer's or a computation's start, or where the last
upload would arrive at or after ``stop.max_sim_time``. The times equal the per-event path's
to float rounding (tests/algorithms/test_cohort.py holds them to 1e-9).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass

import numpy as np
import simpy

from netfl.errors import SimulationError
from netfl.network.own_links import book_flows, book_transfer, own_link, transfer_times
from netfl.sim.trace import (
    ExchangeBooked,
    HopEnd,
    TrainEnd,
    TrainStart,
    TransferEnd,
    TransferStart,
)

DOWNLOAD, TRAIN, UPLOAD = 0, 1, 2


@dataclass
class CohortPlan:
    """An exchange's times in closed form: per client (in order), its link, when its download
    starts and arrives, when its computation ends and when its upload arrives (and the
    first and last bits of each transfer, for the channels' statistics)."""

    server: str
    clients: list[str]
    links: list
    start: float
    down: tuple[np.ndarray, np.ndarray, np.ndarray]
    trained: np.ndarray
    up: tuple[np.ndarray, np.ndarray, np.ndarray]

    @property
    def end(self) -> float:
        return float(self.up[2].max())


def plan_cohort(algorithm, server: str, clients: Sequence[str], steps: int) -> CohortPlan | None:
    """The exchange's times in closed form, or None where it must be simulated event by event
    (module docstring)."""
    network, fleet, trace = algorithm._network, algorithm._fleet, algorithm._trace
    if (not clients or trace.wants(TransferStart) or trace.wants(TrainStart)
            or len(set(clients)) != len(clients)):
        return None
    links = []
    for client in clients:
        link = own_link(network, server, client)
        if link is None or not fleet.closed_form_ready(client):
            return None
        links.append(link)
    env, trainer, n = algorithm.env, algorithm.trainer, len(clients)
    servers = [server] * n
    start = env.now
    down = transfer_times(network, links, servers, list(clients), algorithm.download_bytes,
                          np.full(n, start))
    index, batch = algorithm._client_index, algorithm.spec.batch_size
    flops = trainer.train_flops_per_sample
    durations = np.array([fleet.train_time_s(c, flops, steps * trainer.samples_per_step(
        index[c], batch)) for c in clients])
    trained = down[2] + durations
    up = transfer_times(network, links, list(clients), servers, algorithm.upload_bytes, trained)
    plan = CohortPlan(server, list(clients), links, start, down, trained, up)
    limit = algorithm.ctx.stop.max_sim_time
    if limit is not None and plan.end >= limit:
        return None
    return plan


def run_cohort(algorithm, plan: CohortPlan, round_: int, steps: int) -> Generator:
    """Wait until the plan's last upload arrives, then book the exchange (module docstring);
    returns its clients (every upload arrived)."""
    network, env = algorithm._network, algorithm.env
    network.reserve(plan.links)
    algorithm.book.local_steps_done += steps * len(plan.clients)
    try:
        yield env.timeout(plan.end - env.now)
    except simpy.Interrupt:
        raise SimulationError(
            f"algorithm {algorithm.spec.kind!r} cancelled an exchange of {plan.server} at "
            f"{env.now:.6g} s that links.closed_form: true advanced in closed form; an exchange "
            f"that may be cancelled is simulated event by event: set links.closed_form: false"
        ) from None
    finally:
        network.reserve(plan.links, held=False)
    book_cohort(algorithm, plan, round_)
    return plan.clients


def book_cohort(algorithm, plan: CohortPlan, round_: int) -> None:
    """Book the plan's flows on their channels, then its transfers and computations: in one
    ExchangeBooked record where every subscriber takes it, else record by record in the order
    of their times (downloads before computations before uploads at equal times, clients in
    order)."""
    network, trace = algorithm._network, algorithm._trace
    if trace.takes_in_bulk(ExchangeBooked, TransferEnd, TrainEnd, HopEnd):
        clients, n = plan.clients, len(plan.clients)
        servers = [plan.server] * n
        down_wire = book_flows(network, plan.links, servers, clients, algorithm.download_bytes,
                               plan.down[0].tolist(), plan.down[1].tolist())
        up_wire = book_flows(network, plan.links, clients, servers, algorithm.upload_bytes,
                             plan.up[0].tolist(), plan.up[1].tolist())
        trace.emit(ExchangeBooked(
            time_s=plan.end, server=plan.server, round=round_, clients=tuple(clients),
            links=tuple(link.name for link in plan.links),
            down_tag=network.tag(plan.server, clients[0]),
            up_tag=network.tag(clients[0], plan.server), down_nbytes=algorithm.download_bytes,
            up_nbytes=algorithm.upload_bytes, up_raw_nbytes=algorithm.download_bytes,
            down_wire_bytes=down_wire, up_wire_bytes=up_wire, start_s=plan.start,
            down_end_s=plan.down[2], trained_s=plan.trained, up_end_s=plan.up[2]))
        return
    down_bytes, up_bytes = algorithm.download_bytes, algorithm.upload_bytes
    n, server, clients, links = len(plan.clients), plan.server, plan.clients, plan.links
    times = np.concatenate([plan.down[2], plan.trained, plan.up[2]])
    for k in np.argsort(times, kind="stable").tolist():
        kind, i = divmod(k, n)
        client = clients[i]
        if kind == DOWNLOAD:
            book_transfer(network, links[i], server, client, down_bytes, down_bytes, plan.start,
                          float(plan.down[0][i]), float(plan.down[1][i]),
                          float(plan.down[2][i]))
        elif kind == TRAIN:
            began, ended = float(plan.down[2][i]), float(plan.trained[i])
            trace.emit(TrainEnd(time_s=ended, node=client, round=round_,
                                duration_s=ended - began, ok=True))
        else:
            book_transfer(network, links[i], client, server, up_bytes, down_bytes,
                          float(plan.trained[i]), float(plan.up[0][i]), float(plan.up[1][i]),
                          float(plan.up[2][i]))
