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
    """Memory this process can still get: the host's ``MemAvailable`` (/proc/meminfo;
    physical memory where that is missing), or less where a cgroup limits it (a container, a
    batch job); None where the OS does not say."""
    host = None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    host = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if host is None:
        try:
            host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            pass
    limited = _cgroup_headroom_bytes()
    if limited is None:
        return host
    return limited if host is None else min(host, limited)


def _cgroup_headroom_bytes(root: str = "/sys/fs/cgroup") -> int | None:
    """What this process's cgroup (v2) may still use (memory.max less memory.current), or None
    without a limit."""
    try:
        with open(f"{root}/memory.max", encoding="ascii") as limit_file:
            limit = limit_file.read().strip()
        if limit == "max":
            return None
        with open(f"{root}/memory.current", encoding="ascii") as current_file:
            return max(int(limit) - int(current_file.read().strip()), 0)
    except (OSError, ValueError):
        return None
