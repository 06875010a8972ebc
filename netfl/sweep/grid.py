"""Sweep definitions: cases x grid x seeds, expanded into validated points with stable run ids.

A sweep varies one scenario file. What varies (read by :mod:`netfl.sweep.parse`) comes from the
command line (``--grid key=v1,v2``, ``--seeds N``) and/or a ``sweep:`` section of the file::

    sweep:
      seeds: 3                      # or a list: [1, 2, 5]
      cases:                        # each case is a set of overrides (crossed with the grid)
        - {algorithm.kind: fedavg}
        - {algorithm.kind: hier-fedavg, algorithm.edge_rounds: 2}
      grid:                         # every combination of these values
        links.access.rate: [10 Mbps, 20 Mbps]

A ``--grid`` key replaces the same key of the file's grid; ``--seeds`` replaces its seeds.
Points are ordered cases, then grid (last key fastest), then seeds. Every point is validated
against the scenario schema before anything runs, and every problem of every point is reported
at once, naming where the bad value came from (the file's line, ``--grid``, ``--set``).

A point's run id is readable and stable: a slug of its parameters and a hash of its resolved
scenario (``fedavg_rate-10Mbps_s3-1a2b3c4d``), paths in it relative to the file's folder (and
files by their content), so a checkout elsewhere finds the same ids. The same point of the same
scenario file always gets the same id, which is how a sweep finds the runs it has already done;
editing the file's values changes the hash, so stale results are never reused.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.scenario import Scenario

# load_scenario cannot take a file that carries a sweep: section (the schema forbids unknown
# keys), so a sweep reads the file and applies overrides with the loader's own steps, keeping
# its file:line error reports and its resolution of relative paths against the file's folder.
from netfl.scenario.loader import (
    _apply_overrides,
    _read_yaml,
    remember_origin,
    validate_overridden,
)
from netfl.sweep.id_compat import as_hashed_before
from netfl.sweep.parse import (
    LABEL,
    MAX_SWEEP_POINTS,
    Origin,
    Value,
    parse_cli_grid,
    parse_section,
    seed_list,
)

SEED = "seed"



class SweepError(ScenarioError):
    """A sweep's problems (its section, --grid, --seeds, --set, every point), headed by the
    scenario file they concern: a --grid problem alone does not name it."""

    def __init__(self, problems: list[ScenarioProblem], source: str | None = None):
        super().__init__(problems)
        self.args = (list(problems), source)
        self.source = source

    def __str__(self) -> str:
        text = super().__str__()
        if not self.source:
            return text
        head, _, rest = text.partition(":\n")
        return f"{head} {self.source} (a sweep):\n{rest}"


@dataclass(frozen=True)
class Point:
    """One run of the sweep.

    params: what this point sets, in order (case keys, grid keys, then ``seed``), as read.
    overrides: every ``KEY=VALUE`` applied to the file (``--set`` first), in order.
    label: its case's ``label:`` (the name of its group in reports), or None.
    """

    params: dict
    overrides: tuple[str, ...]
    scenario: Scenario
    run_id: str
    label: str | None = None


@dataclass
class Sweep:
    """A validated sweep of one scenario file."""

    source: Path
    name: str
    fixed: list[str]
    cases: list[dict[str, Value]]
    grid: dict[str, list[Value]]
    seeds: list[int] | None
    points: list[Point] = field(default_factory=list)
    labels: list[str | None] = field(default_factory=list)  # one per case: its label: or None

    @property
    def param_keys(self) -> list[str]:
        keys = [k for case in self.cases for k in case] + list(self.grid) + [SEED]
        return list(dict.fromkeys(keys))

    @property
    def case_labels(self) -> list[str | None]:
        """Each case's ``label:``, or None."""
        return [*self.labels, *[None] * (len(self.cases) - len(self.labels))][:len(self.cases)]

    def definition(self) -> dict:
        """The sweep as plain data (for sweep.json)."""
        return {
            "scenario": str(self.source),
            "name": self.name,
            "set": list(self.fixed),
            "cases": [{**({LABEL: label} if label else {}),
                       **{k: v.value for k, v in case.items()}}
                      for case, label in zip(self.cases, self.case_labels, strict=True)],
            "grid": {k: [v.value for v in values] for k, values in self.grid.items()},
            "seeds": self.seeds,
            "params": self.param_keys,
        }


# ------------------------------------------------------------------------------- expansion


