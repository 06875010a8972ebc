"""Cancelling a transfer: its share of every channel is released at once, and its bits on the
wire are accounted as cancelled (not delivered, not failed)."""

import pytest

from netfl.errors import TransferFailed
from netfl.results.recorder import Recorder
from netfl.sim.trace import TransferEnd, TransferFail, TransferStart
from tests.network.test_access import PASS, SAF, RoadBench

MB = 1e6
CELL = {"rate": "10 Mbps", "delay": "5 ms", "shared": True}  # one 10 Mbit/s cell per edge server
CORE = {"rate": "1 Gbps", "delay": "20 ms"}


def two_uploads(netbench, transport: dict, cancel_at: float | None = 1.0, via_send=True):
    """Two 10 MB uploads from two clients of one shared 10 Mbit/s cell, the second one
    interrupted at ``cancel_at`` (None: never): the process of its ``send`` or (``via_send``
    False) the process running ``yield from transfer``. Returns (bench, recorder, outcomes)."""
    bench = netbench({"clients": 2, "edge_servers": 1},
                     {"access": CELL, "core": CORE, "transport": transport})
    recorder = Recorder(bench.trace, bench.world.tier)
    env, network, out = bench.env, bench.network, {}

    sends = {}

    def upload(key, client):
        try:
            if via_send:  # the send's own process is the one cancelled
                sends[key] = network.send(client, "e0", 10 * MB)
                yield sends[key]
            else:  # the process that runs the transfer is
                yield from network.transfer(client, "e0", 10 * MB)
            out[key] = env.now
        except TransferFailed as failure:
            out[key] = failure

    keep = env.process(upload("kept", "c0"))
    runner = env.process(upload("cancelled", "c1"))

    def cancel():
        yield env.timeout(cancel_at)
        (sends["cancelled"] if via_send else runner).interrupt("cancelled")

    if cancel_at is not None:
        env.process(cancel())
    env.run()
    assert keep.ok
    return bench, recorder, out


def _fluid_end(cancel_at: float, delay_s: float = 0.005) -> float:
    # both at 5 Mbit/s until the cancel, then the rest alone at 10 Mbit/s
    left_bits = 80e6 - 5e6 * cancel_at
    return cancel_at + left_bits / 10e6 + delay_s


@pytest.mark.parametrize("via_send", [True, False])
def test_a_cancelled_upload_frees_its_share_of_the_cell_at_once_fluid(netbench, via_send):
    _, recorder, out = two_uploads(netbench, {"kind": "fluid"}, via_send=via_send)
    assert out["kept"] == pytest.approx(_fluid_end(1.0), rel=1e-12)
    assert isinstance(out["cancelled"], TransferFailed)
    assert out["cancelled"].reason == "cancelled"
    assert recorder.transfers_cancelled == 1
    assert recorder.bytes_cancelled == pytest.approx(5e6 / 8.0)  # 1 s at 5 Mbit/s
    assert recorder.transfers_failed == 0
    assert recorder.transfer_attempts_failed == 0
    assert recorder.bytes_total == 10 * MB
    assert recorder.wire_bytes_total == pytest.approx(10 * MB + 5e6 / 8.0)


def test_a_cancelled_upload_frees_its_share_of_the_cell_at_once_tcp(netbench):
    """With TCP's overheads (the default transport) the other upload ends at 8.81 s, not
    16.6 s as when the cancelled flow kept its share: both send at 5 Mbit/s from the end of the
    handshake (10 ms) to the cancel, then the kept one alone at 10 Mbit/s (slow start's first
    window already exceeds its share), with 54 header bytes per 1448-byte segment."""
    bench, recorder, out = two_uploads(netbench, {"kind": "tcp"})
    wire_bits = 80e6 * (1448 + 54) / 1448
    handshake_s, delay_s = 0.010, 0.005
    expected = 1.0 + (wire_bits - 5e6 * (1.0 - handshake_s)) / 10e6 + delay_s
    assert out["kept"] == pytest.approx(expected, rel=1e-9)
    assert out["kept"] == pytest.approx(8.81, abs=0.01)
    _, _, never = two_uploads(netbench, {"kind": "tcp"}, cancel_at=None)
    assert never["kept"] == pytest.approx(16.6, abs=0.2)  # both all the way
    assert out["cancelled"].reason == "cancelled"
    fails = [r for r in bench.records if isinstance(r, TransferFail)]
    assert len(fails) == 1
    fail = fails[0]
    assert (fail.reason, fail.will_retry, fail.time_s) == ("cancelled", False, 1.0)
    assert fail.wire_bytes == pytest.approx(5e6 * (1.0 - handshake_s) / 8.0, rel=1e-9)
    assert recorder.bytes_cancelled == fail.wire_bytes
    assert recorder.wire_bytes_total == pytest.approx(
        sum(r.wire_bytes for r in bench.records if isinstance(r, TransferEnd)) + fail.wire_bytes)


