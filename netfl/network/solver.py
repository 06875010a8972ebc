"""The fabric's re-solving pass: the max-min rates of the classes a change can affect.

:class:`Solver` is the part of :class:`~netfl.network.fabric.Fabric` that runs once per instant
of simulated time with pending changes (``Fabric._schedule_pass``): it gathers the classes the
changes touch (changed classes, with the classes of the full channels they cross, and every
class of a changed channel), solves them with ``maxmin.max_min_rates`` against what the other
classes leave of each channel, and widens the set while a channel's outside classes may have to
change (``flow.unsettled``). A set of one class whose shared channels have room is solved
directly. It works on the fabric's state and calls its ``_set_rate``, ``_reschedule`` and
``_arm``.
"""

from __future__ import annotations

import math

from netfl.network.flow import TOLERANCE, Channel, FlowClass, unsettled
from netfl.network.maxmin import max_min_rates


class Solver:
    """The re-solving pass of a :class:`~netfl.network.fabric.Fabric` (its base class)."""

    def _pass(self, _event=None) -> None:
        """Re-solve the classes the pending changes can affect: the changed classes (with the
        classes of the full channels they cross) and those of changed channels, solved against
        what the others leave of each channel; then, while a channel's outside classes may
        have to change (``flow.unsettled``), add them and solve again."""
        self._pending = False
        members: dict[FlowClass, None] = {c: None for c in self._dirty_classes if c.members}
        for cls in list(members):
            for channel in cls.channels:
                if len(channel.classes) > 1 and channel.full():
                    members.update(dict.fromkeys(channel.classes))
        for channel in self._dirty_channels:
            members.update(dict.fromkeys(channel.classes))
        self._dirty_channels.clear()
        self._dirty_classes.clear()
        touched = set(members)  # their members changed: their next end may have too
        if len(members) == 1 and self._alone_or_roomy(next(iter(members))):
            members = {}
        while members:
            classes = list(members)
            counts = [len(k.members) for k in classes]
            on: dict[Channel, list[FlowClass]] = {}
            inside_load: dict[Channel, float] = {}
            for cls, count in zip(classes, counts, strict=True):
                for channel in cls.channels:
                    if channel in on:
                        on[channel].append(cls)
                        inside_load[channel] += cls.rate * count
                    else:
                        on[channel] = [cls]
                        inside_load[channel] = cls.rate * count
            outside = {c: max(c.load - inside_load[c], 0.0) if len(inside) < len(c.classes)
                       else 0.0 for c, inside in on.items()}
            capacity = {c: max(c.capacity_bps - outside[c], 0.0) for c in on}
            rates = max_min_rates([k.channels for k in classes], capacity,
                                  [k.cap for k in classes], counts)
            rate_of = dict(zip(classes, rates, strict=True))
            grow = [c for c, inside in on.items() if len(inside) < len(c.classes)
                    and unsettled(c, inside, members, outside[c], rate_of)]
            if grow:
                for channel in grow:
                    members.update(dict.fromkeys(channel.classes))
                continue
            self.recomputations += 1
            self.classes_solved += len(classes)
            for cls, rate in rate_of.items():
                if rate != cls.rate:
                    self._set_rate(cls, rate)
                elif cls in touched:
                    self._reschedule(cls)
            for channel, inside in on.items():
                channel.load = outside[channel] + math.fsum(k.rate * k.count for k in inside)
            break
        self._arm()

    def _alone_or_roomy(self, cls: FlowClass) -> bool:
        """Solve one class directly where the solver would solve it alone: each of its channels
        carries it alone, or is not full and stays not full at its new rate (the others on it,
        not held back there, keep their rates). Each member gets its cap or the tightest
        channel's room over the members: the same floats as the pass's solver (for one class,
        progressive filling gives min(cap, min_c room_c / count)). False (nothing done)
        elsewhere."""
        if not cls.members:
            return False
        count = len(cls.members)
        own = cls.rate * count
        outsides = []  # what the other classes on each channel carry
        for channel in cls.channels:
            if len(channel.classes) == 1:
                outsides.append(0.0)
            elif channel.load >= channel.capacity_bps * (1 - TOLERANCE):
                return False  # full: classes held back by it may have to change
            else:
                outsides.append(max(channel.load - own, 0.0))
        rate = min([cls.cap] + [max(channel.capacity_bps - outside, 0.0) / count
                                for channel, outside in zip(cls.channels, outsides,
                                                            strict=True)])
        loads = [outside + rate * count for outside in outsides]
        for channel, load in zip(cls.channels, loads, strict=True):
            if len(channel.classes) > 1 and load >= channel.capacity_bps * (1 - TOLERANCE):
                return False  # it would fill a channel others share: the solver decides
        self.recomputations += 1
        self.classes_solved += 1
        if rate != cls.rate:
            self._set_rate(cls, rate)
        else:
            self._reschedule(cls)
        for channel, load in zip(cls.channels, loads, strict=True):
            channel.load = load
        return True
