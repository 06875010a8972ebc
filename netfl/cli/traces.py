"""``netfl trace sample|fedscale``: device traces in netfl's format (devices.csv and
availability.csv; docs/models/compute.md, "Device traces")."""

from __future__ import annotations

from pathlib import Path

import typer

from netfl.cli.common import err, out

trace_app = typer.Typer(add_completion=False, no_args_is_help=True,
                        help="Make or convert device traces (devices.csv, availability.csv).")


def _write(devices, availability, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, table in (("devices.csv", devices), ("availability.csv", availability)):
        tmp = folder / f".{name}.tmp"
        table.to_csv(tmp, index=False)
        tmp.replace(folder / name)
    out.print(f"{folder}: {len(devices):,} devices, {len(availability):,} availability "
              f"intervals (devices.csv, availability.csv)")


@trace_app.command("sample")
def sample(
    out_dir: Path = typer.Option(..., "--out", help="Folder for devices.csv, availability.csv."),
    devices: int = typer.Option(50, "--devices", min=1, help="How many devices."),
    seed: int = typer.Option(1, "--seed", min=0),
    horizon: float = typer.Option(7200.0, "--horizon", min=1.0, help="Seconds of availability."),
) -> None:
    """A made-up phone-class population: lognormal FLOP/s, power, on/off availability."""
    from netfl.compute.trace_convert import sample_trace

    _write(*sample_trace(devices, seed, horizon), out_dir)


@trace_app.command("fedscale")
def fedscale(
    capacity: Path = typer.Option(..., "--capacity", exists=True, dir_okay=False,
                                  help="FedScale's client_device_capacity (a pickle)."),
    behaviour: Path | None = typer.Option(None, "--behaviour", exists=True, dir_okay=False,
                                          help="FedScale's client_behave_trace (a pickle)."),
    reference_flops: float = typer.Option(..., "--reference-flops", min=1.0,
                                          help="Training FLOPs per sample of the model the "
                                          "trace's latencies were measured on."),
    horizon: float | None = typer.Option(None, "--horizon", help="Seconds of availability "
                                         "(default: one period of the behaviour trace)."),
    out_dir: Path = typer.Option(..., "--out", help="Folder for devices.csv, availability.csv."),
) -> None:
    """Convert FedScale's device-capacity and client-behaviour traces (see
    docs/models/compute.md for where to get them)."""
    import pickle

    from netfl.compute.trace_convert import convert_fedscale, load_data_pickle

    try:
        capacity_data = load_data_pickle(capacity)
        behaviour_data = load_data_pickle(behaviour) if behaviour else None
        if not isinstance(capacity_data, dict) or (behaviour_data is not None
                                                   and not isinstance(behaviour_data, dict)):
            raise ValueError("expected a pickled dictionary (client id -> entry)")
        devices, availability = convert_fedscale(capacity_data, behaviour_data,
                                                 reference_flops, horizon)
    except (pickle.UnpicklingError, ValueError, KeyError, TypeError, EOFError) as exc:
        err.print(f"[red]error:[/red] {capacity if behaviour is None else 'the traces'}: {exc}")
        raise typer.Exit(2) from None
    skipped = len(capacity_data) - len(devices)
    if skipped:
        err.print(f"{skipped} device(s) without a positive computation latency left out")
    _write(devices, availability, out_dir)