@pytest.mark.parametrize("cancel_at", [0.001, 0.02, 0.1])
def test_a_cancel_in_tcp_set_up_or_slow_start_starts_nothing_later(netbench, cancel_at):
    """Cancelled in the handshake (2 x 5 ms) or in slow start: no flow is left behind, so the
    other upload gets the whole cell."""
    bench, recorder, out = two_uploads(netbench, {"kind": "tcp"}, cancel_at=cancel_at)
    alone = two_uploads(netbench, {"kind": "tcp"}, cancel_at=0.0)[2]["kept"]
    assert out["cancelled"].reason == "cancelled"
    assert out["kept"] < alone + cancel_at + 0.05
    assert bench.network.fabric.settled
    assert recorder.transfers_cancelled == 1


def test_a_cancel_after_the_last_bit_sent_counts_every_wire_bit(netbench):
    """Interrupted in the propagation tail: everything went on the wire."""
    bench = netbench({"clients": 1, "edge_servers": 1},
                     {"access": {"rate": "8 Mbps", "delay": "100 ms"}, "core": CORE})
    recorder = Recorder(bench.trace, bench.world.tier)
    proc = bench.network.send("c0", "e0", MB)  # last bit sent at 1 s, arrives at 1.1 s

    def cancel():
        yield bench.env.timeout(1.05)
        proc.interrupt("cancelled")

    bench.env.process(cancel())
    bench.env.run()  # a cancelled send process is defused: nobody waits on it, no crash
    assert not proc.ok
    assert isinstance(proc.value, TransferFailed)
    assert recorder.bytes_cancelled == pytest.approx(MB)
    assert recorder.bytes_total == 0


def test_a_cancel_in_retry_backoff_keeps_earlier_attempts_wire_bytes(netbench):
    bench = netbench({"clients": 1, "edge_servers": 1},
                     {"access": {"rate": "8 Mbps", "delay": "0 ms",
                                 "availability": {"kind": "schedule", "down": [[0.5, 0.6]]}},
                      "core": CORE, "retry": {"attempts": 3, "backoff": 1.0}})
    bench.network.start()
    recorder = Recorder(bench.trace, bench.world.tier)
    proc = bench.network.send("c0", "e0", MB)

    def cancel():
        yield bench.env.timeout(1.0)  # in the back-off after the cut at 0.5 s
        proc.interrupt("cancelled")

    bench.env.process(cancel())
    bench.env.run()
    fails = [r for r in bench.records if isinstance(r, TransferFail)]
    assert [(r.reason, r.will_retry) for r in fails] == [("link-down", True), ("cancelled", False)]
    assert fails[-1].wire_bytes == pytest.approx(MB / 2)
    assert recorder.bytes_cancelled == pytest.approx(MB / 2)
    assert recorder.transfers_failed == 0


def test_store_and_forward_cancel_releases_the_hop(netbench):
    bench = netbench({"clients": 2, "edge_servers": 1},
                     {"access": CELL, "core": CORE,
                      "transport": {"kind": "store-and-forward"}})
    recorder = Recorder(bench.trace, bench.world.tier)
    done = {}
    bench.send_at(0, "c0", "e0", 10 * MB, done, "kept")
    proc = bench.network.send("c1", "e0", 10 * MB)

    def cancel():
        yield bench.env.timeout(1.0)
        proc.interrupt("cancelled")

    bench.env.process(cancel())
    bench.env.run()
    assert done["kept"] == pytest.approx(_fluid_end(1.0), rel=1e-12)
    assert recorder.bytes_cancelled == pytest.approx(5e6 / 8.0)


def test_an_uncancelled_transfer_is_untouched(netbench):
    """Without a cancel both uploads share the cell to the end (the same floats as ever)."""
    _, recorder, out = two_uploads(netbench, {"kind": "fluid"}, cancel_at=None)
    assert out["kept"] == out["cancelled"] == pytest.approx(16.0 + 0.005, rel=1e-12)
    assert recorder.transfers_cancelled == 0 and recorder.bytes_cancelled == 0


