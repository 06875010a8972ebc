"""``netfl list``: what scenarios can name (algorithms, worlds, data sets, models, partitions,
device presets, transports), with the installed extensions."""

from __future__ import annotations

import typing

import typer
from rich.table import Table

from netfl.cli.common import err, out

DATASET_NOTES = {
    "fashion-mnist": "70,000 28x28 grey images, 10 classes (data.root, Debian's "
                     "dataset-fashion-mnist, or download)",
    "mnist": "70,000 28x28 handwritten digits (IDX files in data.root, or torchvision)",
    "emnist": "EMNIST letters/digits, split data.emnist_split (data.root or torchvision)",
    "cifar10": "60,000 32x32 colour images, 10 classes (torchvision)",
    "cifar100": "60,000 32x32 colour images, 100 classes (torchvision)",
    "digits": "scikit-learn's bundled 8x8 digits: 1,797 samples, 10 classes, no download",
    "synthetic": "FedProx's Synthetic(alpha, beta), one generated device per client",
    "arrays": "your own .npz at data.path (x_train, y_train, x_test, y_test)",
    "images": "your own image files under data.path (train/ or clients/, and test/)",
}


def list_(what: str = typer.Argument(
        "all", help="algorithms, worlds, datasets, models, partitions, devices, transports or "
             "all")) -> None:
    """List what scenarios can name: algorithms, worlds, data sets, models, partitions, device
    presets, transports (with installed extensions)."""
    from netfl.compute.device import PRESETS
    from netfl.scenario import Scenario, variants
    from netfl.scenario.sections import DataSpec, Links

    def kinds(field: str) -> list[tuple[str, str]]:
        return [(tag, _first_line(model))
                for tag, model in variants(Scenario.model_fields[field].annotation)]

    sections = {
        "algorithms": kinds("algorithm") + _extension_rows("netfl.algorithms"),
        "worlds": kinds("world"),
        "datasets": [(name, DATASET_NOTES.get(name, "")) for name in
                     _dataset_names()] + _extension_rows("netfl.datasets"),
        "models": kinds("model") + _extension_rows("netfl.models"),
        "partitions": [(tag, _first_line(model)) for tag, model in variants(
            DataSpec.model_fields["partition"].annotation)] + _extension_rows("netfl.partitions"),
        "devices": [(name, f"{p.flops / 1e9:g} GFLOP/s effective, {p.memory_bytes / 1e9:g} GB: "
                     f"{p.basis}") for name, p in PRESETS.items()],
        "transports": [(tag, _first_line(model)) for tag, model in
                       variants(Links.model_fields["transport"].annotation)],
    }
    if what != "all" and what not in sections:
        err.print(f"[red]unknown list {what!r}[/red]; choose: all, {', '.join(sections)}")
        raise typer.Exit(2)
    for title, rows in sections.items():
        if what in ("all", title):
            table = Table(title=title, title_justify="left", show_header=False, box=None)
            for name, text in rows:
                table.add_row(f"[bold]{name}[/bold]", text)
            out.print(table)


def _dataset_names() -> list[str]:
    from netfl.scenario.sections import DatasetName

    return list(typing.get_args(DatasetName))


def _extension_rows(group: str) -> list[tuple[str, str]]:
    """Installed extensions of an entry-point group: name and what their Spec says, or why they
    cannot be used."""
    from rich.markup import escape

    from netfl.extensions import ExtensionError, installed, load_for_group

    rows = []
    for name, entry in sorted(installed(group).items()):
        package = entry.dist.name if entry.dist else "?"
        try:
            found = load_for_group(group, name)
            text = _first_line(found.Spec) or _first_line(found)
            rows.append((name, escape(f"[extension, {package}] {text}")))
        except ExtensionError as exc:
            rows.append((name, f"[red]{escape(f'[broken extension, {package}]')}[/red] "
                               f"{escape(str(exc))}"))
    return rows


def _first_line(obj: object) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join((obj.__doc__ or "").strip().split("\n\n")[0].split())
