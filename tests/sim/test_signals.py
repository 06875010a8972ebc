import os
import signal
import sys

import pytest

from netfl.sim import signals
from netfl.sim.signals import interrupted, signals_interrupt


@pytest.fixture
def fresh_flag():
    signals._INTERRUPTED.clear()
    yield
    signals._INTERRUPTED.clear()


@pytest.fixture
def printed(monkeypatch):
    """What Python's unraisable hook would print ("Exception ignored in ...")."""
    reports = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: reports.append(report.exc_value))
    return reports


class SignalledWhileFinalised:
    """A finalizer that a signal lands in, as one can land in a primitive's token."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # Python runs the handler between bytecodes, here
            pass


def test_an_interrupt_swallowed_in_a_finalizer_is_remembered_without_a_traceback(
        fresh_flag, printed):
    with signals_interrupt():
        thing = SignalledWhileFinalised()
        del thing
    assert interrupted()
    assert printed == []


def test_other_unraisable_errors_still_print_inside_the_block(fresh_flag, printed):
    class Broken:
        def __del__(self):
            raise ValueError("a real bug in a finalizer")

    with signals_interrupt():
        thing = Broken()
        del thing
    assert [str(e) for e in printed] == ["a real bug in a finalizer"]


def test_the_previous_signal_handlers_and_hook_come_back(fresh_flag):
    hook, handler = sys.unraisablehook, signal.getsignal(signal.SIGTERM)
    with signals_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not handler
    assert sys.unraisablehook is hook and signal.getsignal(signal.SIGTERM) is handler