def test_interrupting_a_finished_transfer_is_simpys_error(netbench):
    bench = netbench({"clients": 1, "edge_servers": 1}, {"access": CELL, "core": CORE})
    proc = bench.network.send("c0", "e0", MB)
    bench.env.run()
    with pytest.raises(RuntimeError):
        proc.interrupt("cancelled")


# ------------------------------------------------------------- a mobile world's resumed uploads


def test_a_cancel_while_waiting_for_coverage_stops_the_wait(tmp_path):
    """The car leaves e0 at 65 s and reaches e1 at 85 s; the upload is cancelled at 70 s, in
    the gap: the cut stands (5 MB on the air), then the cancel, and nothing is sent at 85 s."""
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0]],
                      resume_uploads={"enabled": True, "within": 30}, links=SAF)
    proc = []
    bench.at([60.0], lambda: proc.append(bench.network.send("c0", "cloud", 10 * MB)))
    bench.at([70.0], lambda: proc[0].interrupt("cancelled"))
    bench.env.run(until=300)
    fails = [(r.time_s, r.reason, r.will_retry, r.wire_bytes) for r in bench.of(TransferFail)]
    assert fails == [(pytest.approx(65.0), "left-coverage", True, pytest.approx(5 * MB)),
                     (70.0, "cancelled", False, pytest.approx(5 * MB))]
    assert not bench.of(TransferEnd) and len(bench.of(TransferStart)) == 1
    rec = bench.recorder
    assert (rec.transfers_cancelled, rec.transfers_failed, rec.uploads_lost) == (1, 0, 0)
    assert rec.bytes_cancelled == pytest.approx(5 * MB) == rec.wire_bytes_total


def test_a_cancel_also_cancels_the_parts_forwarded_after_a_hand_over(tmp_path):
    """Cut at the hand-over at 75 s with 3 MB at e0; the other 7 MB go over c0-e1 while e0
    forwards its 3 MB to e2 over the backhaul (until 75.6 s). A cancel at 75.2 s stops both."""
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0], [3000, 0]], coverage=600,
                      resume_uploads={"enabled": True}, cloud=False,
                      links={**SAF, "backhaul": {"rate": "80 Mbps"}},
                      in_flight_at_handover="cut")
    proc = []
    bench.at([72.0], lambda: proc.append(bench.network.send("c0", "e2", 10 * MB)))
    bench.at([75.2], lambda: proc[0].interrupt("cancelled"))
    bench.env.run(until=300)
    cancels = {r.tag: r for r in bench.of(TransferFail) if r.reason == "cancelled"}
    assert set(cancels) == {"client->edge", "resumed-part"}
    assert all(r.time_s == 75.2 for r in cancels.values())
    # 3 MB before the cut and 0.2 s x 8 Mbit/s after it; the part: 0.2 s x 80 Mbit/s
    assert cancels["client->edge"].wire_bytes == pytest.approx(3 * MB + 0.2 * MB)
    assert cancels["resumed-part"].wire_bytes == pytest.approx(2 * MB)
    assert not bench.of(TransferEnd)
    assert bench.recorder.transfers_cancelled == 2
    assert bench.network.fabric.settled
    assert not any(ch.classes for link in bench.network.links()
                   for ch in {*link.channels(link.u, link.v), *link.channels(link.v, link.u)})


def test_a_cancelled_broadcast_leaves_the_air_and_every_receiver_gets_none(tmp_path):
    medium = {"kind": "802.11p", "downlink": "broadcast", "broadcast_rate": 6e6}
    vehicles = {"a": [(0, 1000, 0), (1000, 1000, 0)], "b": [(0, 1100, 0), (1000, 1100, 0)]}
    bench = RoadBench(tmp_path, vehicles, [[1000, 0]], coverage=600, medium=medium,
                      radio={"kind": "fixed", "rate": 6e6})
    proc = []
    bench.at([1.0], lambda: proc.append(bench.network.broadcast("e0", ["c0", "c1"], 10 * MB)))
    bench.at([2.0], lambda: proc[0].interrupt("cancelled"))
    bench.env.run(until=100)
    assert proc[0].value == {"c0": None, "c1": None}
    fails = bench.of(TransferFail)
    assert [(r.dst, r.reason, r.time_s) for r in fails] == [("c0", "cancelled", 2.0),
                                                            ("c1", "cancelled", 2.0)]
    on_air = sum(r.wire_bytes for r in fails)
    assert 0 < on_air < 6e6 / 8  # at most a second at the broadcast rate
    assert bench.recorder.bytes_cancelled == pytest.approx(on_air)
    assert bench.recorder.transfers_cancelled == 2 and not bench.of(TransferEnd)
    assert bench.network.fabric.settled
