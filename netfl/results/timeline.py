"""A run's simulated timeline in the Chrome Trace Event format (Perfetto, chrome://tracing).

Made from a run's event table (``output.trace: true`` writes ``events.parquet``), in simulated
time (microseconds in the file, as the format wants):

* a process per tier (clients, edge servers, cloud), a thread (track) per node, and a
  process of transfers with a track per direction of each node pair (``src -> dst``);
* complete slices ("X") for local training (on the client), aggregations (on the node),
  transfers (on their pair's track, with tag, bytes, path and hops), and each hop of each
  transfer (on a track per link direction of the process ``link hops``, from the first bit
  entering the link to the last leaving it, with wire bytes and the mean share of the link's
  rate);
* flow arrows ("s"/"f") that follow the model: into each model transfer, from the last model
  delivered into its sender before it left (a client's download to its upload, the uploads
  to an edge server's aggregate going up, CHFL's ring and Fed-CHS's hand-overs hop to hop);
* async slices ("b"/"e") for each stay of a mobile world's user in a cell (an RSU's or a
  satellite's in view) and, on a LEO world, for each time a satellite served it, so a user's
  hand-overs show on its track;
* instants ("i") for failed transfers and failed hand-overs; slices for the time a node was
  unavailable (a dropout, on its track) and a link was down (an outage, on a track of the
  process ``link outages``);
* counters ("C") for accuracy and loss at each evaluation, cumulative delivered bytes and,
  where the algorithm books it, cumulative eq. (5) cost (Group-FEL).

docs/models/timeline.md gives the mapping. Windows (``start_s``, ``end_s``) and node filters
keep the file small for large runs.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import pandas as pd

TIERS = ("client", "edge", "cloud")
PIDS = {tier: i + 1 for i, tier in enumerate(TIERS)}
TRANSFERS_PID = len(TIERS) + 1
LINKS_PID = len(TIERS) + 2
HOPS_PID = len(TIERS) + 3
PROCESS_NAMES = {"client": "clients", "edge": "edge servers", "cloud": "cloud"}

US = 1e6  # the format's unit is the microsecond
TRACE_HEADER = {"displayTimeUnit": "ms",
                "otherData": {"clock": "simulated time", "unit": "microseconds"}}


def node_tiers(events: pd.DataFrame) -> dict[str, str]:
    """Each node's tier, read from the events themselves: transfer tags name the tiers of both
    ends (``client->edge``), local training runs on clients, aggregations name their level."""
    tiers: dict[str, str] = {}
    for kind, frame in events.groupby("kind"):
        if kind in ("transfer_end", "transfer_start", "transfer_fail"):
            for src, dst, tag in frame[["src", "dst", "tag"]].itertuples(index=False):
                ends = str(tag).split(" ")[-1].split("->")
                if len(ends) == 2 and ends[0] in PIDS and ends[1] in PIDS:
                    tiers.setdefault(src, ends[0])
                    tiers.setdefault(dst, ends[1])
        elif kind in ("train_start", "train_end"):
            tiers.update(dict.fromkeys(frame["node"], "client"))
        elif kind == "association":
            for client in frame["client"].unique():
                tiers.setdefault(client, "client")
        elif kind == "aggregate":
            for node, level in frame[["node", "level"]].itertuples(index=False):
                tiers.setdefault(node, level if level in PIDS else "edge")
    return tiers


def chrome_trace(events: pd.DataFrame, start_s: float = 0.0, end_s: float = math.inf,
                 nodes: Iterable[str] | None = None,
                 tiers: dict[str, str] | None = None) -> dict:
    """The Chrome trace (a JSON-ready dict) of ``events`` between ``start_s`` and ``end_s``
    (simulated seconds; a slice is kept where it overlaps the window), for ``nodes`` only
    where given (a transfer is kept where either end is one). ``write_chrome_trace`` writes
    the same to a file without holding it all."""
    return {"traceEvents": list(trace_events(events, start_s, end_s, nodes, tiers)),
            **TRACE_HEADER}


def write_chrome_trace(path: Path, events: pd.DataFrame, start_s: float = 0.0,
                       end_s: float = math.inf, nodes: Iterable[str] | None = None,
                       tiers: dict[str, str] | None = None) -> None:
    """``chrome_trace`` written to ``path`` event by event (a large run's trace is never
    whole in memory)."""
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"traceEvents": [')
        for k, event in enumerate(trace_events(events, start_s, end_s, nodes, tiers)):
            out.write(("," if k else "") + json.dumps(event))
        out.write("], " + json.dumps(TRACE_HEADER)[1:])


def trace_events(events: pd.DataFrame, start_s: float = 0.0, end_s: float = math.inf,
                 nodes: Iterable[str] | None = None,
                 tiers: dict[str, str] | None = None) -> Iterator[dict]:
    """The trace's events one by one (``chrome_trace``), the tracks' names last."""
    keep = None if nodes is None else set(nodes)
    tiers = node_tiers(events) if tiers is None else tiers
    tids: dict[str, int] = {}

    def track(node: str) -> tuple[int, int]:
        if node not in tids:
            tids[node] = len(tids) + 1
        return PIDS.get(tiers.get(node, "edge"), PIDS["edge"]), tids[node]

    links: dict[str, int] = {}

    def link(name: str) -> int:
        return links.setdefault(name, len(links) + 1)

    def wanted(*names: str) -> bool:
        return keep is None or any(n in keep for n in names)

    def in_window(begin: float, end: float) -> bool:
        return end >= start_s and begin <= end_s

    out: list[dict] = []  # this row's trace events, handed on after it
    ids = itertools.count()
    down: dict[tuple[str, str], float] = {}  # (kind, node or link) -> when it went down

    def outage(key: tuple[str, str], begin: float, end: float) -> None:
        """A dropout as a slice on the node's track, a link outage on the link's."""
        kind, name = key
        if not in_window(begin, end) or (kind == "dropout" and not wanted(name)) or (
                kind == "link_state" and keep is not None):
            return
        if kind == "dropout":
            pid, tid = track(name)
        else:
            pid, tid = LINKS_PID, links_down.setdefault(name, len(links_down) + 1)
        out.append({"name": "unavailable" if kind == "dropout" else "down", "cat": "fault",
                    "ph": "X", "ts": begin * US, "dur": (end - begin) * US, "pid": pid,
                    "tid": tid})

    links_down: dict[str, int] = {}
    hops: dict[str, int] = {}
    attached: dict[tuple[str, str], float] = {}  # (client, cell) -> since when

    served: dict[str, tuple[str, float]] = {}  # LEO user -> (its serving satellite, since)

    def cell_slice(key: tuple[str, str], begin: float, end: float,
                   what: str = "attached to") -> None:
        """A user's stay in a cell (or, ``what`` "served by", its time served by a satellite)
        as an async slice on its track (async: the stay overlaps the user's training and
        transfers, and on a hand-over the next may begin first)."""
        client, cell = key
        if not (wanted(client, cell) and in_window(begin, end)):
            return
        pid, tid = track(client)
        category = "cell" if what == "attached to" else "serving"
        stay = {"name": f"{what} {cell}", "cat": category, "id": f"{category}-{next(ids)}",
                "pid": pid, "tid": tid}
        out.append({**stay, "ph": "b", "ts": begin * US, "args": {"cell": cell}})
        out.append({**stay, "ph": "e", "ts": end * US})

    def served_until(client: str, end: float) -> None:
        if client in served:
            cell, since = served.pop(client)
            cell_slice((client, cell), since, end, "served by")
    ordered = events.sort_values("time_s", kind="stable")
    arrivals = Arrivals(ordered)
    delivered = cost = 0.0
    for row in records(ordered):
        if out:
            yield from out
            out.clear()
        kind, t = row["kind"], float(row["time_s"])
        if kind == "transfer_end":
            delivered += float(row["nbytes"])
            begin = t - float(row["duration_s"])
            if not (wanted(row["src"], row["dst"]) and in_window(begin, t)):
                continue
            tid = link(f"{row['src']} -> {row['dst']}")
            args = {"tag": row["tag"], "bytes": row["nbytes"], "path": row["path"],
                    "hops": str(row["path"]).count(">"), "transfer": int(row["transfer_id"])}
            out.append({"name": row["tag"], "cat": "transfer", "ph": "X", "ts": begin * US,
                        "dur": float(row["duration_s"]) * US, "pid": TRANSFERS_PID,
                        "tid": tid, "args": args})
            came = arrivals.before(row["src"], begin) if carries_model(row["tag"]) else None
            if came is not None and wanted(came.src, came.dst) and in_window(came.begin,
                                                                            came.end):
                flow = {"name": "model", "cat": "model", "id": int(row["transfer_id"])}
                out.append({**flow, "ph": "s", "ts": min(came.end, begin) * US,
                            "pid": TRANSFERS_PID,
                            "tid": link(f"{came.src} -> {came.dst}"),
                            "args": {"from": came.transfer, "into": int(row["transfer_id"])}})
                out.append({**flow, "ph": "f", "bp": "e", "ts": begin * US,
                            "pid": TRANSFERS_PID, "tid": tid})
            if keep is None:
                out.append({"name": "delivered bytes", "ph": "C", "ts": t * US, "pid": 0,
                            "args": {"bytes": delivered}})
        elif kind == "hop_end":
            begin = float(row["start_s"])
            if not (wanted(row["u"], row["v"]) and in_window(begin, t)):
                continue
            tid = hops.setdefault(f"{row['u']} -> {row['v']}", len(hops) + 1)
            out.append({"name": row["tag"], "cat": "hop", "ph": "X", "ts": begin * US,
                        "dur": (t - begin) * US, "pid": HOPS_PID, "tid": tid,
                        "args": {"transfer": int(row["transfer_id"]), "link": row["link"],
                                 "wire bytes": row["nbytes"],
                                 "rate share": round(float(row["rate_share"]), 4)}})
        elif kind in ("train_end", "aggregate"):
            begin = t - float(row["duration_s"])
            if not (wanted(row["node"]) and in_window(begin, t)):
                continue
            pid, tid = track(row["node"])
            name = ("train" if kind == "train_end" else f"aggregate ({row['level']})")
            args = {"round": int(row["round"])}
            if kind == "aggregate":
                args["updates"] = int(row["n_updates"])
                waited = arrivals.awaited(row["node"], begin, int(row["n_updates"]))
                if waited is not None:  # the first update was in; the last held it back
                    first, last = waited
                    # an async slice: waits of groups aggregated at one node may overlap
                    wait = {"name": "waiting for updates", "cat": "wait",
                            "id": f"wait-{next(ids)}", "pid": pid, "tid": tid}
                    out.append({**wait, "ph": "b", "ts": first.end * US,
                                "args": {"round": int(row["round"]), "last": last.src,
                                         "updates": int(row["n_updates"])}})
                    out.append({**wait, "ph": "e", "ts": last.end * US})
            elif not row["ok"]:
                name += " (dropped out)"
            out.append({"name": name, "cat": "compute", "ph": "X", "ts": begin * US,
                        "dur": float(row["duration_s"]) * US, "pid": pid, "tid": tid,
                        "args": args})
        elif kind == "transfer_fail" or (kind == "hand_over" and not row["ok"]):
            node = row["src"]
            if not (wanted(node) and in_window(t, t)):
                continue
            pid, tid = track(node)
            name = (f"failed -> {row['dst']} ({row['reason']})" if kind == "transfer_fail"
                    else f"hand-over to {row['dst']} failed")
            out.append({"name": name, "cat": "fault", "ph": "i", "s": "t", "ts": t * US,
                        "pid": pid, "tid": tid})
        elif kind == "association":
            key = (row["client"], row["cell"])
            if row["attached"]:
                attached.setdefault(key, t)
            elif key in attached:
                cell_slice(key, attached.pop(key), t)
                if served.get(row["client"], ("",))[0] == row["cell"]:  # it set
                    served_until(row["client"], t)
        elif kind == "serving":
            served_until(row["client"], t)
            served[row["client"]] = (row["cell"], t)
        elif kind in ("dropout", "link_state"):
            key = (kind, row["node"] if kind == "dropout" else row["link"])
            if not row["up"]:
                down.setdefault(key, t)
            elif key in down:
                outage(key, down.pop(key), t)
        elif (booked := row.get("cost_s")) is not None and not math.isnan(booked):
            cost += float(booked)  # a Cost record (its kind is the cost's kind)
            if keep is None:
                out.append({"name": "cost (eq. 5)", "ph": "C", "ts": t * US, "pid": 0,
                            "args": {"client-seconds": cost}})
        elif kind == "evaluation" and keep is None and in_window(t, t):
            out.append({"name": "accuracy", "ph": "C", "ts": t * US, "pid": 0,
                        "args": {"accuracy": row["accuracy"]}})
            if row["loss"] == row["loss"]:  # NaN where the model diverged: left out
                out.append({"name": "loss", "ph": "C", "ts": t * US, "pid": 0,
                            "args": {"loss": row["loss"]}})
    last = float(events["time_s"].max()) if len(events) else 0.0
    for key, begin in down.items():  # still down when the run ended
        outage(key, begin, last)
    for key, begin in attached.items():  # still in the cell when the run ended
        cell_slice(key, begin, last)
    for client in list(served):
        served_until(client, last)
    meta = [_process_name(0, "run")]
    meta += [_process_name(pid, PROCESS_NAMES[tier]) for tier, pid in PIDS.items()]
    for pid, name, tracks, always in ((TRANSFERS_PID, "transfers", links, True),
                                      (HOPS_PID, "link hops", hops, False),
                                      (LINKS_PID, "link outages", links_down, False)):
        if always or tracks:
            meta.append(_process_name(pid, name))
            meta += [_thread_name(pid, tid, track_name) for track_name, tid in tracks.items()]
    for node, tid in tids.items():
        meta.append(_thread_name(PIDS.get(tiers.get(node, "edge"), PIDS["edge"]), tid, node))
    yield from out
    yield from meta


def carries_model(tag: str) -> bool:
    """Whether a transfer's tag is a model's (``edge->cloud``): not secure aggregation's
    shares (``secagg client->edge``) nor the rest of a resumed upload (``resumed-part``)."""
    ends = str(tag).split("->")
    return len(ends) == 2 and ends[0] in PIDS and ends[1] in PIDS


class Arrival(NamedTuple):
    transfer: int
    src: str
    dst: str
    begin: float
    end: float


class Arrivals:
    """The models delivered into each node, in time order: the last one before a node sends a
    model is the one that model was made from (an edge server's last client upload before its
    aggregate leaves; the hand-over that brought the model before an edge server's
    broadcast); the last n before an aggregation of n updates are what it waited for."""

    def __init__(self, events: pd.DataFrame):
        self._by_node: dict[str, tuple[list[float], list[Arrival]]] = {}
        ends = events[events["kind"] == "transfer_end"] if len(events) else events
        for row in records(ends):  # in time order
            if carries_model(row["tag"]):
                t = float(row["time_s"])
                times, items = self._by_node.setdefault(row["dst"], ([], []))
                times.append(t)
                items.append(Arrival(int(row["transfer_id"]), row["src"], row["dst"],
                                     t - float(row["duration_s"]), t))

    def awaited(self, node: str, t: float, updates: int) -> tuple[Arrival, Arrival] | None:
        """The first and the last of the ``updates`` models delivered into ``node`` last by
        ``t`` (an aggregation's start), where they differ in time: the node had some in hand
        and waited for the rest; None where it did not wait. (Where one node aggregates for
        several groups at once, Group-FEL's, the last ``updates`` deliveries may mix them: the
        event table does not say which group a transfer served.)"""
        times, items = self._by_node.get(node, ((), ()))
        last = bisect.bisect_right(times, _later(t))
        first = last - updates
        if updates < 2 or first < 0 or times[last - 1] <= times[first]:
            return None
        return items[first], items[last - 1]

    def before(self, node: str, t: float) -> Arrival | None:
        """The last model delivered into ``node`` by time ``t``, or None."""
        times, items = self._by_node.get(node, ((), ()))
        k = bisect.bisect_right(times, _later(t))
        return items[k - 1] if k else None


def _process_name(pid: int, name: str) -> dict:
    return {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}


def _thread_name(pid: int, tid: int, name: str) -> dict:
    return {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


def records(frame: pd.DataFrame, chunk: int = 20_000) -> Iterator[dict]:
    """``frame``'s rows as dicts, a chunk at a time (never all of them at once)."""
    for start in range(0, len(frame), chunk):
        yield from frame.iloc[start:start + chunk].to_dict("records")


def _later(t: float) -> float:
    """``t`` and the instants that rounding makes of it: a transfer's start is read back as
    its end less its duration, a few ulps off the delivery it followed at once."""
    return t + 1e-9 * max(1.0, abs(t))
