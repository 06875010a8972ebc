"""Access links of a mobile (IoV) world: made on first contact, up exactly inside coverage,
uploads racing a departure, resumption at the next RSU, V2I rates and their tracking.

The road is a hand-written SUMO trace, so every contact time is known in closed form: a vehicle
driving x = 0 -> 4000 m in 200 s (20 m/s) along y = 0 is within 300 m of an RSU at x = 1000 from
35 s to 65 s, and of one at x = 2000 from 85 s to 115 s.
"""

import math
from pathlib import Path

import numpy as np
import pytest
import simpy

from netfl.errors import TransferFailed
from netfl.network import dcf
from netfl.network.helper import build_network
from netfl.network.radio import AccessRadio
from netfl.results.recorder import Recorder
from netfl.scenario.iov import IovWorld, ShannonRadio
from netfl.scenario.sections import Links
from netfl.sim.clock import RandomStreams
from netfl.sim.trace import LinkState, TraceBus, TransferEnd, TransferFail, TransferStart
from netfl.world.joined import build_iov_world
from tests.conftest import write_fcd

MB = 1e6
RATE = 8e6  # a fixed radio: 1 MB takes 1 s
DELAY = 0.010
SAF = {"transport": {"kind": "store-and-forward"}}  # message custody at each hop
V = 20.0
PASS = [(0, 0, 0), (200, 4000, 0)]  # 20 m/s along y = 0
E0 = (35.0, 65.0)  # within 300 m of x = 1000
E1 = (85.0, 115.0)  # within 300 m of x = 2000



class RoadBench:
    """An iov world from a trace, its network, a recorder and every trace record."""

    def __init__(self, tmp_path: Path, vehicles: dict, rsus: list, coverage: float = 300.0,
                 access: dict | None = None, links: dict | None = None, seed: int = 0,
                 **spec):
        spec.setdefault("medium", {"kind": "dedicated"})  # closed forms: a channel per link
        trace_file = write_fcd(tmp_path / "road.xml", vehicles)
        self.spec = IovWorld.model_validate({
            "kind": "iov", "road": {"kind": "fcd", "path": str(trace_file)},
            "rsus": {"positions": rsus, "coverage": coverage},
            "radio": {"kind": "fixed", "rate": RATE}, **spec})
        self.world = build_iov_world(self.spec, np.random.default_rng(0))
        self.env = simpy.Environment()
        self.trace = TraceBus()
        self.records = []
        self.trace.subscribe(self.records.append)
        self.recorder = Recorder(self.trace, self.world.tier)
        self.network = build_network(self.env, self.world,
                                     Links(access={"delay": DELAY, **(access or {})},
                                           **{"transport": {"kind": "fluid"}, **(links or {})}),
                                     RandomStreams(seed), self.trace)
        self.world.start(self.env, None)
        self.network.start()

    def send_at(self, start_s: float, src: str, dst: str, nbytes: float, out: dict, key):
        def proc():
            yield self.env.timeout(start_s)
            try:
                report = yield self.network.send(src, dst, nbytes)
                out[key] = (self.env.now, report)
            except TransferFailed as exc:
                out[key] = (self.env.now, exc)
        return self.env.process(proc())

    def at(self, times: list[float], probe) -> list:
        """probe() at each of ``times`` (in order)."""
        seen = []

        def proc():
            for t in times:
                yield self.env.timeout(t - self.env.now)
                seen.append(probe())
        self.env.process(proc())
        return seen

    def of(self, kind) -> list:
        return [r for r in self.records if isinstance(r, kind)]


# ------------------------------------------------------------------------ contact windows


@pytest.mark.parametrize("offset", [0.0, 150.0])
def test_the_access_link_is_up_exactly_inside_the_contact_window(tmp_path, offset):
    radius = 300.0
    half = math.sqrt(radius ** 2 - offset ** 2)
    t_in, t_out = (1000 - half) / V, (1000 + half) / V
    assert t_out - t_in == pytest.approx(2 * half / V)
    bench = RoadBench(tmp_path, {"car": [(0, 0, offset), (200, 4000, offset)]}, [[1000, 0]],
                      radius)
    eps = 1e-6
    times = [t_in - eps, t_in + eps, (t_in + t_out) / 2, t_out - eps, t_out + eps, 150.0]
    points = bench.at(times, lambda: bench.network.access_point("c0"))
    links = bench.at(times, lambda: bench.network.find_link("c0", "e0"))
    bench.env.run(until=300)
    assert points == [None, "e0", "e0", "e0", None, None]
    assert links[0] is None  # made on first contact
    assert links[1] is links[-1] and not links[-1].up
    downs = [(r.time_s, r.link) for r in bench.of(LinkState) if not r.up]
    assert downs == [(pytest.approx(t_out), "c0-e0")]


