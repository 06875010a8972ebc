"""Building blocks of the scenario schema: the strict section base and quantities with units."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo

from netfl.sim.clock import parse_quantity


class Section(BaseModel):
    """Base of every scenario section: unknown keys are errors, assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _unit(dimension: str):
    return BeforeValidator(lambda value: parse_quantity(value, dimension))


# Quantities: strings with units in the file, floats in base units in Python (see sim.clock).
Duration = Annotated[float, _unit("time"), Field(ge=0, description="seconds")]
PositiveDuration = Annotated[float, _unit("time"), Field(gt=0, description="seconds")]
Rate = Annotated[float, _unit("rate"), Field(gt=0, description="bit/s")]
Size = Annotated[float, _unit("size"), Field(gt=0, description="bytes")]
NonNegativeSize = Annotated[float, _unit("size"), Field(ge=0, description="bytes")]
Flops = Annotated[float, _unit("flops"), Field(gt=0, description="FLOP/s")]
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