def load_sweep(path: str | Path, grid: Sequence[str] = (), seeds: int | None = None,
               overrides: Sequence[str] = ()) -> Sweep:
    """Read a scenario file and its sweep, expand every point and validate each.

    Args:
        path: the scenario file (with or without a ``sweep:`` section).
        grid: ``key=v1,v2`` strings (``--grid``); a key here replaces the file's.
        seeds: run every point with this many seeds (``--seeds``), replacing the file's.
        overrides: ``--set`` strings applied to every point first.

    Raises:
        ScenarioError: every problem of the sweep and of every point, at once.
    """
    path = Path(path)
    raw, lines = _read_yaml(path)
    source = str(path)
    problems: list[ScenarioProblem] = []
    cases, file_grid, file_seeds, origins, labels = parse_section(
        raw.pop("sweep", None), source, lines, problems)
    cli_grid = parse_cli_grid(grid, problems)
    for key in cli_grid:
        origins[("grid", key)] = Origin("--grid")
    merged = {**file_grid, **cli_grid}
    fixed = list(overrides)
    base = copy.deepcopy(raw)
    try:
        _apply_overrides(base, fixed, source)
    except ScenarioError as exc:
        problems.extend(exc.problems)
    first = base.get(SEED, 0) if isinstance(base.get(SEED, 0), int) else 0
    if seeds is not None:
        seeds_run = seed_list(seeds, first, Origin("--seeds"), problems)
    else:
        seeds_run = seed_list(file_seeds, first, origins.get("seeds", Origin(source)),
                               problems)
    case_keys = {k for case in cases for k in case}
    for key in merged:
        if key in case_keys:
            where = origins[("grid", key)]
            problems.append(ScenarioProblem(key, "set by both sweep.cases and the grid; keep "
                                            "it in one of them", has_value=False,
                                            source=where.source, line=where.line))
    if seeds_run is not None and (SEED in merged or SEED in case_keys):
        problems.append(ScenarioProblem(SEED, "swept by the grid and by seeds; use one",
                                        has_value=False, source="--seeds"
                                        if seeds is not None else source))
    sweep = Sweep(path, str(raw.get("name", path.stem)), fixed, cases, merged, seeds_run,
                  labels=labels)
    count = (max(len(cases), 1) * math.prod(len(v) for v in merged.values())
             * len(seeds_run or [None]))
    if count > MAX_SWEEP_POINTS:
        raise SweepError([ScenarioProblem(
            "sweep", f"{count:,} runs (cases x grid values x seeds) is more than "
            f"{MAX_SWEEP_POINTS:,}: split the sweep", has_value=False, source=source)],
            str(path))
    try:  # the points of what could be read, so every problem is reported at once
        sweep.points = _expand(sweep, raw, lines, origins, check_duplicates=not problems)
    except ScenarioError as exc:
        known = {p.format() for p in problems}
        problems += [p for p in exc.problems if p.format() not in known]
    if problems:
        raise SweepError(problems, str(path))
    sweep.name = sweep.points[0].scenario.name
    return sweep


def _expand(sweep: Sweep, raw: dict, lines: dict, origins: dict,
            check_duplicates: bool = True) -> list[Point]:
    """Every point, validated; ScenarioError with every problem of every point (and, where
    ``check_duplicates``, points that run the same scenario)."""
    source = str(sweep.source)
    keys = list(sweep.grid)
    combos = list(itertools.product(*(sweep.grid[k] for k in keys)))
    seeds = sweep.seeds if sweep.seeds is not None else [None]
    problems: dict[object, ScenarioProblem] = {}
    points: list[Point] = []
    for case_index, case in enumerate(sweep.cases or [{}]):
        for combo in combos:
            for seed in seeds:
                swept = list(case.items()) + list(zip(keys, combo, strict=True))
                texts = [f"{k}={v.text}" for k, v in swept]
                if seed is not None:
                    texts.append(f"{SEED}={seed}")
                try:
                    scenario = _validate(raw, lines, sweep.source, sweep.fixed, texts)
                except ScenarioError as exc:
                    for problem in exc.problems:
                        mapped = _locate(problem, case_index, case, keys, origins)
                        # an unknown key is one problem, whatever values the grid gives it
                        key = ((mapped.source, mapped.line, mapped.path, mapped.message)
                               if mapped.message.startswith("unknown key") else mapped.format())
                        problems.setdefault(key, mapped)
                    continue
                params = {k: v.value for k, v in swept}
                params[SEED] = scenario.seed
                label = (sweep.case_labels or [None])[case_index]
                points.append(Point(params, (*sweep.fixed, *texts), scenario,
                                    run_id(params, scenario, label=label, case=case), label))
    if problems:
        raise ScenarioError(list(problems.values()))
    if not check_duplicates:  # the sweep's section has problems: repeated points may come from them
        return points
    seen: dict[str, dict] = {}
    duplicates = []
    for point in points:
        if point.run_id in seen:
            duplicates.append(ScenarioProblem(
                "sweep", f"two points run the same scenario: {seen[point.run_id]} and "
                f"{point.params}; remove the repeated value", has_value=False, source=source))
        seen[point.run_id] = point.params
    if duplicates:
        raise ScenarioError(duplicates)
    return points


def _validate(raw: dict, lines: dict, path: Path, overrides: Sequence[str],
              swept: Sequence[str] = ()) -> Scenario:
    """load_scenario's steps on an already read file (less its sweep: section): ``overrides``
    are the user's --set, ``swept`` the point's grid, case and seed values."""
    source = str(path)
    data = copy.deepcopy(raw)
    # a --set (or a plan's set:) that switches the algorithm's kind keeps the file's other
    # keys, as netfl run's does; a grid or case value is taken as it is written
    carried: dict[tuple, set] = {}
    given = _apply_overrides(data, overrides, source, carried)
    overridden = given | _apply_overrides(data, swept, source)
    scenario = validate_overridden(data, carried, source, lines, overridden,
                                   path.resolve().parent)
    # problems found later (building the run) blame --set only for what --set gave: a grid
    # value points at its key's line in the file
    return remember_origin(scenario, source, lines, given)