def test_a_link_comes_back_up_when_the_vehicle_returns(tmp_path):
    # out to x = 1600 and back: e0's coverage [700, 1300] is crossed twice
    bench = RoadBench(tmp_path, {"car": [(0, 0, 0), (80, 1600, 0), (160, 0, 0)]}, [[1000, 0]])
    links = bench.at([50.0, 100.0], lambda: bench.network.find_link("c0", "e0"))
    bench.env.run(until=200)
    assert links[0] is links[1]  # the same link, reused
    # (whether first contact at 35 s is traced as "up" is left open)
    assert [(r.time_s, r.up) for r in bench.of(LinkState) if r.time_s > 40] == [
        (pytest.approx(65.0), False), (pytest.approx(95.0), True), (pytest.approx(125.0), False)]


def test_no_route_out_of_coverage(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0]])
    done = {}
    bench.send_at(10.0, "c0", "e0", MB, done, "up")
    bench.send_at(10.0, "e0", "c0", MB, done, "down")
    bench.env.run(until=300)
    assert all(done[k][1].reason == "no-route" and done[k][0] == 10.0 for k in done)
    assert bench.recorder.uploads_lost == 0 and bench.recorder.coverage_cuts == 0


# ------------------------------------------------------------------------ racing a departure


def test_an_upload_that_ends_before_the_exit_arrives(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0]])
    done = {}
    bench.send_at(40.0, "c0", "e0", MB, done, "early")
    # serialization ends at 64.98, the last bit arrives at 64.99: before the exit at 65
    bench.send_at(65.0 - 1.0 - 0.02, "c0", "e0", MB, done, "close")
    bench.env.run(until=300)
    assert done["early"][0] == pytest.approx(40.0 + 1.0 + DELAY)
    assert done["close"][0] == pytest.approx(65.0 - 0.01)
    assert isinstance(done["close"][1], TransferEnd) and done["close"][1].path == ("c0", "e0")
    assert bench.recorder.uploads_lost == 0 and not bench.of(TransferFail)


def test_an_upload_still_running_at_the_exit_fails_at_the_exit(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0]])
    done = {}
    bench.send_at(60.0, "c0", "e0", 10 * MB, done, "x")  # needs 10 s, has 5
    bench.env.run(until=300)
    when, error = done["x"]
    assert when == pytest.approx(E0[1])
    assert isinstance(error, TransferFailed) and error.reason == "left-coverage"
    (fail,) = bench.of(TransferFail)
    assert fail.time_s == pytest.approx(E0[1]) and fail.reason == "left-coverage"
    assert fail.link == "c0-e0" and not fail.will_retry
    assert fail.wire_bytes == pytest.approx(5 * MB)  # 5 s at 1 MB/s
    rec = bench.recorder
    assert (rec.uploads_lost, rec.downloads_lost, rec.coverage_cuts) == (1, 0, 1)
    assert rec.transfers_failed == 1 and rec.wire_bytes_total == pytest.approx(5 * MB)


def test_a_download_still_running_at_the_exit_is_lost(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0]],
                      resume_uploads={"enabled": True})  # resumption is for uploads only
    done = {}
    bench.send_at(62.0, "cloud", "c0", 10 * MB, done, "x")
    bench.env.run(until=300)
    # the core hop (1 Gbps, 20 ms) first: 10 MB in 0.08 s + 0.02 s; then the access hop
    assert done["x"][0] == pytest.approx(E0[1]) and done["x"][1].reason == "left-coverage"
    rec = bench.recorder
    assert (rec.uploads_lost, rec.downloads_lost, rec.coverage_cuts) == (0, 1, 1)


def test_an_upload_cut_on_a_later_hop_is_not_a_coverage_cut(tmp_path):
    # the vehicle leaves at 65 while its upload crosses the core (64.01 to 66.02): it arrives
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0]],
                      links={**SAF, "core": {"rate": "8 Mbps", "delay": "10 ms"}})
    done = {}
    bench.send_at(62.0, "c0", "cloud", 2 * MB, done, "x")
    bench.env.run(until=300)
    assert done["x"][0] == pytest.approx(62.0 + 2 * (2.0 + DELAY))
    assert done["x"][1].path == ("c0", "e0", "cloud")
    assert bench.recorder.coverage_cuts == 0 and not bench.of(TransferFail)


def test_an_upload_whose_last_bit_is_in_flight_at_the_exit_fails_when_it_would_arrive(
        tmp_path):
    # A modelling choice (docs/models/iov.md): a cut during the propagation delay is noticed
    # when the last bits would have arrived.
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0]])
    done = {}
    bench.send_at(65.0 - 1.0 - 0.005, "c0", "e0", MB, done, "x")  # serialized by 64.995
    bench.env.run(until=300)
    assert done["x"][1].reason == "left-coverage"
    assert done["x"][0] == pytest.approx(64.995 + DELAY)


