"""The ns-3 side of the cross-validation (benchmarks/validate_ns3.py): one case run in ns-3 in
this process (point-to-point links, TCP BulkSend -> PacketSink; the IoV cell as 802.11p ad-hoc).
Needs the optional extra ``ns3``.
"""

from __future__ import annotations

import math
import time

from ns3_cases import Case

MSS = 1448
TCP_BUFFER = 1 << 28  # 256 MiB send and receive buffers: never the limit here
LTE_WARMUP_S = 0.5
_KEEP_ALIVE: list = []  # the LTE helpers: disposing of them tears the EPC down mid-run


_NS3_CALLBACKS = r"""
namespace netfl_validate {
std::vector<uint64_t> target, got;
std::vector<double> done;
std::vector<int> stop_on_done;
int remaining = 0;
void Rx(uint32_t i, ns3::Ptr<const ns3::Packet> packet, const ns3::Address &from) {
  got[i] += packet->GetSize();
  if (done[i] < 0 && got[i] >= target[i]) {
    done[i] = ns3::Simulator::Now().GetSeconds();
    remaining--;
    if (stop_on_done[i] || remaining == 0) ns3::Simulator::Stop();
  }
}
void AddFlow(uint64_t nbytes, int stop) {
  target.push_back(nbytes); got.push_back(0); done.push_back(-1.0);
  stop_on_done.push_back(stop); remaining++;
}
void Connect(ns3::Ptr<ns3::Application> sink, uint32_t i) {
  sink->TraceConnectWithoutContext("Rx", ns3::MakeBoundCallback(&Rx, i));
}
}
"""


def ns3_case(case: Case, time_limit_s: float = 3600.0) -> dict:
    """Run ``case`` in ns-3 in this process; returns {"starts", "ends", "events", "wall_s"}."""
    began = time.perf_counter()
    from ns import ns  # noqa: PLC0415 (optional, heavy)

    cppyy = ns.cppyy
    cppyy.cppdef(_NS3_CALLBACKS)
    cb = cppyy.gbl.netfl_validate
    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(case.seed)
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(MSS))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(TCP_BUFFER))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(TCP_BUFFER))

    names = case.nodes()
    index = {name: k for k, name in enumerate(names)}
    nodes = ns.NodeContainer()
    addresses = ns.Ipv4AddressHelper()
    if case.medium == "lte":
        node_of = _ns3_lte_cell(ns, case)
    else:
        nodes.Create(len(names))
        ns.InternetStackHelper().Install(nodes)
        node_of = {name: nodes.Get(index[name]) for name in names}
    if case.medium == "wifi-80211p":
        _ns3_wifi_cell(ns, case, nodes, index, addresses)
    elif case.medium != "lte":
        p2p = ns.PointToPointHelper()
        for k, link in enumerate(case.links):
            p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(link.rate_bps))))
            p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(link.delay_s)))
            devices = p2p.Install(nodes.Get(index[link.a]), nodes.Get(index[link.b]))
            addresses.SetBase(ns.Ipv4Address(f"10.{k // 256}.{k % 256}.0"),
                              ns.Ipv4Mask("255.255.255.0"))
            addresses.Assign(devices)
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    waited_on = {f.after for f in case.flows if f.after is not None}
    senders = {}
    for i, flow in enumerate(case.flows):
        port = 10000 + i
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(
            ns.Ipv4Address.GetAny(), port).ConvertTo()).Install(node_of[flow.dst])
        sink.Start(ns.Seconds(0.0))
        cb.AddFlow(int(flow.nbytes), int(i in waited_on))
        cb.Connect(sink.Get(0), i)
        dst = node_of[flow.dst].GetObject[ns.Ipv4]().GetAddress(1, 0).GetLocal()
        sender = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(dst, port).ConvertTo())
        sender.SetAttribute("MaxBytes", ns.UintegerValue(int(flow.nbytes)))
        sender.SetAttribute("SendSize", ns.UintegerValue(MSS))
        senders[i] = sender

    starts = [math.nan] * len(case.flows)

    # an LTE cell's UEs attach first (ideal RRC: about 20 ms); its times count from then
    warmup = LTE_WARMUP_S if case.medium == "lte" else 0.0

    def launch(i: int, now: float, delay: float = 0.0) -> None:
        flow = case.flows[i]
        starts[i] = now + delay + flow.start_s
        apps = senders[i].Install(node_of[flow.src])
        apps.Start(ns.Seconds(delay + flow.start_s))  # relative to now once running

    for i, flow in enumerate(case.flows):
        if flow.after is None:
            launch(i, 0.0, warmup)
    ns.Simulator.Stop(ns.Seconds(time_limit_s))
    launched = {i for i, f in enumerate(case.flows) if f.after is None}
    while True:
        ns.Simulator.Run()
        now = ns.Simulator.Now().GetSeconds()
        done = list(cb.done)
        ready = [i for i, f in enumerate(case.flows) if i not in launched
                 and f.after is not None and done[f.after] >= 0]
        for i in ready:
            launch(i, now)
            launched.add(i)
        if cb.remaining == 0 or now >= time_limit_s or (not ready and ns.Simulator.IsFinished()):
            break
    ends = [t - warmup if t >= 0 else math.nan for t in cb.done]
    return {"starts": [t - warmup for t in starts], "ends": ends,
            "wall_s": round(time.perf_counter() - began, 2)}


