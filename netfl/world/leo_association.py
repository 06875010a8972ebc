"""Which satellite in view serves a LEO user: ``world.association``'s policy (scenario/leo.py),
mixed into :class:`~netfl.world.leo.OrbitWorld`.

A user sees every satellite above its mask (the world is not exclusive); its *primary*
satellite is the one hierarchical FedAvg clusters it under and FedAvg routes it through. The
policy scores the satellites in view at the current simulated time: the rest of the user's
window with each (``longest-remaining``), the elevation (``highest-elevation``), or the order
they rose (``earliest-risen``). A user keeps its primary until it sets or another beats it by
the hysteresis margin.
"""

from __future__ import annotations

import bisect
import math

from netfl.world.orbits import elevation_deg


class SatelliteAssociation:
    """Needs from the world: ``spec.association``, ``edges_of``, ``sat_positions``,
    ``_pair_windows`` ((user, satellite) index -> sorted windows), ``_user``, ``_index``,
    ``_site_km``, ``_up``, ``_primary``, ``_decided`` and ``_served`` (dicts),
    ``_serving_listeners`` (a list), ``serving_changes`` (a count) and ``_env`` (set when the
    run starts)."""

    # -------------------------------------------------------------------- association

    def edge_of(self, client: str) -> str | None:
        """The satellite serving ``client`` now, by ``world.association``'s policy among those
        in view; kept until it sets or another beats it by the hysteresis margin. A change is
        told to ``subscribe_serving``'s listeners when it is first seen, and counted in
        ``serving_changes`` (a user's first satellite is not a change)."""
        serving = self._serving(client)
        if serving is not None and self._env is not None:
            last = self._served.get(client)
            if last != serving:
                self._served[client] = serving
                if last is not None:
                    self.serving_changes += 1
                for listener in self._serving_listeners:
                    listener(client, serving)
        return serving

    def subscribe_serving(self, listener) -> None:
        """Call ``listener(client, satellite)`` when a user's serving satellite is seen to have
        changed (it is picked when asked: the algorithms' and the network's questions)."""
        self._serving_listeners.append(listener)

    def _serving(self, client: str) -> str | None:
        attached = self.edges_of(client)
        if not attached:
            return None
        association = self.spec.association
        if association.policy == "earliest-risen" or self._env is None:
            return attached[0]
        now, current = self._env.now, self._primary.get(client)
        if association.policy == "longest-remaining":
            score, margin = self.window_left_s, association.hysteresis_s
        else:
            score, margin = self.elevation_deg, association.hysteresis_deg
        if association.reconfiguration is not None:
            return self._at_boundary(client, attached, score, margin, now)
        scores = {sat: score(client, sat, now) for sat in attached}
        best = max(attached, key=lambda sat: (scores[sat], -attached.index(sat)))
        if current in scores and scores[best] <= scores[current] + margin:
            return current
        self._primary[client] = best
        return best

    def _at_boundary(self, client: str, attached: list[str], score, margin: float,
                     now: float) -> str:
        """The satellite the global schedule gave ``client`` at its last boundary (decided
        when first asked after it, from the scores at the boundary): among those in view for
        the whole interval ahead, by the policy with its hysteresis; where none is, the best in
        view now (kept while in view)."""
        period = self.spec.association.reconfiguration.period
        boundary = self.last_boundary_s(now)
        current = self._primary.get(client)
        decided = self._decided.setdefault(client, [None])
        if decided[0] == boundary and current in attached:
            return current
        whole = [sat for sat in attached if self.window_left_s(client, sat, boundary) >= period]
        if not whole:
            best = current if current in attached else max(
                attached, key=lambda sat: (score(client, sat, now), -attached.index(sat)))
        else:
            scores = {sat: score(client, sat, boundary) for sat in whole}
            best = max(whole, key=lambda sat: (scores[sat], -attached.index(sat)))
            if current in scores and scores[best] <= scores[current] + margin:
                best = current
        decided[0] = boundary
        self._primary[client] = best
        return best

    def last_boundary_s(self, t: float) -> float:
        """The last boundary of the reconfiguration schedule at or before ``t`` (simulated
        seconds; boundaries fall ``phase`` s past each UTC minute, every ``period``)."""
        schedule = self.spec.association.reconfiguration
        start = self.spec.start
        past_minute = start.second + start.microsecond / 1e6  # at simulated time 0
        since = (past_minute + t - schedule.phase) % schedule.period
        boundary = t - since
        if t - boundary >= schedule.period - 1e-9:  # t on a boundary, rounding aside
            boundary += schedule.period
        return boundary

    def window_left_s(self, client: str, sat: str, t: float) -> float:
        """How long ``sat`` stays in ``client``'s view from ``t`` (0 when it is not in view)."""
        spans = self._pair_windows.get((self._user[client], self._index[sat]), [])
        i = bisect.bisect_right(spans, (t, math.inf)) - 1
        return max(spans[i][1] - t, 0.0) if i >= 0 else 0.0

    def elevation_deg(self, client: str, sat: str, t: float) -> float:
        """``sat``'s elevation above ``client``'s horizon at ``t`` (degrees)."""
        k = self._user[client]
        position = self.sat_positions(t)[self._index[sat]]  # all at once, cached per time
        return float(elevation_deg(position[None], self._site_km[k][None],
                                   self._up[k][None])[0])