# ------------------------------------------------------------------------ resumption


def test_a_resumed_upload_completes_at_the_next_rsu_after_a_gap(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0]],
                      resume_uploads={"enabled": True, "within": 30}, links=SAF)
    done = {}
    bench.send_at(60.0, "c0", "cloud", 10 * MB, done, "x")
    bench.env.run(until=300)
    # 5 MB by the exit at 65; the vehicle reaches e1 at 85 and sends the other 5 MB there (5 s
    # + 10 ms), and the same 5 MB on over the core (1 Gbps, 20 ms)
    end_access = E1[0] + 5.0 + DELAY
    when, report = done["x"]
    assert isinstance(report, TransferEnd)
    assert when == pytest.approx(end_access + 5 * MB * 8 / 1e9 + 0.020)
    assert report.path == ("c0", "e1", "cloud") and report.nbytes == 10 * MB
    (fail,) = bench.of(TransferFail)
    assert fail.time_s == pytest.approx(E0[1]) and fail.will_retry
    assert fail.reason == "left-coverage" and fail.wire_bytes == pytest.approx(5 * MB)
    starts = [(r.time_s, r.src, r.tag, r.nbytes) for r in bench.of(TransferStart)]
    assert starts[1:] == [(pytest.approx(E1[0]), "c0", "client->cloud", 10 * MB),
                          (pytest.approx(E1[0]), "e0", "resumed-part", pytest.approx(5 * MB))]
    # the old RSU's part crosses the core to the cloud, tagged
    part = next(r for r in bench.of(TransferEnd) if r.tag == "resumed-part")
    assert part.path == ("e0", "cloud") and part.nbytes == pytest.approx(5 * MB)
    assert part.time_s == pytest.approx(E1[0] + 5 * MB * 8 / 1e9 + 0.020)
    rec = bench.recorder
    assert (rec.uploads_lost, rec.coverage_cuts, rec.transfers_failed) == (0, 1, 0)
    assert rec.bytes_by_tag["resumed-part"] == pytest.approx(5 * MB)


def upload_across_a_gap(tmp_path, dst: str, within: float):
    """A 10 MB upload from 60 s by the car that leaves e0 at 65 s and reaches e1 at 85 s,
    resumed within ``within``; returns the bench and the upload's (time, outcome)."""
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0]],
                      resume_uploads={"enabled": True, "within": within})
    done = {}
    bench.send_at(60.0, "c0", dst, 10 * MB, done, "x")
    bench.env.run(until=300)
    return bench, done["x"]


def test_a_pipelined_resumed_upload_sends_no_separate_part(tmp_path):
    # fluid (pipelined): the 5 MB sent before the exit went on to the cloud as they were sent;
    # only the other 5 MB are sent from e1, over the whole path again
    bench, (when, report) = upload_across_a_gap(tmp_path, "cloud", within=30)
    assert isinstance(report, TransferEnd) and report.path == ("c0", "e1", "cloud")
    assert when == pytest.approx(E1[0] + 5.0 + DELAY + 0.020)
    assert not [r for r in bench.of(TransferStart) if r.tag == "resumed-part"]
    (fail,) = bench.of(TransferFail)
    assert fail.time_s == pytest.approx(E0[1]) and fail.will_retry
    assert fail.wire_bytes == pytest.approx(2 * 5 * MB)  # on both hops of the path


def test_a_resumed_upload_to_an_rsu_forwards_the_part_over_the_backhaul(tmp_path):
    # overlapping cells (600 m): hand-over at the bisector x = 1500, t = 75, no gap; the
    # hand-over cuts transfers in flight
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0], [3000, 0]], coverage=600,
                      resume_uploads={"enabled": True}, cloud=False,
                      links={**SAF, "backhaul": {"rate": "80 Mbps"}},
                      in_flight_at_handover="cut")
    done = {}
    bench.send_at(72.0, "c0", "e2", 10 * MB, done, "x")
    bench.env.run(until=300)
    # 3 MB by the hand-over at 75, the other 7 MB from 75 over c0-e1, then e1 -> e2
    backhaul_delay = 5e-6  # 1 km of fibre at 5 us/km
    end_access = 75.0 + 7.0 + DELAY
    when, report = done["x"]
    assert when == pytest.approx(end_access + 7 * MB * 8 / 80e6 + backhaul_delay)
    assert report.path == ("c0", "e1", "e2")
    part = next(r for r in bench.of(TransferEnd) if r.tag == "resumed-part")
    # the part goes e0 -> e1 -> e2 over the backhaul from the hand-over
    assert part.path == ("e0", "e1", "e2") and part.nbytes == pytest.approx(3 * MB)
    assert part.time_s == pytest.approx(75.0 + 2 * (3 * MB * 8 / 80e6 + backhaul_delay))
    (fail,) = bench.of(TransferFail)
    assert fail.time_s == pytest.approx(75.0) and fail.will_retry
    resumed = [r for r in bench.of(TransferStart) if r.attempt == 1]
    assert [r.time_s for r in resumed] == [pytest.approx(75.0)]  # at once: no gap


