"""Fed-CHS over a constellation (the Appendix D of Yan et al., "Sequential Federated Learning in
Hierarchical Architecture on Non-IID Datasets", IEEE Transactions on Mobile Computing, 2025;
arXiv:2408.09762): lines 16-18 of Algorithm 1 follow visibility instead of the visit counts.

The serving satellite m(t) trains with the users that see it (lines 7-14 as in fed_chs.py);
``world.handover_margin`` before it would set (stop seeing every user), even mid-round (the
exchange under way is abandoned), it hands the model to the satellite in view with the longest
remaining window, over an ISL route or through a gateway. A failed hand-over leaves the model
with the last satellite that held it: it keeps training while it still sees users and tries
again after each round, and once it sees nobody it tries again every ``world.delay_update``;
that wait, and waiting for the next rise while no satellite sees a user, are reported as
``model_idle_s``. The run ends ``out_of_contacts`` when no satellite will see a user again.
"""

from __future__ import annotations

from netfl.algorithms.fed_chs import FedCHS


class FedCHSOrbital(FedCHS):
    """Fed-CHS with visibility-driven hand-overs (module docstring)."""

    model_idle_s = 0.0
    ORBITAL_VARIANT = None  # it is the variant

    def run(self):
        spec, world = self.spec, self.world
        w = self.trainer.init_params()
        if self.evaluate(w, 0):
            return
        m = yield from self.wait_for_visibility()
        for t in range(1, spec.rounds + 1):
            if m is not None and world.remaining_s(m, self.env.now) <= (
                    world.spec.handover_margin):
                m = yield from self.orbital_handover(m, t)
            if m is None:
                self.stop("out_of_contacts")
                return
            # the hand-over is a timed event: due a margin before m sets, even mid-round (where
            # m is already within the margin, no better satellite was in view: m trains on)
            due = world.remaining_s(m, self.env.now) - world.spec.handover_margin
            deadline = self.env.timeout(due) if due > 0 else None
            w = yield from self.train_cluster(m, w, t, deadline=deadline)
            if self.end_round(t, w):
                return

    def orbital_handover(self, m: str, t: int):
        """Hand the model from ``m`` to the satellite in view with the longest remaining
        window (the next ones as fallbacks); returns the new holder, ``m`` itself where no
        better satellite is in view, or None when no satellite will rise again."""
        world = self.world
        while True:
            now = self.env.now
            left = world.remaining_s(m, now)
            candidates = [s for s in world.visible_satellites(now)
                          if s != m and world.remaining_s(s, now) > left]
            if not candidates:
                if left > 0:
                    return m
                return (yield from self.wait_for_visibility(holder=m, round_=t))
            routable = [s for s in candidates if self.reachable(m, s)]
            if routable:
                holder = yield from self.move_model(m, routable, t)
                if holder != m:
                    return holder
            if left > 0:  # m still sees users: it keeps serving and tries again next round
                return m
            # no route now (m has no ISL neighbour and no gateway), or the hand-over failed,
            # and m sees nobody: it keeps the model and tries again when the geometry moved on
            started = self.env.now
            yield self.env.timeout(world.spec.delay_update)
            self.model_idle_s += self.env.now - started

    def wait_for_visibility(self, holder: str | None = None, round_: int = 0):
        """Wait (idle) until a satellite sees a user; returns it (after the model has moved
        there from ``holder``), or None when none will."""
        world = self.world
        started = self.env.now
        while not world.visible_satellites(self.env.now):
            rise = world.next_rise_s(self.env.now)
            if rise is None:
                self.model_idle_s += self.env.now - started
                return None
            yield self.env.timeout(max(rise - self.env.now, 0.0) + 1e-6)
        self.model_idle_s += self.env.now - started
        best = world.visible_satellites(self.env.now)
        if holder is None:
            return best[0]
        return (yield from self.move_model(holder, best, round_))

    def summary_extras(self) -> dict:
        return {"model_idle_s": self.model_idle_s}
