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
* instants ("i") for failed transfers and failed hand-overs, and a slice for each failed or
  cancelled transfer attempt (from its start to its failure); slices for the time a node was
  unavailable (a dropout, on its track) and a link was down (an outage, on a track of the
  process ``link outages``);
* counters ("C") for accuracy and loss at each evaluation, cumulative delivered bytes and,
  where the algorithm books it, cumulative eq. (5) cost (Group-FEL).

docs/models/timeline.md gives the mapping. Windows (``start_s``, ``end_s``) and node filters
keep the file small for large runs.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd

from netfl.results.timeline_arrivals import TIERS, Arrivals, carries_model, records

__all__ = ["HOPS_PID", "LINKS_PID", "PIDS", "TIERS", "TRANSFERS_PID", "carries_model",
           "chrome_trace", "node_tiers", "records", "trace_events", "write_chrome_trace"]
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
    trace = _Trace(events, start_s, end_s, nodes, tiers)
    for row in records(trace.ordered):
        yield from trace.take()
        trace.read(row)
    trace.finish(float(events["time_s"].max()) if len(events) else 0.0)
    yield from trace.take()
    yield from trace.track_names()


class _Trace:
    """One trace as its event table is read in time order (``trace_events``): the tracks named
    so far, what is down, which user is in which cell and served by which satellite, the
    running totals, and ``out``, the trace events of the rows read since the last ``take``."""

    def __init__(self, events: pd.DataFrame, start_s: float, end_s: float,
                 nodes: Iterable[str] | None, tiers: dict[str, str] | None):
        self.start_s, self.end_s = start_s, end_s
        self.keep = None if nodes is None else set(nodes)
        self.tiers = node_tiers(events) if tiers is None else tiers
        self.tids: dict[str, int] = {}  # node -> its track in its tier's process
        self.links: dict[str, int] = {}  # "src -> dst" -> its track of transfers
        self.links_down: dict[str, int] = {}  # link -> its track of outages
        self.hops: dict[str, int] = {}  # "u -> v" -> its track of hops
        self.out: list[dict] = []
        self.ids = itertools.count()
        self.down: dict[tuple[str, str], float] = {}  # (kind, node or link) -> went down when
        self.attached: dict[tuple[str, str], float] = {}  # (client, cell) -> since when
        self.served: dict[str, tuple[str, float]] = {}  # LEO user -> (serving satellite, since)
        self.delivered = self.cost = 0.0
        self.attempts: dict[int, float] = {}  # transfer id -> its latest attempt's start
        self.ordered = events.sort_values("time_s", kind="stable")
        self.arrivals = Arrivals(self.ordered)
        # the updates an asynchronous step took (model_mixed rows at its node and end): a mix
        # took one and waited for none, whatever vectors its aggregation charged
        mixed = (events[events["kind"] == "model_mixed"] if "kind" in events
                 else events.iloc[:0])
        self.taken = (mixed.groupby(["node", "time_s"]).size().to_dict() if len(mixed)
                      else {})

    def take(self) -> list[dict]:
        """The trace events made since the last call, in order."""
        taken, self.out = self.out, []
        return taken

    # --- tracks and filters

    def track(self, node: str) -> tuple[int, int]:
        if node not in self.tids:
            self.tids[node] = len(self.tids) + 1
        return PIDS.get(self.tiers.get(node, "edge"), PIDS["edge"]), self.tids[node]

    def link(self, name: str) -> int:
        return self.links.setdefault(name, len(self.links) + 1)

    def wanted(self, *names: str) -> bool:
        return self.keep is None or any(n in self.keep for n in names)

    def in_window(self, begin: float, end: float) -> bool:
        return end >= self.start_s and begin <= self.end_s

    # --- one row of the event table

    def read(self, row: dict) -> None:
        """The trace events of one row of the table, into ``out``."""
        kind, t = row["kind"], float(row["time_s"])
        if kind == "transfer_start":
            self.attempts[int(row["transfer_id"])] = t
        elif kind == "transfer_end":
            self.attempts.pop(int(row["transfer_id"]), None)
            self.transfer(row, t)
        elif kind == "hop_end":
            self.hop(row, t)
        elif kind in ("train_end", "aggregate"):
            self.compute(row, kind, t)
        elif kind == "transfer_fail" or (kind == "hand_over" and not row["ok"]):
            self.failure(row, kind, t)
        elif kind == "association":
            key = (row["client"], row["cell"])
            if row["attached"]:
                self.attached.setdefault(key, t)
            elif key in self.attached:
                self.cell_slice(key, self.attached.pop(key), t)
                if self.served.get(row["client"], ("",))[0] == row["cell"]:  # it set
                    self.served_until(row["client"], t)
        elif kind == "serving":
            self.served_until(row["client"], t)
            self.served[row["client"]] = (row["cell"], t)
        elif kind in ("dropout", "link_state"):
            key = (kind, row["node"] if kind == "dropout" else row["link"])
            if not row["up"]:
                self.down.setdefault(key, t)
            elif key in self.down:
                self.outage(key, self.down.pop(key), t)
        elif (booked := row.get("cost_s")) is not None and not math.isnan(booked):
            self.cost += float(booked)  # a Cost record (its kind is the cost's kind)
            if self.keep is None:
                self.out.append({"name": "cost (eq. 5)", "ph": "C", "ts": t * US, "pid": 0,
                                 "args": {"client-seconds": self.cost}})
        elif kind == "evaluation" and self.keep is None and self.in_window(t, t):
            self.counters(row, t)

    def transfer(self, row: dict, t: float) -> None:
        """A delivered transfer: its slice on its pair's track, the arrow from the model its
        sender last received, and the delivered-bytes counter."""
        self.delivered += float(row["nbytes"])
        begin = t - float(row["duration_s"])
        if not (self.wanted(row["src"], row["dst"]) and self.in_window(begin, t)):
            return
        tid = self.link(f"{row['src']} -> {row['dst']}")
        args = {"tag": row["tag"], "bytes": row["nbytes"], "path": row["path"],
                "hops": str(row["path"]).count(">"), "transfer": int(row["transfer_id"])}
        self.out.append({"name": row["tag"], "cat": "transfer", "ph": "X", "ts": begin * US,
                         "dur": float(row["duration_s"]) * US, "pid": TRANSFERS_PID,
                         "tid": tid, "args": args})
        came = self.arrivals.before(row["src"], begin) if carries_model(row["tag"]) else None
        if came is not None and self.wanted(came.src, came.dst) and self.in_window(came.begin,
                                                                                   came.end):
            flow = {"name": "model", "cat": "model", "id": int(row["transfer_id"])}
            self.out.append({**flow, "ph": "s", "ts": min(came.end, begin) * US,
                             "pid": TRANSFERS_PID,
                             "tid": self.link(f"{came.src} -> {came.dst}"),
                             "args": {"from": came.transfer, "into": int(row["transfer_id"])}})
            self.out.append({**flow, "ph": "f", "bp": "e", "ts": begin * US,
                             "pid": TRANSFERS_PID, "tid": tid})
        if self.keep is None:
            self.out.append({"name": "delivered bytes", "ph": "C", "ts": t * US, "pid": 0,
                             "args": {"bytes": self.delivered}})

    def hop(self, row: dict, t: float) -> None:
        """One hop of a transfer: a slice on its link direction's track."""
        begin = float(row["start_s"])
        if not (self.wanted(row["u"], row["v"]) and self.in_window(begin, t)):
            return
        tid = self.hops.setdefault(f"{row['u']} -> {row['v']}", len(self.hops) + 1)
        self.out.append({"name": row["tag"], "cat": "hop", "ph": "X", "ts": begin * US,
                         "dur": (t - begin) * US, "pid": HOPS_PID, "tid": tid,
                         "args": {"transfer": int(row["transfer_id"]), "link": row["link"],
                                  "wire bytes": _hop_wire_bytes(row),
                                  "rate share": round(float(row["rate_share"]), 4)}})

    def compute(self, row: dict, kind: str, t: float) -> None:
        """Local training or an aggregation: a slice on the node's track; before an aggregation
        that waited for updates, the wait, with whose update came last."""
        begin = t - float(row["duration_s"])
        if not (self.wanted(row["node"]) and self.in_window(begin, t)):
            return
        pid, tid = self.track(row["node"])
        name = ("train" if kind == "train_end" else f"aggregate ({row['level']})")
        args = {"round": int(row["round"])}
        if kind == "aggregate":
            taken = int(self.taken.get((row["node"], t), row["n_updates"]))
            args["updates"] = taken
            waited = self.arrivals.awaited(row["node"], begin, taken)
            if waited is not None:  # the first update was in; the last held it back
                first, last = waited
                # an async slice: waits of groups aggregated at one node may overlap
                wait = {"name": "waiting for updates", "cat": "wait",
                        "id": f"wait-{next(self.ids)}", "pid": pid, "tid": tid}
                self.out.append({**wait, "ph": "b", "ts": first.end * US,
                                 "args": {"round": int(row["round"]), "last": last.src,
                                          "updates": taken}})
                self.out.append({**wait, "ph": "e", "ts": last.end * US})
        elif not row["ok"]:
            name += " (dropped out)"
        self.out.append({"name": name, "cat": "compute", "ph": "X", "ts": begin * US,
                         "dur": float(row["duration_s"]) * US, "pid": pid, "tid": tid,
                         "args": args})

    def failure(self, row: dict, kind: str, t: float) -> None:
        """A failed transfer or hand-over: an instant on its sender's track; a failed transfer
        attempt also a slice on its pair's track, from the attempt's start to its failure."""
        node = row["src"]
        if kind == "transfer_fail":
            self.failed_slice(row, t)
        if not (self.wanted(node) and self.in_window(t, t)):
            return
        pid, tid = self.track(node)
        name = (f"failed -> {row['dst']} ({row['reason']})" if kind == "transfer_fail"
                else f"hand-over to {row['dst']} failed")
        self.out.append({"name": name, "cat": "fault", "ph": "i", "s": "t", "ts": t * US,
                         "pid": pid, "tid": tid})

    def failed_slice(self, row: dict, t: float) -> None:
        """A transfer attempt that failed (or was cancelled): airtime that delivered nothing."""
        began = self.attempts.get(int(row["transfer_id"]))
        if not row["will_retry"]:
            self.attempts.pop(int(row["transfer_id"]), None)
        if began is None or not (self.wanted(row["src"], row["dst"])
                                 and self.in_window(began, t)):
            return
        cancelled = row["reason"] == "cancelled"
        self.out.append({"name": f"{row['tag']} ({'cancelled' if cancelled else 'failed'})",
                         "cat": "cancelled" if cancelled else "failed", "ph": "X",
                         "ts": began * US, "dur": (t - began) * US, "pid": TRANSFERS_PID,
                         "tid": self.link(f"{row['src']} -> {row['dst']}"),
                         "args": {"tag": row["tag"], "reason": row["reason"],
                                  "transfer": int(row["transfer_id"]),
                                  "will retry": bool(row["will_retry"])}})

    def counters(self, row: dict, t: float) -> None:
        """An evaluation: the accuracy and (where finite) loss counters."""
        self.out.append({"name": "accuracy", "ph": "C", "ts": t * US, "pid": 0,
                         "args": {"accuracy": row["accuracy"]}})
        if row["loss"] == row["loss"]:  # NaN where the model diverged: left out
            self.out.append({"name": "loss", "ph": "C", "ts": t * US, "pid": 0,
                             "args": {"loss": row["loss"]}})

    # --- spans that end later than they begin

    def outage(self, key: tuple[str, str], begin: float, end: float) -> None:
        """A dropout as a slice on the node's track, a link outage on the link's."""
        kind, name = key
        if not self.in_window(begin, end) or (kind == "dropout" and not self.wanted(name)) or (
                kind == "link_state" and self.keep is not None):
            return
        if kind == "dropout":
            pid, tid = self.track(name)
        else:
            pid, tid = LINKS_PID, self.links_down.setdefault(name, len(self.links_down) + 1)
        self.out.append({"name": "unavailable" if kind == "dropout" else "down", "cat": "fault",
                         "ph": "X", "ts": begin * US, "dur": (end - begin) * US, "pid": pid,
                         "tid": tid})

    def cell_slice(self, key: tuple[str, str], begin: float, end: float,
                   what: str = "attached to") -> None:
        """A user's stay in a cell (or, ``what`` "served by", its time served by a satellite)
        as an async slice on its track (async: the stay overlaps the user's training and
        transfers, and on a hand-over the next may begin first)."""
        client, cell = key
        if not (self.wanted(client, cell) and self.in_window(begin, end)):
            return
        pid, tid = self.track(client)
        category = "cell" if what == "attached to" else "serving"
        stay = {"name": f"{what} {cell}", "cat": category, "id": f"{category}-{next(self.ids)}",
                "pid": pid, "tid": tid}
        self.out.append({**stay, "ph": "b", "ts": begin * US, "args": {"cell": cell}})
        self.out.append({**stay, "ph": "e", "ts": end * US})

    def served_until(self, client: str, end: float) -> None:
        if client in self.served:
            cell, since = self.served.pop(client)
            self.cell_slice((client, cell), since, end, "served by")

    def finish(self, last: float) -> None:
        """Close at ``last`` (the run's last event) what was still open: outages, stays in
        cells, service by satellites."""
        for key, begin in self.down.items():  # still down when the run ended
            self.outage(key, begin, last)
        for key, begin in self.attached.items():  # still in the cell when the run ended
            self.cell_slice(key, begin, last)
        for client in list(self.served):
            self.served_until(client, last)

    def track_names(self) -> list[dict]:
        """The metadata events that name the processes and the tracks made."""
        meta = [_process_name(0, "run")]
        meta += [_process_name(pid, PROCESS_NAMES[tier]) for tier, pid in PIDS.items()]
        for pid, name, tracks, always in ((TRANSFERS_PID, "transfers", self.links, True),
                                          (HOPS_PID, "link hops", self.hops, False),
                                          (LINKS_PID, "link outages", self.links_down, False)):
            if always or tracks:
                meta.append(_process_name(pid, name))
                meta += [_thread_name(pid, tid, track_name)
                         for track_name, tid in tracks.items()]
        for node, tid in self.tids.items():
            meta.append(_thread_name(PIDS.get(self.tiers.get(node, "edge"), PIDS["edge"]), tid,
                                     node))
        return meta


def _process_name(pid: int, name: str) -> dict:
    return {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}


def _thread_name(pid: int, tid: int, name: str) -> dict:
    return {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


def _hop_wire_bytes(row: dict) -> float:
    """A ``hop_end`` row's bytes on the wire: ``wire_bytes``, or ``nbytes`` in the event tables
    of runs made before hop records had a ``wire_bytes`` column."""
    wire = row.get("wire_bytes")
    if wire is None or (isinstance(wire, float) and math.isnan(wire)):
        return row["nbytes"]
    return wire