def has_sweep(path: str | Path) -> bool:
    """Whether a scenario file has a sweep: section (False for a file that cannot be read:
    loading it reports why)."""
    try:
        raw, _lines = _read_yaml(Path(path))
    except ScenarioError:
        return False
    return "sweep" in raw


def load_base(path: str | Path, overrides: Sequence[str] = ()) -> Scenario:
    """The scenario of a file, leaving out its sweep: section if it has one: what ``netfl run``
    and ``netfl validate`` use, so a sweep file also runs as a single scenario."""
    path = Path(path)
    raw, lines = _read_yaml(path)
    raw.pop("sweep", None)
    return _validate(raw, lines, path, overrides)


def _locate(problem: ScenarioProblem, case_index: int, case: dict, keys: list[str],
            origins: dict) -> ScenarioProblem:
    """Point a problem raised by a swept override at where that override was written."""
    if problem.source != "--set":
        return problem
    path = tuple(problem.path.split(".")) if problem.path else ()

    def covers(key: str) -> bool:
        parts = tuple(key.split("."))
        return path[: len(parts)] == parts or (bool(path) and parts[: len(path)] == path)

    origin = None
    for key in keys:
        if covers(key):
            origin = origins[("grid", key)]
    for key in case:
        if covers(key):
            origin = origins.get(("case", case_index, key))
    if origin is None and path[:1] == (SEED,) and "seeds" in origins:
        origin = origins["seeds"]
    if origin is None:
        return problem
    return ScenarioProblem(problem.path, problem.message, problem.value, problem.has_value,
                           origin.source, origin.line)


# ------------------------------------------------------------------------------- run ids


def _slug_text(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "", text)[:16]


def _slug_part(key: str, value: object) -> str:
    """``short-value`` of one parameter; a whole section (a mapping) reads as its ``kind``, or
    its key where it has none, never as its JSON."""
    short = key.rsplit(".", 1)[-1]
    if isinstance(value, dict):
        kind = value.get("kind")
        return _slug_text(kind) if isinstance(kind, str) and _slug_text(kind) else short
    text = _slug_text(value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    if key == SEED:
        return f"s{text}"
    return text if short == "kind" else f"{short}-{text}"


def run_id(params: dict, scenario: Scenario, base_dir: str | Path | None = None,
           label: str | None = None, case: dict | None = None) -> str:
    """A readable, stable id: a slug of ``params`` and a hash of the resolved scenario (its
    output.dir aside, which does not change results). Uses hashlib, never hash(): the id must
    not depend on PYTHONHASHSEED. A case's ``label`` stands in the slug for the case's keys
    (``case``): ``hier-fedavg_s1-ccf9ae3d``. Only the hash identifies the run: a sweep finds a
    run made under another slug by it (see :func:`netfl.sweep.runner.run_dir`).

    Paths are hashed as written relative to ``base_dir`` (default: the scenario file's folder),
    a file's with the hash of its content, so the id does not depend on where the checkout is,
    and editing a referenced file (a topology, an assignment, a TLE set) changes it.
    """
    if base_dir is None:
        source = getattr(scenario, "_source", None)
        base_dir = Path(source).resolve().parent if source else Path.cwd()
    resolved = _portable(scenario.model_dump(mode="python"), scenario.model_dump(mode="json"),
                         Path(base_dir).resolve())
    resolved.get("output", {}).pop("dir", None)
    as_hashed_before(resolved)
    digest = hashlib.sha256(json.dumps(resolved, sort_keys=True).encode()).hexdigest()[:8]
    parts = [_slug_part(k, v) for k, v in params.items() if not (label and k in (case or {}))]
    if label:
        parts.insert(0, re.sub(r"[^A-Za-z0-9.+-]+", "-", label).strip("-")[:24] or "case")
    slug = "_".join(parts)[:48].strip("_-.")
    return f"{slug}-{digest}" if slug else digest


def _portable(python: object, dumped: object, base: Path) -> object:
    """``dumped`` (the JSON dump) with every path (a Path in the Python dump) made relative to
    ``base``, plus a file's content hash."""
    if isinstance(python, Path):
        relative = Path(os.path.relpath(python.resolve(), base)).as_posix()
        return {"path": relative, "sha256": _file_hash(python)} if python.is_file() else relative
    if isinstance(python, dict) and isinstance(dumped, dict):
        return {k: _portable(python.get(k), v, base) for k, v in dumped.items()}
    if isinstance(python, list | tuple) and isinstance(dumped, list):
        return [_portable(a, b, base) for a, b in zip(python, dumped, strict=True)]
    return dumped


def _file_hash(path: Path) -> str:
    stat = path.stat()
    return _hash_content(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _hash_content(path: str, _mtime_ns: int, _size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]
