"""Reading scenarios: YAML (or a dict), ``--set`` overrides, and errors a person can act on.

Every problem is reported at once, each as ``file:line: field.path = value: why``, where *why*
says what is allowed (for a misspelt key, the allowed keys and the closest match).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import types
import typing
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml
from pydantic import BaseModel, Tag, ValidationError

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.scenario.extension_fields import ExtensionInvalid, ExtensionUnusable
from netfl.scenario.overrides import (  # noqa: F401 (ScenarioNotice re-exported)
    OVERRIDE_SOURCE,
    ScenarioNotice,
    _apply_overrides,
    _node,
)
from netfl.scenario.plugins import ALGORITHM_GROUP, MODEL_GROUP, PARTITION_GROUP, installed
from netfl.scenario.schema import Scenario

# the sections whose kind may name an extension, and its entry-point group
EXTENSIBLE = {("algorithm",): ALGORITHM_GROUP, ("model",): MODEL_GROUP,
              ("data", "partition"): PARTITION_GROUP}


def load_scenario(source: str | Path | Mapping, overrides: Iterable[str] = ()) -> Scenario:
    """Read and validate a scenario.

    Args:
        source: a YAML file path, or a mapping with the same structure.
        overrides: ``"a.b.c=VALUE"`` strings; VALUE is read as YAML (numbers, lists, strings).

    Raises:
        ScenarioError: listing every problem, each with file, line, field path and value.
    """
    if isinstance(source, Mapping):
        raw, name, lines, base_dir = copy.deepcopy(dict(source)), None, {}, Path.cwd()
    else:
        path = Path(source)
        raw, lines = _read_yaml(path)
        name, base_dir = str(path), path.resolve().parent
    carried: dict[tuple, set] = {}
    overridden = _apply_overrides(raw, overrides, name, carried)
    return remember_origin(validate_overridden(raw, carried, name, lines, overridden, base_dir),
                           name, lines, overridden)


def validate_overridden(raw: dict, carried: dict[tuple, set], name: str | None, lines: dict,
                        overridden: set[tuple], base_dir: Path) -> Scenario:
    """``raw`` after its overrides, validated; the file's keys an override's switch of kind
    kept (``carried``) that the new kind does not take are dropped, with a ScenarioNotice."""
    try:
        return Scenario.model_validate(raw, context={"base_dir": base_dir})
    except ValidationError as exc:
        dropped = _drop_carried_extras(raw, exc, carried)
        if not dropped:
            raise ScenarioError(_problems(exc, name, lines, overridden)) from None
    try:
        scenario = Scenario.model_validate(raw, context={"base_dir": base_dir})
    except ValidationError as again:
        raise ScenarioError(_problems(again, name, lines, overridden)) from None
    for section, keys in dropped.items():
        where = ".".join(map(str, section))
        kind = _node(raw, section).get("kind")
        warnings.warn(f"--set {where}: the file's {', '.join(sorted(keys))} do not apply "
                      f"to {where}.kind {kind!r} and were dropped", ScenarioNotice,
                      stacklevel=3)
    return scenario


def _drop_carried_extras(raw: dict, exc: ValidationError, carried: dict[tuple, set]
                         ) -> dict[tuple, set]:
    """Remove from ``raw`` the keys a section kept from the file when an override switched its
    kind (``carried``) that the new kind does not accept; return them per section."""
    dropped: dict[tuple, set] = {}
    for parts in _extra_keys(exc):
        section, key = tuple(parts[:-1]), parts[-1] if parts else None
        if key in carried.get(section, ()):
            _node(raw, section).pop(key, None)
            dropped.setdefault(section, set()).add(key)
    return dropped


def _extra_keys(exc: ValidationError, prefix: tuple = (), root: type[BaseModel] = Scenario
                ) -> list[tuple]:
    """The paths of every unknown key ``exc`` names, an extension's own section's included."""
    found = []
    for err in exc.errors(include_url=False):
        parts, _model, _union = _walk(err["loc"], root)
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, ExtensionInvalid):
            found += _extra_keys(cause.error, (*prefix, *parts), cause.spec)
        elif err["type"] == "extra_forbidden":
            found.append((*prefix, *parts))
    return found


def remember_origin(scenario: Scenario, source: str | None, lines: dict,
                    overridden: set[tuple]) -> Scenario:
    """Keep where the scenario came from (its file, the line of each key, what --set gave),
    so that problems found later, while its world, data or model are built, point there."""
    scenario._source, scenario._lines, scenario._overridden = source, lines, overridden
    return scenario


def locate(error: ScenarioError, scenario: Scenario) -> ScenarioError:
    """``error`` with each problem that names no file pointed at the scenario's file and the
    line of its field, or at ``--set`` where an override gave that field."""
    problems = []
    for problem in error.problems:
        if problem.source is None:
            parts = tuple(int(p) if p.isdigit() else p for p in problem.path.split(".")
                          if p) if problem.path else ()
            from_override = any(parts[: len(o)] == o for o in scenario._overridden)
            problem = dataclasses.replace(
                problem, source=OVERRIDE_SOURCE if from_override else scenario._source,
                line=None if from_override else _nearest_line(parts, scenario._lines))
        problems.append(problem)
    return ScenarioError(problems)


def dump_scenario(scenario: Scenario) -> str:
    """The resolved scenario as YAML: every default filled in, quantities in base units."""
    return yaml.safe_dump(scenario.model_dump(mode="json"), sort_keys=False)


# ------------------------------------------------------------------------------- reading


# More nodes than any scenario has, far fewer than an alias bomb expands to (each alias is a
# reference when read, but every consumer that walks the tree would walk it expanded).
MAX_YAML_NODES = 1_000_000


def read_yaml(path: Path) -> tuple[dict, dict[tuple, int]]:
    """A YAML mapping (keys unique, aliases bounded) and the line of each of its keys' paths.

    Raises:
        ScenarioError: naming the file (and line) where it is not readable YAML or no mapping.
    """
    return _read_yaml(Path(path))


def _read_yaml(path: Path) -> tuple[dict, dict[tuple, int]]:
    def fail(message: str, line: int | None = None):
        raise ScenarioError(
            [ScenarioProblem("", message, has_value=False, source=str(path), line=line)]
        )

    if not path.is_file():
        fail("file not found" if not path.exists() else "not a file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        fail(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} (a scenario "
             f"is a UTF-8 YAML file; re-save it as UTF-8)", line)
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_size(node, {}) > MAX_YAML_NODES:
            fail(f"its aliases expand to more than {MAX_YAML_NODES:,} values (an alias bomb?)")
        raw = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        fail(f"not valid YAML: {getattr(exc, 'problem', None) or exc}",
             mark.line + 1 if mark else None)
    except RecursionError:
        fail("nested too deeply to be a scenario")
    finally:
        loader.dispose()
    if not isinstance(raw, dict):
        fail("a scenario must be a mapping of sections (name, seed, world, ...)")
    lines: dict[tuple, int] = {}
    _index_lines(node, (), lines, set())
    return raw, lines


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, but a key written twice in one mapping is an error (YAML 1.2 says
    keys are unique; PyYAML would keep the last value silently)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first_line: dict = {}
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # '<<: *defaults' merges; the keys written beside it override
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in first_line
                except TypeError:
                    continue  # an unhashable key: the base loader reports it
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice in one mapping (first at line "
                        f"{first_line[key]})", key_node.start_mark)
                first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many nodes ``node`` holds with every alias expanded (shared nodes counted once per
    use, computed once each)."""
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = 1  # a recursive alias counts once rather than looping
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(v, memo) for v in node.value)
    else:
        size = 1
    memo[id(node)] = size
    return size


