"""The host's CPU cores and memory available to this process (torch-free: sweeps, trainers and
the checks made before a run allocates share them)."""

from __future__ import annotations

import os


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def available_memory_bytes() -> int | None:
    """Memory the host can still give (``MemAvailable`` of /proc/meminfo; physical memory
    where that is missing), or None where the OS does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