@pytest.mark.parametrize("size_mb", [7, 9])
def test_a_transfer_in_flight_at_a_handover_goes_on_while_the_old_rsu_reaches(tmp_path,
                                                                                size_mb):
    # overlapping cells (600 m): the car becomes e1's client at the bisector (x = 1500,
    # t = 75) but e0's radio reaches it until x = 1600 (t = 80)
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0]], coverage=600,
                      cloud=False)
    done = {}
    bench.send_at(72.0, "c0", "e0", size_mb * MB, done, "x")
    bench.send_at(76.0, "c0", "e0", 1 * MB, done, "new")  # after the hand-over: through e1
    bench.env.run(until=300)
    when, report = done["x"]
    if size_mb == 7:  # done at 79 over e0, after the hand-over
        assert when == pytest.approx(72.0 + 7.0 + DELAY) and report.path == ("c0", "e0")
    else:  # still sending when e0's radio no longer reaches: lost at 80
        assert when == pytest.approx(80.0) and isinstance(report, TransferFailed)
        assert report.reason == "left-coverage"
    assert done["new"][1].path == ("c0", "e1", "e0")


def test_a_resumed_upload_to_the_old_rsu_sends_no_part(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0]],
                      resume_uploads={"enabled": True}, cloud=False, links=SAF)
    done = {}
    bench.send_at(60.0, "c0", "e0", 10 * MB, done, "x")
    bench.env.run(until=300)
    assert done["x"][1].path == ("c0", "e1", "e0")
    assert not [r for r in bench.of(TransferStart) if r.tag == "resumed-part"]
    assert done["x"][0] == pytest.approx(E1[0] + 5.0 + DELAY + 5 * MB * 8 / 1e9 + 5e-6)


def test_an_upload_not_resumed_within_the_limit_is_lost(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0]],
                      resume_uploads={"enabled": True, "within": 10})  # the gap is 20 s
    done = {}
    bench.send_at(60.0, "c0", "e1", 10 * MB, done, "x")
    bench.env.run(until=300)
    when, error = done["x"]
    assert when == pytest.approx(E0[1] + 10.0)
    assert isinstance(error, TransferFailed) and error.reason == "left-coverage"
    final = bench.of(TransferFail)[-1]  # one record for the cut, stamped when it happened
    assert final.time_s == pytest.approx(E0[1]) and not final.will_retry
    assert bench.recorder.uploads_lost == 1 and bench.recorder.transfers_failed == 1
    assert not bench.of(TransferEnd)


def test_a_failed_resumed_part_does_not_crash_the_simulation(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0]], cloud=False,
                      resume_uploads={"enabled": True},
                      links={"backhaul": {"rate": "1 Gbps", "availability": {
                          "kind": "schedule", "down": [["80 s", "100 s"]]}}})
    done = {}
    bench.send_at(60.0, "c0", "e1", 10 * MB, done, "x")
    bench.env.run(until=300)  # raises TransferFailed(e0 -> e1, no-route) at 85 s
    assert "x" in done  # the upload settles: delivered, or lost and counted
    ends = [r for r in bench.of(TransferEnd) + bench.of(TransferFail)
            if r.transfer_id == 0 and not getattr(r, "will_retry", False)]
    assert len(ends) == 1


def test_a_lost_resumption_counts_one_cut_attempt(tmp_path):
    bench, _ = upload_across_a_gap(tmp_path, "e1", within=10)
    assert bench.recorder.coverage_cuts == 1
    assert bench.recorder.transfer_attempts_failed == 1


def test_an_upload_is_not_resumed_by_another_vehicle_in_the_same_slot(tmp_path):
    # a leaves the road at t = 70 after e0 [35, 65]; b enters at 80, in e1's coverage
    vehicles = {"a": [(0, 0, 0), (70, 1400, 0)], "b": [(80, 1700, 0), (150, 3100, 0)]}
    bench = RoadBench(tmp_path, vehicles, [[1000, 0], [2000, 0]], max_clients=1,
                      resume_uploads={"enabled": True})
    assert [v.vehicle for v in bench.world.visits] == ["a", "b"]
    done = {}
    bench.send_at(60.0, "c0", "e1", 10 * MB, done, "x")
    bench.env.run(until=300)
    assert isinstance(done["x"][1], TransferFailed)