def _index_lines(node: yaml.Node, path: tuple, out: dict[tuple, int],
                 seen: set[int]) -> None:
    """Map each key path of a composed YAML tree to its 1-based line (a node reached again
    through an alias is indexed once, at its first path)."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, key.value)
            out[child] = key.start_mark.line + 1
            _index_lines(value, child, out, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, value in enumerate(node.value):
            out[(*path, i)] = value.start_mark.line + 1
            _index_lines(value, (*path, i), out, seen)


# ------------------------------------------------------------------------------- errors


def _problems(
    exc: ValidationError, source: str | None, lines: dict, overridden: set[tuple],
    prefix: tuple = (), root: type[BaseModel] = Scenario,
) -> list[ScenarioProblem]:
    """Every error of ``exc`` as a problem at its field's path (``prefix`` + its location
    below ``root``, the model validated), with file, line and what is allowed."""
    grouped: dict[tuple, list] = {}
    nested: list[ScenarioProblem] = []
    for err in exc.errors(include_url=False):
        parts, model, union = _walk(err["loc"], root)
        parts = (*prefix, *parts)
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, ExtensionInvalid):  # an extension's own section: its fields
            nested += _problems(cause.error, source, lines, overridden, parts, cause.spec)
            continue
        if isinstance(cause, ExtensionUnusable):
            given = err.get("input")
            kind = given.get("kind") if isinstance(given, dict) else getattr(given, "kind", None)
            parts, err = (*parts, "kind"), {**err, "msg": str(cause), "input": kind}
        message = _message(err, parts, model, union)
        if err["type"] == "union_tag_invalid":
            parts, err = (*parts, "kind"), {**err, "input": err["ctx"]["tag"]}
        # a section's own check (a model validator) names its fields in its message: the
        # section's whole content would only bury it
        has_value = err["type"] not in ("missing", "union_tag_not_found") and not (
            err["type"] == "value_error" and isinstance(err.get("input"), dict))
        key = (parts, repr(err.get("input")) if has_value else None)
        entry = grouped.setdefault(key, [parts, err.get("input"), has_value, []])
        if message not in entry[3]:
            entry[3].append(message)
    problems = []
    for parts, value, has_value, messages in grouped.values():
        # an error at or below an overridden path, or at a section the override created
        from_override = any(parts[: len(o)] == o or (parts and o[: len(parts)] == parts)
                            for o in overridden)
        line = _nearest_line(parts, lines) if not from_override else None
        problems.append(ScenarioProblem(
            ".".join(map(str, parts)), "; or ".join(messages), value if has_value else None,
            has_value, OVERRIDE_SOURCE if from_override else source, line))
    return problems + nested


def _message(err: dict, parts: tuple, model: type | None, union: object) -> str:
    kind, msg = err["type"], err["msg"]
    if kind == "extra_forbidden" and model is not None:
        allowed = list(model.model_fields)
        close = difflib.get_close_matches(str(parts[-1]), allowed, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown key; allowed keys: {', '.join(allowed)}{hint}"
    if kind == "union_tag_not_found" and union is not None:
        return f"needs a 'kind', one of: {', '.join(_tags(union))}"
    if kind == "union_tag_invalid":
        hint = ""
        group = EXTENSIBLE.get(tuple(parts))
        if group is not None:
            extra = sorted(installed(group))
            hint = (f"; or an installed extension ({', '.join(map(repr, extra))})" if extra
                    else "") + "; or your own as 'package.module:Class' (docs/extending.md)"
        return f"unknown kind; expected one of: {err['ctx']['expected_tags']}{hint}"
    if kind == "missing":
        return "required field is missing"
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            return msg[len(prefix):]
    return msg


def _nearest_line(parts: tuple, lines: dict) -> int | None:
    for n in range(len(parts), 0, -1):
        if parts[:n] in lines:
            return lines[parts[:n]]
    return None


def _walk(loc: tuple, root: type[BaseModel] = Scenario
          ) -> tuple[tuple, type[BaseModel] | None, object]:
    """Follow a pydantic error location through the schema, from ``root``.

    Returns the user-facing path (union branch labels removed), the model that holds the last
    part (for listing allowed keys) and the union type at the location, if it is one.
    """
    current: object = root
    parent_model: type[BaseModel] | None = None
    parts: list = []
    for part in loc:
        members = _union_members(current)
        if members is not None:
            current = next((m for m in members if part in _tags_of(m)), None)
            continue
        current = _strip(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            parent_model = current
            field = current.model_fields.get(part) if isinstance(part, str) else None
            current = field.annotation if field else None
        elif typing.get_origin(current) is dict:  # a mapping's key: its values' type
            current = typing.get_args(current)[1]
        elif typing.get_origin(current) in (list, tuple) and isinstance(part, int):
            args = typing.get_args(current)
            current = args[0] if typing.get_origin(current) is list else (
                args[part] if part < len(args) else None)
        else:
            current = None
        parts.append(part)
    union = current if _union_members(current) is not None else None
    return tuple(parts), parent_model, union


def _strip(tp: object) -> object:
    """Remove Annotated wrappers and a trailing ``| None``."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    args = typing.get_args(tp)
    if _is_union(tp) and type(None) in args and len(args) == 2:
        tp = next(a for a in args if a is not type(None))
    return _strip(tp) if typing.get_origin(tp) is typing.Annotated else tp


def _is_union(tp: object) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _union_members(tp: object) -> list | None:
    """A union's members, each still wearing its ``Tag`` where a callable discriminator
    chooses between them."""
    tp = _strip(tp)
    if not _is_union(tp):
        return None
    return list(typing.get_args(tp))


def _tags_of(member: object) -> list:
    """The ``kind`` values a union member accepts: its ``Tag`` (a callable discriminator's
    label, e.g. a section whose kind may be left out), and its ``kind`` Literal's values."""
    tags = [m.tag for m in getattr(member, "__metadata__", ()) if isinstance(m, Tag)]
    model = _strip(member)
    if isinstance(model, type) and issubclass(model, BaseModel) and "kind" in model.model_fields:
        tags += [t for t in typing.get_args(model.model_fields["kind"].annotation)
                 if t not in tags]
    return tags


def _tags(union: object) -> list:
    return [t for m in _union_members(union) or [] for t in _tags_of(m)]


def variants(annotation: object) -> list[tuple[str, type[BaseModel]]]:
    """The (kind, model) pairs a ``kind``-chosen field accepts (one model may take several)."""
    members = _union_members(annotation) or [_strip(annotation)]
    return [(tag, _strip(m)) for m in members for tag in _tags_of(m)]