def _mode(rate_bps: float) -> str:
    return f"OfdmRate{rate_bps / 1e6:g}MbpsBW10MHz".replace(".", "_")


def _ns3_wifi_cell(ns, case: Case, nodes, index, addresses) -> None:
    """One 802.11p cell (ad hoc DCF, ns-3 3.44 has no OCB helper in Python; the neighbour cache
    pre-filled, see NS3-NOTES): the RSU at the origin, vehicle i at ``distances_m[i]`` on one
    side (all within carrier sense: no hidden stations), Friis loss at 5.9 GHz, 23 dBm; each
    device sends at a constant PHY rate: its link's, the RSU ``cell_rate_bps``."""
    channel = ns.YansWifiChannelHelper()
    channel.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel")
    channel.AddPropagationLoss("ns3::FriisPropagationLossModel", "Frequency",
                               ns.DoubleValue(5.9e9))
    phy = ns.YansWifiPhyHelper()
    phy.SetChannel(channel.Create())
    phy.Set("TxPowerStart", ns.DoubleValue(23.0))
    phy.Set("TxPowerEnd", ns.DoubleValue(23.0))
    mac = ns.WifiMacHelper()
    mac.SetType("ns3::AdhocWifiMac")
    wifi = ns.WifiHelper()
    wifi.SetStandard(ns.WIFI_STANDARD_80211p)
    rate_of = {link.a: link.rate_bps for link in case.links}
    positions = ns.ListPositionAllocator()
    devices = ns.NetDeviceContainer()
    for name in case.nodes():  # index order
        rate = rate_of.get(name, case.cell_rate_bps)
        wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                     "DataMode", ns.StringValue(_mode(rate)),
                                     "ControlMode", ns.StringValue(_mode(min(rate, 6e6))))
        devices.Add(wifi.Install(phy, mac, nodes.Get(index[name])))
        x = case.distances_m[int(name[1:])] if name in rate_of else 0.0
        positions.Add(ns.Vector(x, 0.0, 0.0))
    mobility = ns.MobilityHelper()
    mobility.SetPositionAllocator(positions)
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel")
    for name in case.nodes():
        mobility.Install(nodes.Get(index[name]))
    addresses.SetBase(ns.Ipv4Address("10.1.0.0"), ns.Ipv4Mask("255.255.0.0"))
    addresses.Assign(devices)
    ns.NeighborCacheHelper().PopulateNeighborCache()