def test_an_upload_cut_during_propagation_is_resumed(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [2000, 0]],
                      resume_uploads={"enabled": True})
    done = {}
    bench.send_at(65.0 - 1.0 - 0.005, "c0", "e1", MB, done, "x")
    bench.env.run(until=300)
    assert isinstance(done["x"][1], TransferEnd)
    assert bench.recorder.uploads_lost == 0


# ------------------------------------------------------------------------ V2I rates


PURE = {"implementation_factor": 1.0, "max_spectral_efficiency": 30.0}  # Shannon's bound


def shannon(**fields) -> AccessRadio:
    return AccessRadio(ShannonRadio(kind="shannon", **{**PURE, **fields}))


def test_access_radio_rates_at_known_distances_with_the_documented_defaults():
    radio = shannon()
    # 23 dBm + 3 dBi + 8 dBi = 34 dBm EIRP+gain; noise over 10 MHz: -174 + 70 = -104 dBm,
    # plus 5 dB at the RSU (uplink) or 9 dB at the vehicle (downlink). WINNER+ B1 LOS over
    # the 3-D distance from a 1.5 m antenna to a 5 m RSU, before its 157 m breakpoint:
    # 22.7 log10(d) + 27 + 20 log10(5.9)
    d3 = math.hypot(100.0, 3.5)
    loss = 22.7 * math.log10(d3) + 27.0 + 20 * math.log10(5.9)
    up, down = radio.rates_bps(100.0)
    assert up == pytest.approx(10e6 * math.log2(1 + 10 ** ((133.0 - loss) / 10)), rel=1e-9)
    assert down == pytest.approx(10e6 * math.log2(1 + 10 ** ((129.0 - loss) / 10)), rel=1e-9)
    # at 500 m, past the breakpoint: 40 log10(d) + 7.56 - 17.3 log10(4 x 0.5) + 2.7 log10(5.9)
    up, down = radio.rates_bps(500.0)
    d3 = math.hypot(500.0, 3.5)
    loss = 40 * math.log10(d3) + 7.56 - 17.3 * math.log10(2.0) + 2.7 * math.log10(5.9)
    snr_up = 133.0 - loss
    assert up == pytest.approx(10e6 * math.log2(1 + 10 ** (snr_up / 10)), rel=1e-9)
    assert down == pytest.approx(10e6 * math.log2(1 + 10 ** ((snr_up - 4) / 10)), rel=1e-9)
    # 3 dB of shadowing is 3 dB less SNR in both directions
    up_s, down_s = radio.rates_bps(500.0, 3.0)
    assert up_s == pytest.approx(10e6 * math.log2(1 + 10 ** ((snr_up - 3) / 10)), rel=1e-9)
    assert down_s < down
    # free space at 5.9 GHz over 100 m (3-D: 100.06 m): 40.005 + 195.417 - 147.55 = 87.872 dB
    up, down = shannon(path_loss="free-space").rates_bps(100.0)
    pl = 20 * math.log10(math.hypot(100.0, 3.5)) + 20 * math.log10(5.9e9) - 147.55
    assert pl == pytest.approx(87.872, abs=1e-3)
    assert up == pytest.approx(10e6 * math.log2(1 + 10 ** ((133.0 - pl) / 10)), rel=1e-9)
    assert down == pytest.approx(10e6 * math.log2(1 + 10 ** ((129.0 - pl) / 10)), rel=1e-9)
    # a cap, the heights (a vehicle under the RSU is 3.5 m from it), and the fixed radio
    assert shannon(max_rate=27e6).rates_bps(100.0) == (27e6, 27e6)
    assert radio.rates_bps(0.0) > radio.rates_bps(5.0)  # finite right under the RSU
    assert radio.path_loss_db(0.0) == pytest.approx(
        22.7 * math.log10(3.5) + 27.0 + 20 * math.log10(5.9))
    fixed = AccessRadio(IovWorld.model_validate({
        "kind": "iov", "road": {"kind": "highway"}, "rsus": {"spacing": 1000}}).radio)
    assert not fixed.varies and fixed.rates_bps(123.0) == (6e6, 6e6)
    # documented shadowing defaults
    assert ShannonRadio(kind="shannon").shadowing_sigma_db() == 3.0
    assert ShannonRadio(kind="shannon").decorrelation_m() == 10.0
    assert ShannonRadio(kind="shannon", path_loss="tr36942-macro").shadowing_sigma_db() == 8.0
    assert ShannonRadio(kind="shannon", path_loss="free-space").shadowing_sigma_db() == 0.0


