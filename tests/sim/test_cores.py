"""keep_freed_memory: glibc's malloc told to keep freed memory; a no-op where there is no glibc."""

import ctypes
import platform

import pytest

from netfl.sim import cores


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="mallopt is glibc's")
def test_glibc_takes_it_and_taking_it_twice_is_fine():
    assert cores.keep_freed_memory() is True
    assert cores.keep_freed_memory() is True


def test_no_libc_or_no_mallopt_is_a_no_op(monkeypatch):
    def no_library(_name):
        raise OSError("no such library")

    monkeypatch.setattr(ctypes, "CDLL", no_library)
    assert cores.keep_freed_memory() is False

    class Musl:  # a C library without mallopt
        pass

    monkeypatch.setattr(ctypes, "CDLL", lambda _name: Musl())
    assert cores.keep_freed_memory() is False


def test_a_refused_setting_says_so(monkeypatch):
    class Refusing:
        @staticmethod
        def mallopt(_param, _value):
            return 0

    monkeypatch.setattr(ctypes, "CDLL", lambda _name: Refusing())
    assert cores.keep_freed_memory() is False
