"""What FedAsync and FedBuff share: a cloud that keeps ``concurrency`` clients training at
once, each cycle a download of the server's current version, local training on the client's
device, and an upload into the server's mailbox.

    loop (concurrency times, in the background):
        k <- a client drawn uniformly from the idle ones present    (sampling stream)
        (x, tau) <- the server's model and version                  (download)
        x_k <- local training of k from x                           (local_steps on its device)
        send what the algorithm's client sends (a model, a delta)   (upload) -> the mailbox

A cycle whose download, training or upload fails (a dropout, a vehicle leaving, no contact)
frees its client and starts the next; it is counted in the trace as any failed transfer is.
Real training runs from the model the client downloaded once its update is needed (batched
with every other one waiting: ``train_later``): message sizes do not depend on values, so
this is exact.
"""

from __future__ import annotations

from collections.abc import Generator

from netfl.algorithms.asynchrony import Mailbox, ModelSlot, Update
from netfl.algorithms.base import Algorithm


class AsyncClients(Algorithm):
    """The client side of a cloud-served asynchronous algorithm; subclasses write ``run()``
    (the server) and ``client_message`` (what a client sends)."""

    def open_server(self) -> tuple[ModelSlot, Mailbox] | None:
        """The cloud's model (the initial parameters, version 0, evaluated) and mailbox, with
        the client loops started; None where that evaluation ended the run."""
        cloud = self.world.cloud
        slot = self.model_slot(cloud, self.trainer.init_params())
        if self.evaluate(slot.params, 0):
            return None
        box = self.mailbox(cloud)
        self.start_clients(slot, box)
        return slot, box

    def start_clients(self, slot: ModelSlot, box: Mailbox) -> None:
        """``concurrency`` client loops beside ``run()``."""
        self.idle = set(self.world.clients)
        for _ in range(self.spec.concurrency):
            self.background(self.client_loop(slot, box))

    def client_loop(self, slot: ModelSlot, box: Mailbox) -> Generator:
        cloud = self.world.cloud
        while True:
            present = [c for c in self.world.present_clients() if c in self.idle]
            if not present:  # (a worker's wait is not a round of the server's: not counted)
                yield self.env.timeout(self.spec.idle_wait)
                continue
            client = self.sample_clients(present, 1)[0]
            self.idle.discard(client)
            base, version = slot.params, slot.version
            self.select(cloud, [client], version)
            arrived = ((yield from self.send(cloud, client, self.download_bytes))
                       and (yield from self.local_compute(client, version, self.spec.local_steps))
                       and (yield from self.send_up(client, cloud)))
            self.idle.add(client)
            if arrived:
                box.deliver(Update(client, self.client_message(client, base), version,
                                   float(self.data_sizes([client])[0])))

    def train_client(self, client: str, base, then=None, **solver):
        """``local_steps`` of real SGD for ``client`` from ``base``: the model the server
        reconstructs of it (compressed as the scenario says), ``then`` applied; trained when
        first needed, batched with the others waiting (``train_later``)."""
        return self.train_later(client, base, then, **solver)

    def client_message(self, client: str, base):
        raise NotImplementedError