STATIC = {"car": [(0, 1100, 0), (1000, 1100, 0)]}  # parked 100 m from an RSU at x = 1000
FREE_SPACE = {"kind": "shannon", "path_loss": "free-space", **PURE}  # no shadowing
STEEP = {"kind": "shannon", "shadowing_std": 0, **PURE}  # WINNER+ B1 without shadowing


@pytest.mark.parametrize("distance", [100.0, 500.0])
def test_a_parked_vehicle_transfers_at_the_radio_rate_both_ways(tmp_path, distance):
    vehicles = {"car": [(0, 1000 + distance, 0), (1000, 1000 + distance, 0)]}
    bench = RoadBench(tmp_path, vehicles, [[1000, 0]], coverage=600, radio=FREE_SPACE)
    up, down = shannon(path_loss="free-space").rates_bps(distance)
    done = {}
    bench.send_at(1.0, "c0", "e0", MB, done, "up")
    bench.send_at(1.0, "e0", "c0", MB, done, "down")
    bench.env.run(until=100)
    assert done["up"][0] == pytest.approx(1.0 + 8 * MB / up + DELAY, rel=1e-9)
    assert done["down"][0] == pytest.approx(1.0 + 8 * MB / down + DELAY, rel=1e-9)


def test_rate_reduction_loss_applies_to_a_radio_rate(tmp_path):
    bench = RoadBench(tmp_path, STATIC, [[1000, 0]], coverage=600, radio=FREE_SPACE,
                      access={"loss": {"kind": "rate-reduction", "probability": 0.5}})
    up, _ = shannon(path_loss="free-space").rates_bps(100.0)
    done = {}
    bench.send_at(1.0, "c0", "e0", MB, done, "up")
    bench.env.run(until=100)
    assert done["up"][0] == pytest.approx(1.0 + 8 * MB / (0.5 * up) + DELAY, rel=1e-9)


def expected_finish(t0: float, nbits: float, step: float, rate_at) -> tuple[float, list]:
    """Finish time of one flow whose capacity is rate_at(t_k) on [t_k, t_k + step)."""
    t, left, refreshes = t0, nbits, []
    while True:
        rate = rate_at(t)
        refreshes.append((t, rate))
        if left <= rate * step:
            return t + left / rate, refreshes
        left -= rate * step
        t += step


@pytest.mark.parametrize(("update", "step"), [
    ({"interval": "0.5 s", "distance": "1 km"}, 0.5),     # time governs
    ({"interval": "10 s", "distance": "5 m"}, 5.0 / V),   # distance governs: 0.25 s
])
def test_the_rate_follows_the_vehicle_while_transferring(tmp_path, update, step):
    # 50 m off the road, an RSU at x = 1000, coverage 600 m: in range from t = 20.1 s
    bench = RoadBench(tmp_path, {"car": [(0, 0, 50), (200, 4000, 50)]}, [[1000, 0]],
                      coverage=600, radio=STEEP, rate_update=update)
    radio = shannon(shadowing_std=0)

    def rate_at(t):
        return radio.rates_bps(math.hypot(V * t - 1000.0, 50.0))[0]

    t0, nbits = 30.0, 80e6 * 8  # 80 MB: some seconds at tens of MB/s
    finish, refreshes = expected_finish(t0, nbits, step, rate_at)
    rates = [rate for _, rate in refreshes]
    assert len(rates) > 10 and rates == sorted(rates) and rates[-1] > 1.2 * rates[0]
    done = {}
    bench.send_at(t0, "c0", "e0", nbits / 8, done, "x")
    tracking = bench.at([t0 + step / 2, finish + 5],
                        lambda: bench.network.link("c0", "e0").tracking)
    bench.env.run(until=finish + 10)
    # the integral of the piecewise-constant rate reaches the payload at the finish
    assert done["x"][0] == pytest.approx(finish + DELAY, rel=1e-9)
    assert tracking == [True, False]  # tracked while transferring only


def test_rates_are_tracked_at_the_update_interval(tmp_path):
    step = 0.5
    bench = RoadBench(tmp_path, {"car": [(0, 0, 50), (200, 4000, 50)]}, [[1000, 0]],
                      coverage=600, radio=STEEP,
                      rate_update={"interval": f"{step} s", "distance": "1 km"})
    radio = shannon(shadowing_std=0)

    def rate_at(t):
        return radio.rates_bps(math.hypot(V * t - 1000.0, 50.0))

    t0 = 30.0
    done = {}
    bench.send_at(t0, "c0", "e0", 80 * MB, done, "x")
    probes = [t0 + 0.05 + 0.1 * k for k in range(40)]
    seen = bench.at(probes, lambda: (
        bench.network.link("c0", "e0").channel("c0", "e0").capacity_bps,
        bench.network.link("c0", "e0").channel("e0", "c0").capacity_bps))
    bench.env.run(until=t0 + 4.5)
    for t, (up, down) in zip(probes, seen, strict=True):
        refreshed = t0 + step * math.floor((t - t0) / step)  # the last refresh
        assert (up, down) == pytest.approx(rate_at(refreshed), rel=1e-12), t
    assert len({up for up, _ in seen}) == 8  # a new rate every 0.5 s over 4 s


