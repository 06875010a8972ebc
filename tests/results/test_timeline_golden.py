"""timeline.json byte for byte: the Chrome trace of stored event tables (short fake-model runs:
faults, a LEO and an IoV world, CHFL's ring, Group-FEL's costs), whole, in a window and for two
nodes, against the SHA-256 of the trace the same tables gave when the digests were recorded.

A change of the trace's format changes these digests on purpose: rerun
``python -m tests.results.test_timeline_golden`` to record them again, and say why in the commit.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from netfl.results.timeline import write_chrome_trace

DATA = Path(__file__).parent / "data" / "timeline"
RUNS = ("tiny-faults", "leo", "iov", "chfl", "group-fel")
VARIANTS = ("all", "window", "nodes")


def options(events: pd.DataFrame, variant: str) -> dict:
    """write_chrome_trace's keyword arguments for ``variant`` of a run's ``events``."""
    if variant == "window":
        last = float(events["time_s"].max())
        return {"start_s": last / 3, "end_s": 2 * last / 3}
    if variant == "nodes":
        trained = events.loc[events["kind"] == "train_end", "node"]
        uploads = events.loc[events["tag"] == "client->edge", "dst"]
        return {"nodes": [trained.iloc[0], uploads.iloc[0]]}
    return {}


def digest(run: str, variant: str, folder: Path) -> str:
    """SHA-256 of the trace file of ``run``'s stored events, ``variant`` of it."""
    events = pd.read_parquet(DATA / f"{run}.parquet")
    path = folder / f"{run}-{variant}.json"
    write_chrome_trace(path, events, **options(events, variant))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("run", RUNS)
def test_the_trace_of_stored_events_is_the_same_bytes(run, variant, tmp_path):
    expected = json.loads((DATA / "digests.json").read_text())
    assert digest(run, variant, tmp_path) == expected[f"{run}/{variant}"]


if __name__ == "__main__":  # record the digests of the current trace format
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        digests = {f"{run}/{variant}": digest(run, variant, Path(folder))
                   for run in RUNS for variant in VARIANTS}
    (DATA / "digests.json").write_text(json.dumps(digests, indent=1) + "\n")
    print(f"recorded {len(digests)} digests in {DATA / 'digests.json'}")
