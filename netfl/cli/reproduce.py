"""``netfl reproduce [SECTION ...]``: run the four papers' reproduction sweeps and rebuild
docs/reproduction.md's tables, figures and verdicts from their results (netfl.reproduction)."""

from __future__ import annotations

from pathlib import Path

import typer

from netfl.cli.common import err, fail, out
from netfl.errors import NetflError

PLANS = Path("scenarios/reproduction")


def reproduce(
    sections: list[str] = typer.Argument(None, help="Sections to run (default: all plans)."),
    quick: bool = typer.Option(False, "--quick", help="The short scenarios, 2 seeds: minutes, "
                               "for CI; writes its own document under --out."),
    plans_dir: Path = typer.Option(PLANS, "--plans", help="Folder of plan files."),
    out_dir: Path | None = typer.Option(None, "--out", help="Results folder (default "
                                        "results/reproduction, or results/reproduction-quick)."),
    doc: Path | None = typer.Option(None, "--doc", help="Document to rebuild (default "
                                    "docs/reproduction.md; with --quick <out>/reproduction.md)."),
    tables_only: bool = typer.Option(False, "--tables-only", help="Run nothing: rebuild the "
                                     "document from the results there are."),
    executor: str | None = typer.Option(None, "--executor", help="local (default) or dask."),
    workers: int | None = typer.Option(None, "--workers", help="Worker processes; default one "
                                       "per core."),
    address: str | None = typer.Option(None, "--address", help="A running Dask scheduler."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Run the reproduction's sweeps (resuming: finished runs are kept) and rebuild the
    document's generated blocks. Exit 1 if a run failed, 2 for an invalid plan."""
    from netfl.reproduction.document import rebuild
    from netfl.reproduction.execute import run_plans
    from netfl.reproduction.plan import load_plans
    from netfl.sweep import DaskExecutor, LocalExecutor
    from netfl.sweep.progress import SweepProgress

    folder = out_dir or Path("results/reproduction-quick" if quick else "results/reproduction")
    document = doc or (folder / "reproduction.md" if quick else Path("docs/reproduction.md"))
    figures = (document.parent / "img" / "reproduction")
    kind = executor or ("dask" if address else "local")
    failed = 0
    try:
        if kind not in ("local", "dask"):
            raise NetflError(f"--executor {kind!r}: choose local or dask")
        plans = load_plans(plans_dir, sections or None)
        if not tables_only:
            def make_executor():
                return (LocalExecutor(workers) if kind == "local"
                        else DaskExecutor(address, workers))

            def make_progress(run, sweep):
                name = f"{run.plan.section}/{run.study.id}/{run.arm.label}" + (
                    f" ({run.point})" if run.point else "")
                params = {p.run_id: p.params for p in sweep.points}
                return SweepProgress(name, run.folder, err, out, params, show_bar=not quiet)

            try:
                results = run_plans(plans, folder, make_executor, make_progress, quick)
            except KeyboardInterrupt:
                err.print(f"[yellow]interrupted[/yellow]: finished runs are kept in {folder}; "
                          f"rerun the same command to resume")
                raise typer.Exit(130) from None
            failed = sum(len(r.failed) for _run, r in results)
        verdicts = rebuild(plans, folder, document, figures, quick)
    except NetflError as exc:
        raise fail(exc) from None
    out.print(f"{document}: {len(verdicts)} findings")
    for finding, verdict in verdicts:
        out.print(f"  {verdict.verdict:<30} {finding.claim}")
    if failed:
        err.print(f"[red]{failed} run(s) failed[/red]: see the logs/ folder of their sweep")
        raise typer.Exit(1)