def test_an_idle_link_is_not_tracked(tmp_path):
    bench = RoadBench(tmp_path, {"car": [(0, 0, 50), (200, 4000, 50)]}, [[1000, 0]],
                      coverage=600, radio=FREE_SPACE)
    radio = shannon(path_loss="free-space")
    done = {}
    bench.send_at(30.0, "c0", "e0", MB, done, "x")  # well under a second
    seen = bench.at([31.0, 40.0, 50.0], lambda: (
        bench.network.link("c0", "e0").tracking,
        bench.network.link("c0", "e0").channel("c0", "e0").capacity_bps))
    bench.env.run(until=60)
    assert [tracking for tracking, _ in seen] == [False, False, False]
    assert seen[1][1] == seen[2][1] != radio.rates_bps(math.hypot(V * 40 - 1000, 50))[0]


def test_shadowing_is_reproducible_per_seed(tmp_path):
    def capacity(seed):
        bench = RoadBench(tmp_path, STATIC, [[1000, 0]], coverage=600, seed=seed,
                          radio={"kind": "shannon", **PURE})
        done = {}
        bench.send_at(1.0, "c0", "e0", MB, done, "x")
        bench.env.run(until=100)
        return done["x"][0]

    assert capacity(3) == capacity(3) != capacity(4)
    plain = 1.0 + 8 * MB / shannon().rates_bps(100.0)[0] + DELAY
    assert capacity(3) != pytest.approx(plain)  # 8 dB shadowing by default


def test_shadowing_is_one_value_per_link_for_both_directions(tmp_path):
    bench = RoadBench(tmp_path, STATIC, [[1000, 0]], coverage=600,
                      radio={"kind": "shannon", **PURE})
    done = {}
    bench.send_at(1.0, "c0", "e0", MB, done, "up")
    bench.send_at(1.0, "e0", "c0", MB, done, "down")
    bench.env.run(until=100)

    def snr_db(when):  # invert B log2(1 + SNR) from the transfer time
        rate = 8 * MB / (when - 1.0 - DELAY)
        return 10 * math.log10(2 ** (rate / 10e6) - 1)

    # 4 dB apart, the noise figures' difference, whatever the shadowing drawn
    assert snr_db(done["up"][0]) - snr_db(done["down"][0]) == pytest.approx(4.0, abs=1e-6)
    assert snr_db(done["up"][0]) != pytest.approx(42.5, abs=0.01)


def test_a_dropped_out_vehicle_meets_its_first_rsu_with_the_link_down(tmp_path):
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0]])

    def dropout():
        yield bench.env.timeout(10.0)
        bench.network.set_node_state("c0", False)
        yield bench.env.timeout(40.0)  # back at 50, inside e0's coverage
        bench.network.set_node_state("c0", True)

    bench.env.process(dropout())
    points = bench.at([40.0, 51.0, 70.0], lambda: bench.network.access_point("c0"))
    bench.env.run(until=300)
    assert points == [None, "e0", None]


def test_a_download_follows_a_vehicle_that_hands_over_while_it_crosses_the_core(tmp_path):
    # Regression: the route was fixed when the download started, so a hand-over during the
    # core hop failed the last hop with left-coverage although the vehicle was in coverage.
    # RSUs at x = 1000 and 1400 overlap; the bisector x = 1200 is crossed at t = 60 s.
    bench = RoadBench(tmp_path, {"car": PASS}, [[1000, 0], [1400, 0]],
                      links={**SAF, "core": {"rate": "8 Mbps", "delay": "10 ms"}})
    done = {}
    bench.send_at(59.5, "cloud", "c0", MB, done, "x")  # 1 s on the core: reaches an RSU at 60.51
    bench.env.run(until=300)
    when, report = done["x"]
    assert isinstance(report, TransferEnd), report
    assert report.path == ("cloud", "e0", "e1", "c0")  # on from where the bits are: e0
    backhaul = MB * 8 / 1e9 + 400 / 1000 * 5e-6  # 1 Gbps, 400 m of fibre
    assert when == pytest.approx(59.5 + 2 * (1.0 + DELAY) + backhaul)
    assert bench.recorder.coverage_cuts == 0


# ------------------------------------------------------------------ the 802.11p medium


