"""The event table of a traced run, written to disk as the run goes.

A run that keeps its events (``output.trace`` or ``output.timeline``) and writes a results
folder spools the trace records into a Parquet file a chunk at a time, instead of holding a
dict per record for the whole run (a run of 10,000 clients made 320,000 of them, 210 MB). The
table read back is the one ``pandas.DataFrame(rows)`` would have made of the same rows: the
columns of the kinds that occurred, in the order they first occurred, with the same types.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from netfl.sim.trace import Record

_ARROW = {"float": pa.float64(), "int": pa.int64(), "str": pa.string(), "bool": pa.bool_(),
          "tuple[str, ...]": pa.string()}  # tuples become '>'-joined strings (Record.as_row)


def _record_types(base: type = Record) -> list[type]:
    found = []
    for sub in base.__subclasses__():
        found += [sub, *_record_types(sub)]
    return found


def record_columns(kind: type) -> list[str]:
    """The columns a record type's rows have (``Record.as_row``), in order."""
    names = [f.name for f in dataclasses.fields(kind)]
    return ["kind", *[n for n in names if n != "kind"]]


def event_schema() -> pa.Schema:
    """Every column any record type has, with its type (a name has one type in every record)."""
    types: dict[str, pa.DataType] = {"kind": pa.string()}
    for kind in _record_types():
        if not kind.in_event_table:  # a bulk record, never emitted where a table is kept
            continue
        for f in dataclasses.fields(kind):
            arrow = _ARROW[str(f.type)]
            if types.setdefault(f.name, arrow) != arrow:
                raise TypeError(f"trace field {f.name!r} is {types[f.name]} in one record type "
                                f"and {arrow} in {kind.__name__}")
    return pa.schema(list(types.items()))


class EventSpool:
    """Rows of trace records, appended in order, written to ``directory/events.parquet`` every
    ``chunk_rows`` rows. ``table()`` closes the file and reads the whole table back."""

    def __init__(self, directory: Path, chunk_rows: int = 20_000):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "events.parquet"
        self._schema = event_schema()
        self._chunk = chunk_rows
        self._rows: list[dict] = []
        self._kinds: dict[type, None] = {}  # record types in the order they first came
        self._writer: pq.ParquetWriter | None = None

    def add(self, record: Record) -> None:
        if type(record) not in self._kinds:
            self._kinds[type(record)] = None
        self._rows.append(record.as_row())
        if len(self._rows) >= self._chunk:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self._schema)
        self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self._schema))
        self._rows = []

    def table(self) -> pd.DataFrame:
        """The whole event table (the file is complete from here on)."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        columns = list(dict.fromkeys(c for kind in self._kinds for c in record_columns(kind)))
        if not self.path.exists():
            return pd.DataFrame()
        table = pq.read_table(self.path, columns=columns).to_pandas()
        for column in [c for c in table.columns if pd.api.types.is_object_dtype(table[c])]:
            missing = table[column].isna().to_numpy()
            if missing.any():
                values = table[column].to_numpy(dtype=object, copy=True)
                values[missing] = np.nan
                table[column] = values
        return table
