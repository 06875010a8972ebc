"""Termination signals treated as Ctrl-C, so a run or sweep stopped by ``kill``, a batch
scheduler's time limit or a closed terminal cleans up as it does on Ctrl-C."""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager

_INTERRUPTED = threading.Event()


def interrupted() -> bool:
    """Whether a signal has interrupted this process inside ``signals_interrupt`` (even where
    its KeyboardInterrupt was swallowed, as in a finalizer)."""
    return _INTERRUPTED.is_set()


@contextmanager
def signals_interrupt():
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt inside the block (in the main thread
    only, where Python can set handlers), and are remembered (``interrupted``); the previous
    handlers come back after it. An interrupt that lands in a finalizer is swallowed there by
    Python, which would print it as "Exception ignored ... Traceback"; it is remembered
    already, so inside the block that print is left out (other unraisable errors still print).
    """

    def interrupt(signum, _frame):
        _INTERRUPTED.set()
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    unraisable = sys.unraisablehook

    def quiet_about_interrupts(report):
        if not (_INTERRUPTED.is_set() and isinstance(report.exc_value, KeyboardInterrupt)):
            unraisable(report)

    names = [n for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]
    previous = {n: signal.signal(getattr(signal, n), interrupt) for n in names}
    sys.unraisablehook = quiet_about_interrupts
    try:
        yield
    finally:
        sys.unraisablehook = unraisable
        for name, handler in previous.items():
            signal.signal(getattr(signal, name), handler)
