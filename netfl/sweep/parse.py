"""Reading what a sweep varies: ``--grid key=v1,v2`` options and a file's ``sweep:`` section.

Problems are collected into a list (not raised one by one) so that a sweep reports them all at
once; every problem names its source: ``--grid``, ``--seeds``, or the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import yaml

from netfl.errors import ScenarioProblem

SECTION_KEYS = ("seeds", "cases", "grid")
LABEL = "label"  # a case's name in reports and run ids, not a scenario field
# More runs than any study here makes; a sweep past it is a typo (--seeds 100000000), and
# expanding and validating it would take hours before the first run.
MAX_SWEEP_POINTS = 100_000


@dataclass(frozen=True)
class Value:
    """One swept value: ``text`` is the override's VALUE (YAML), ``value`` what it reads as."""

    text: str
    value: object


@dataclass(frozen=True)
class Origin:
    """Where a swept key came from, for error messages: a source and, in a file, a line."""

    source: str
    line: int | None = None


def split_values(text: str) -> list[str]:
    """Split ``v1,v2,...`` on commas outside brackets, braces and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def read_value(text: str) -> object:
    try:
        return yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        return text


def file_value(value: object) -> Value:
    return Value(json.dumps(value), value)


def parse_cli_grid(items: Iterable[str], problems: list[ScenarioProblem]
                   ) -> dict[str, list[Value]]:
    """``--grid key=v1,v2`` options as {key: values}; bad ones go to ``problems``."""
    grid: dict[str, list[Value]] = {}
    for item in items:
        key, sep, rest = item.partition("=")
        key = key.strip()
        values = split_values(rest) if sep else []
        if not key or not sep or any(not part for part in key.split(".")):
            problems.append(ScenarioProblem(
                key, f"a grid is KEY=V1,V2,... with a dotted KEY, e.g. algorithm.lr=0.05,0.1; "
                f"got {item!r}", has_value=False, source="--grid"))
        elif any(v == "" for v in values):
            problems.append(ScenarioProblem(key, "empty value in the list (two commas in a row, "
                                            "or a trailing comma?)", rest, source="--grid"))
        elif key in grid:
            problems.append(ScenarioProblem(key, "given twice; list all its values in one "
                                            "--grid", rest, source="--grid"))
        else:
            grid[key] = [Value(v, read_value(v)) for v in values]
    return grid


def parse_section(section: object, source: str, lines: dict,
                   problems: list[ScenarioProblem]):
    """The file's sweep: section as (cases, grid, seeds, origins of its keys, labels: one per
    case, its ``label:`` text or None)."""
    cases: list[dict[str, Value]] = []
    labels: list[str | None] = []
    grid: dict[str, list[Value]] = {}
    seeds: object = None
    origins: dict = {}

    def bad(path: tuple, message: str, value: object = None, has_value: bool = True) -> None:
        line = next((lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines),
                    None)
        problems.append(ScenarioProblem(".".join(map(str, path)), message, value, has_value,
                                        source, line))

    if section is None:
        return cases, grid, seeds, origins, labels
    if not isinstance(section, dict):
        bad(("sweep",), "a mapping with any of: seeds, cases, grid", section)
        return cases, grid, seeds, origins, labels
    for key in section:
        if key not in SECTION_KEYS:
            bad(("sweep", key), f"unknown key; allowed keys: {', '.join(SECTION_KEYS)}",
                section[key])
    raw_grid = section.get("grid") or {}
    if not isinstance(raw_grid, dict):
        bad(("sweep", "grid"), "a mapping of dotted keys to lists of values, e.g. "
            "algorithm.lr: [0.05, 0.1]", raw_grid)
        raw_grid = {}
    for key, values in raw_grid.items():
        if not isinstance(values, list) or not values:
            bad(("sweep", "grid", key), "a non-empty list of values, e.g. [0.05, 0.1]", values)
            continue
        grid[str(key)] = [file_value(v) for v in values]
        origins[("grid", str(key))] = Origin(source, lines.get(("sweep", "grid", key)))
    raw_cases = section.get("cases") or []
    if not isinstance(raw_cases, list):
        bad(("sweep", "cases"), "a list of mappings of dotted keys to values", raw_cases)
        raw_cases = []
    for i, case in enumerate(raw_cases):
        if not isinstance(case, dict) or not case:
            bad(("sweep", "cases", i), "a non-empty mapping of dotted keys to values, e.g. "
                "{algorithm.kind: fedavg}", case)
            continue
        label = case.get(LABEL)
        if LABEL in case and (not isinstance(label, str) or not label.strip()):
            bad(("sweep", "cases", i, LABEL), "a case's label is a non-empty text, e.g. "
                "label: hier-fedavg", label)
            label = None
        elif label is not None and label.strip() in labels:
            bad(("sweep", "cases", i, LABEL), "given to two cases; each case's label names "
                "its runs apart", label)
        labels.append(label.strip() if isinstance(label, str) else None)
        overrides = {str(k): file_value(v) for k, v in case.items() if k != LABEL}
        if not overrides:
            bad(("sweep", "cases", i), "a case needs at least one override besides its "
                "label", case)
        cases.append(overrides)
        for k in case:
            origins[("case", i, str(k))] = Origin(
                source, lines.get(("sweep", "cases", i, k), lines.get(("sweep", "cases", i))))
    seeds = section.get("seeds")
    if seeds is not None:
        origins["seeds"] = Origin(source, lines.get(("sweep", "seeds")))
    return cases, grid, seeds, origins, labels


def seed_list(seeds: object, first: int, origin: Origin,
               problems: list[ScenarioProblem]) -> list[int] | None:
    if seeds is None:
        return None
    if isinstance(seeds, bool):
        seeds = None
    if isinstance(seeds, int) and 1 <= seeds <= MAX_SWEEP_POINTS:
        return list(range(first, first + seeds))
    if (isinstance(seeds, list) and seeds and all(isinstance(s, int) and not isinstance(s, bool)
                                                  for s in seeds)):
        if len(set(seeds)) == len(seeds):
            return list(seeds)
    problems.append(ScenarioProblem(
        "sweep.seeds" if origin.line is not None or origin.source != "--seeds" else "seeds",
        f"a count of seeds (1 to {MAX_SWEEP_POINTS:,}: the scenario's seed, +1, ...) or a "
        f"list of distinct integer seeds", seeds, source=origin.source, line=origin.line))
    return None
