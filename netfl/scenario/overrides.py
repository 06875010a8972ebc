"""``--set`` overrides applied to a scenario's raw mapping (netfl.scenario.loader reads them):
dotted paths set in place, and a switch of the algorithm's kind that keeps the file's other
algorithm keys."""

from __future__ import annotations

from collections.abc import Iterable

import yaml

from netfl.errors import ScenarioError, ScenarioProblem

OVERRIDE_SOURCE = "--set"


class ScenarioNotice(UserWarning):
    """Something an override changed beyond what it named (the CLI prints it as a warning)."""


def _node(raw: dict, parts: tuple):
    for part in parts:
        raw = raw[part]
    return raw


def _apply_overrides(raw: dict, overrides: Iterable[str], source: str | None,
                     carried: dict[tuple, set] | None = None) -> set[tuple]:
    """Apply ``a.b.c=VALUE`` overrides in place; return the paths they set. An override that
    switches the algorithm's ``kind`` (``algorithm.kind=X``, or ``algorithm={kind: X, ...}``)
    keeps the file's other algorithm keys (lr, eval_every, ...); ``carried`` gets them, so that
    those the new kind does not take can be dropped, and said."""
    carried = {} if carried is None else carried
    problems, done = [], set()
    for text in overrides:
        key, sep, value_text = text.partition("=")
        parts = tuple(int(p) if p.isdigit() else p for p in key.strip().split("."))
        if not sep or not key.strip() or any(p == "" for p in parts):
            problems.append(ScenarioProblem(
                key, f"an override is KEY=VALUE with a dotted KEY, e.g. seed=3; got {text!r}",
                has_value=False, source=OVERRIDE_SOURCE))
            continue
        try:
            value = yaml.safe_load(value_text) if value_text.strip() else None
        except yaml.YAMLError:
            value = value_text
        try:
            _carry_section(raw, parts, value, carried)
            _set_path(raw, parts, value)
            done.add(parts)
        except (KeyError, TypeError, IndexError) as exc:
            problems.append(ScenarioProblem(
                key.strip(), str(exc).strip("'\""), value, source=OVERRIDE_SOURCE))
    if problems:
        raise ScenarioError(problems)
    return done


# sections whose kind an override may switch keeping the file's other keys: the algorithm's
# (lr, eval_every, ... mean the same to every kind); any other section given whole is replaced
CARRIED_SECTIONS = (("algorithm",),)


def _carry_section(raw: dict, parts: tuple, value: object, carried: dict[tuple, set]) -> None:
    """Where ``value`` switches the algorithm's kind (``algorithm.kind=X``, or
    ``algorithm={kind: X, ...}`` with another kind than the file's), keep the file's other keys
    of the section: merged into ``value`` in place, named in ``carried``."""
    section = parts[:-1] if parts[-1] == "kind" else parts
    if section not in CARRIED_SECTIONS:
        return
    try:
        existing = _node(raw, section)
    except (KeyError, IndexError, TypeError):
        return
    if not isinstance(existing, dict) or "kind" not in existing:
        return
    if parts[-1] == "kind":
        keys = set(existing) - {"kind"}
    elif isinstance(value, dict) and value.get("kind", existing["kind"]) != existing["kind"]:
        keys = set(existing) - set(value)
        for key in keys:
            value[key] = existing[key]
    else:
        return
    if keys:
        carried.setdefault(section, set()).update(keys)


def _set_path(raw: dict, parts: tuple, value: object) -> None:
    node = raw
    for depth, part in enumerate(parts[:-1]):
        where = ".".join(map(str, parts[: depth + 1]))
        if isinstance(node, list):
            if not isinstance(part, int) or part >= len(node):
                raise IndexError(f"{where}: no item {part} in a list of {len(node)}")
            node = node[part]
        elif isinstance(node, dict):
            if node.get(part) is None:
                node[part] = {}
            node = node[part]
        else:
            raise TypeError(f"{where} is a value, not a section with fields")
        if not isinstance(node, dict | list):
            raise TypeError(f"{where} is a value ({node!r}), not a section with fields")
    last = parts[-1]
    if isinstance(node, list):
        if not isinstance(last, int) or last >= len(node):
            raise IndexError(f"no item {last} in a list of {len(node)}")
    node[last] = value