def test_vehicles_of_one_rsu_share_its_80211p_medium(tmp_path):
    # two parked vehicles upload at once: each gets half the cell (fluid: full frames, no
    # TCP acknowledgements), the RSU's other cell is not involved
    vehicles = {"a": [(0, 1000, 0), (1000, 1000, 0)], "b": [(0, 1100, 0), (1000, 1100, 0)]}
    done = {}
    bench = RoadBench(tmp_path, vehicles, [[1000, 0]], coverage=600,
                      medium={"kind": "802.11p"}, radio={"kind": "fixed", "rate": 6e6})
    for client in ("c0", "c1"):
        bench.send_at(1.0, client, "e0", 150_000, done, client)
    bench.env.run(until=100)
    frame = dcf.exchange_s(1500, 6e6, 2)
    per_frame = frame + dcf.contention_per_frame_s(2, frame)
    expected = 1.0 + 2 * 100 * per_frame + DELAY  # 100 frames each, one medium
    assert done["c0"][0] == pytest.approx(expected) and done["c1"][0] == pytest.approx(expected)


def test_a_dedicated_medium_gives_every_vehicle_the_full_rate(tmp_path):
    vehicles = {"a": [(0, 1000, 0), (1000, 1000, 0)], "b": [(0, 1100, 0), (1000, 1100, 0)]}
    done = {}
    bench = RoadBench(tmp_path, vehicles, [[1000, 0]], coverage=600)  # dedicated
    for client in ("c0", "c1"):
        bench.send_at(1.0, client, "e0", 150_000, done, client)
    bench.env.run(until=100)
    assert done["c0"][0] == pytest.approx(1.0 + 8 * 150_000 / RATE + DELAY)


def _broadcast_bench(tmp_path, vehicles, **spec):
    medium = {"kind": "802.11p", "downlink": "broadcast", "broadcast_rate": 6e6}
    return RoadBench(tmp_path, vehicles, [[1000, 0]], coverage=600, medium=medium, **spec)


def test_a_broadcast_reaches_every_vehicle_of_the_cell_at_once(tmp_path):
    vehicles = {"a": [(0, 1000, 0), (1000, 1000, 0)], "b": [(0, 1100, 0), (1000, 1100, 0)]}
    bench = _broadcast_bench(tmp_path, vehicles, radio={"kind": "fixed", "rate": 6e6})
    assert bench.network.broadcasts_from("e0") and not bench.network.broadcasts_from("c0")
    out = {}

    def run():
        yield bench.env.timeout(1.0)
        out["results"] = yield bench.network.broadcast("e0", ["c0", "c1"], 147_200)
    bench.env.process(run())
    bench.env.run(until=100)
    frames = 100  # 147,200 bytes in UDP packets of 1,472
    per_frame = (dcf.aifs_s(2) + dcf.frame_airtime_s(1536, 6e6)
                 + dcf.contention_per_frame_s(1, 0.0))  # one sender, no acknowledgements
    results = out["results"]
    for client in ("c0", "c1"):
        assert results[client].time_s == pytest.approx(1.0 + frames * per_frame + DELAY)
        assert results[client].nbytes == 147_200  # delivered to each
    # on the air once: the two records share the bits of 100 frames of 1,500 bytes
    assert sum(r.wire_bytes for r in results.values()) == pytest.approx(frames * 1500)


def test_a_vehicle_that_cannot_decode_the_broadcast_rate_or_leaves_misses_it(tmp_path):
    # c0 parks near the RSU; c1 far (free space, 2 km: too weak for 6 Mbit/s); c2 drives out
    vehicles = {"near": [(0, 1000, 5), (1000, 1000, 5)], "far": [(0, 1000, 580), (1000, 1000, 580)],
                "gone": [(0, 1400, 0), (2, 1500, 0), (3, 5000, 0)]}
    radio = {"kind": "shannon", "path_loss": "tr36942-macro", "shadowing_std": 0,
             "rsu_tx_power": 0.0}
    bench = _broadcast_bench(tmp_path, vehicles, radio=radio)
    out = {}

    def run():
        yield bench.env.timeout(1.0)
        out["client"] = {bench.world.vehicle_of(c, 1.0): c for c in ("c0", "c1", "c2")}
        out["results"] = yield bench.network.broadcast("e0", ["c0", "c1", "c2"], 1_000_000)
    bench.env.process(run())
    bench.env.run(until=100)
    near, far, gone = (out["client"][v] for v in ("near", "far", "gone"))
    results = out["results"]
    assert results[near] is not None
    assert results[far] is None and results[gone] is None
    reasons = {r.dst: r.reason for r in bench.of(TransferFail)}
    assert reasons == {far: "broadcast-missed", gone: "left-coverage"}
