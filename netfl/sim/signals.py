"""Termination signals treated as Ctrl-C, so a run or sweep stopped by ``kill``, a batch
scheduler's time limit or a closed terminal cleans up as it does on Ctrl-C."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


@contextmanager
def signals_interrupt():
    """SIGTERM and SIGHUP raise KeyboardInterrupt inside the block (in the main thread only,
    where Python can set handlers); the previous handlers come back after it."""

    def interrupt(signum, _frame):
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = [n for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    previous = {n: signal.signal(getattr(signal, n), interrupt) for n in names}
    try:
        yield
    finally:
        for name, handler in previous.items():
            signal.signal(getattr(signal, name), handler)
