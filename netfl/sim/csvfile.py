"""Reading the small CSV files a scenario names (client assignments, availability traces), with
every way such a file can be wrong reported through the caller's ``fail`` (which names the file
and the scenario field): not UTF-8, binary, NUL bytes, a missing header column."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from pathlib import Path


def csv_rows(path: Path, columns: set[str], fail: Callable[[str], None]
             ) -> Iterator[tuple[int, dict]]:
    """(line number, row) of each data row of ``path``; ``fail(message)`` (which must raise)
    where the file is not UTF-8 CSV text or its header lacks one of ``columns``."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or columns - set(reader.fieldnames):
                fail(f"needs a header with columns {','.join(sorted(columns))}; found "
                     f"{reader.fieldnames}")
            yield from enumerate(reader, start=2)
    except UnicodeDecodeError as exc:
        fail(f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}): a "
             f"CSV file of text is expected")
    except csv.Error as exc:
        fail(f"not a CSV file: {exc}")
