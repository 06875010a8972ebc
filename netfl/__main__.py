"""``python -m netfl``: the same app as the ``netfl`` command (without the allocator re-exec)."""

from netfl.cli import app

app(prog_name="netfl")
