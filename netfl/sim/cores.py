"""The host's CPU cores available to this process (torch-free: sweeps and trainers share it)."""

from __future__ import annotations

import os


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