def _ns3_lte_cell(ns, case: Case) -> dict:
    """One LTE cell (FDD, band 1: uplink at 1930 MHz; 50 RB each way): the eNB ``e0`` at the
    origin, UE ``c{i}`` at ``distances_m[i]`` on one side, Friis loss, 23 dBm on both sides
    (ns-3's defaults otherwise: noise figures 5 dB eNB, 9 dB UE; open-loop power control P0
    -80 dBm, alpha 1), the PF scheduler, PiroEW2010 AMC, RLC UM with a 10 MB buffer (its
    default 10 KB drops TCP's bursts), ideal RRC; ``cloud`` a remote host behind the EPC's PGW
    (10 Gbps, 1 ms). Returns the case's node names -> ns-3 nodes."""
    for key, value in (("ns3::LteEnbNetDevice::UlBandwidth", ns.UintegerValue(50)),
                       ("ns3::LteEnbNetDevice::DlBandwidth", ns.UintegerValue(50)),
                       ("ns3::LteUePhy::TxPower", ns.DoubleValue(23.0)),
                       ("ns3::LteEnbPhy::TxPower", ns.DoubleValue(23.0)),
                       ("ns3::LteHelper::UseIdealRrc", ns.BooleanValue(True)),
                       ("ns3::LteRlcUm::MaxTxBufferSize", ns.UintegerValue(10 * 1024 * 1024)),
                       ("ns3::LteAmc::AmcModel", ns.StringValue("PiroEW2010")),
                       ("ns3::LteEnbRrc::SrsPeriodicity", ns.UintegerValue(80)),
                       ("ns3::LteHelper::PathlossModel",
                        ns.StringValue("ns3::FriisPropagationLossModel"))):
        ns.Config.SetDefault(key, value)
    lte = ns.CreateObject[ns.LteHelper]()
    epc = ns.CreateObject[ns.PointToPointEpcHelper]()
    lte.SetEpcHelper(epc)
    lte.SetSchedulerType("ns3::PfFfMacScheduler")
    remote = ns.NodeContainer()
    remote.Create(1)
    ns.InternetStackHelper().Install(remote)
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate("10Gb/s")))
    p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.MilliSeconds(1)))
    devices = p2p.Install(epc.GetPgwNode(), remote.Get(0))
    addresses = ns.Ipv4AddressHelper()
    addresses.SetBase(ns.Ipv4Address("1.0.0.0"), ns.Ipv4Mask("255.0.0.0"))
    addresses.Assign(devices)
    routing = ns.Ipv4StaticRoutingHelper()
    routing.GetStaticRouting(remote.Get(0).GetObject[ns.Ipv4]()).AddNetworkRouteTo(
        ns.Ipv4Address("7.0.0.0"), ns.Ipv4Mask("255.0.0.0"), 1)
    ues = [name for name in case.nodes() if case.tiers.get(name) == "client"]
    enb, ue_nodes = ns.NodeContainer(), ns.NodeContainer()
    enb.Create(1)
    ue_nodes.Create(len(ues))
    positions = ns.ListPositionAllocator()
    positions.Add(ns.Vector(0.0, 0.0, 0.0))
    for name in ues:
        positions.Add(ns.Vector(case.distances_m[int(name[1:])], 0.0, 0.0))
    mobility = ns.MobilityHelper()
    mobility.SetPositionAllocator(positions)
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel")
    mobility.Install(enb)
    mobility.Install(ue_nodes)
    enb_devices, ue_devices = lte.InstallEnbDevice(enb), lte.InstallUeDevice(ue_nodes)
    ns.InternetStackHelper().Install(ue_nodes)
    epc.AssignUeIpv4Address(ns.NetDeviceContainer(ue_devices))
    for k in range(len(ues)):
        routing.GetStaticRouting(ue_nodes.Get(k).GetObject[ns.Ipv4]()).SetDefaultRoute(
            epc.GetUeDefaultGatewayAddress(), 1)
    lte.Attach(ue_devices, enb_devices.Get(0))
    node_of = {name: ue_nodes.Get(k) for k, name in enumerate(ues)}
    node_of.update(e0=enb.Get(0), cloud=remote.Get(0))
    _KEEP_ALIVE.extend((lte, epc, remote, enb, ue_nodes, enb_devices, ue_devices))
    return node_of


def ns3_available() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("ns") is not None
    except (ImportError, ValueError):
        return False


