"""A reproduction study's readings: a setting its paper states two ways, each choice with the
paper's words and the arms that run it (netfl.reproduction.readings judges findings by them)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from netfl.reproduction.metrics import METRIC_NAMES


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadingChoice(_Strict):
    """One way of reading a setting the paper states two ways: the paper's words for it and the
    arms that run it in place of the default reading's (``arms``: default arm -> this reading's
    arm, or null where that arm is not run under this reading: left out of its comparisons;
    empty for the default)."""

    label: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    arms: dict[str, str | None] = {}
    default: bool = False
    why: str = ""  # the default: why netfl reads it so; another: how it is read, in netfl's words


class Reading(_Strict):
    """A setting on which a verdict turns that the paper states two ways (or leaves out): each
    of its choices runs as its own arms, and every finding whose arms it replaces is judged
    once per choice."""

    setting: str = Field(min_length=1)
    source: str = ""
    choices: list[ReadingChoice] = Field(min_length=2)
    # the metrics the setting can change (default: all); findings on others are judged once
    # (a reading of the communication time leaves rounds to the target alone)
    metrics: list[str] = []

    @model_validator(mode="after")
    def _one_default(self) -> Reading:
        defaults = [c.label for c in self.choices if c.default]
        if len(defaults) != 1:
            raise ValueError(f"reading {self.setting!r}: exactly one choice is the default "
                             f"(default: true), not {len(defaults)}")
        if any(c.arms for c in self.choices if c.default):
            raise ValueError(f"reading {self.setting!r}: the default choice runs the study's own "
                             "arms, so it names none")
        unknown = [m for m in self.metrics if m not in METRIC_NAMES]
        if unknown:
            raise ValueError(f"reading {self.setting!r}: unknown metrics {unknown}; one of "
                             f"{', '.join(METRIC_NAMES)}")
        if any(not c.arms for c in self.choices if not c.default):
            raise ValueError(f"reading {self.setting!r}: every other choice names the arms it "
                             "runs instead ('arms': default arm -> its arm)")
        return self

    @property
    def default(self) -> ReadingChoice:
        return next(c for c in self.choices if c.default)
