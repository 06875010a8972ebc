"""Building blocks of the scenario schema: the strict section base and quantities with units."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    model_validator,
)

from netfl.sim.clock import parse_quantity


class Section(BaseModel):
    """Base of every scenario section: unknown keys are errors, assignments are validated, and
    every number is finite (``.inf``, ``.nan`` or ``1e400 Mbps`` would simulate at time infinity
    or never end: a field that means "no limit" says so with ``null``)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, data: object) -> object:
        """``seed: true`` is a mistake, not 1 (pydantic would take a boolean for a number): a
        boolean given to a number field becomes a marker no number validates, so the error
        lands on that field with the value as written."""
        if not isinstance(data, dict):
            return data
        fields, marked = cls.model_fields, None
        for name, value in data.items():
            if isinstance(value, bool) and name in fields:
                leaves = _leaf_types(fields[name].annotation)
                if bool not in leaves and Any not in leaves and leaves & {int, float}:
                    marked = marked or dict(data)
                    marked[name] = _NotANumber(value)
        return data if marked is None else marked


class _NotANumber:
    """A boolean where a number belongs (shown as the boolean in the error)."""

    def __init__(self, value: bool):
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def _leaf_types(annotation: object) -> set:
    """The plain types an annotation accepts at its top level (through Annotated, unions and
    Optional; not inside lists or dicts)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _leaf_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_leaf_types(a) for a in typing.get_args(annotation)))
    if origin is typing.Literal:
        return {type(a) for a in typing.get_args(annotation)}
    return {annotation}


def _unit(dimension: str):
    return BeforeValidator(lambda value: parse_quantity(value, dimension))


# Quantities: strings with units in the file, floats in base units in Python (see sim.clock).
Duration = Annotated[float, _unit("time"), Field(ge=0, description="seconds")]
PositiveDuration = Annotated[float, _unit("time"), Field(gt=0, description="seconds")]
Rate = Annotated[float, _unit("rate"), Field(gt=0, description="bit/s")]
Size = Annotated[float, _unit("size"), Field(gt=0, description="bytes")]
NonNegativeSize = Annotated[float, _unit("size"), Field(ge=0, description="bytes")]
Flops = Annotated[float, _unit("flops"), Field(gt=0, description="FLOP/s")]
Watts = Annotated[float, _unit("watts"), Field(ge=0, description="electrical power, W")]
Energy = Annotated[float, _unit("energy"), Field(gt=0, description="J")]
Probability = Annotated[float, Field(ge=0, le=1)]


def _resolve(value: object, info: ValidationInfo) -> object:
    """Resolve a relative path against the scenario file's folder."""
    if not isinstance(value, str | Path):
        return value
    path = Path(value).expanduser()
    base = (info.context or {}).get("base_dir")
    if not path.is_absolute() and base is not None:
        path = Path(base) / path
    return path


def _resolve_path(value: object, info: ValidationInfo) -> object:
    """Resolve a relative path against the scenario file's folder and require a file there."""
    path = _resolve(value, info)
    if not isinstance(path, Path):
        return path
    if not path.exists():
        raise ValueError(f"file not found: {path}")
    if not path.is_file():
        raise ValueError(f"not a file: {path}")
    return path


ExistingFile = Annotated[Path, BeforeValidator(_resolve_path)]
ResolvedPath = Annotated[Path, BeforeValidator(_resolve)]

Distance = Annotated[float, _unit("distance"), Field(ge=0, description="metres")]
PositiveDistance = Annotated[float, _unit("distance"), Field(gt=0, description="metres")]
Speed = Annotated[float, _unit("speed"), Field(gt=0, description="m/s")]
NonNegativeSpeed = Annotated[float, _unit("speed"), Field(ge=0, description="m/s")]
Frequency = Annotated[float, _unit("frequency"), Field(gt=0, description="Hz")]
Power = Annotated[float, _unit("power"), Field(description="dBm")]
Gain = Annotated[float, _unit("gain"), Field(description="dB")]
NonNegativeGain = Annotated[float, _unit("gain"), Field(ge=0, description="dB")]
