"""Reproduction plans: which sweeps reproduce a paper's tables, and which findings they test.

A plan is a YAML file under ``scenarios/reproduction/`` (docs/reproduction.md shows one)::

    section: chfl                          # the part of docs/reproduction.md it fills
    title: CHFL (cyclic hierarchical FL)
    studies:
      - id: table3                         # folder <out>/<section>/<id>/<arm>/, block name
        title: Table 3, local steps to the target
        seeds: 3                           # every arm x grid point runs with seeds seed..seed+2
        grid: {data.partition.p_c: [2, 5]} # crossed with every arm (as `netfl sweep --grid`)
        set: [stop.max_sim_time=2h]        # applied to every arm (as --set)
        arms:                              # the table's rows: one scenario file each
          - {label: CHFL, scenario: ../chfl/paper-chfl.yaml}
          - {label: SFL, scenario: ../chfl/paper-sfl.yaml, set: [algorithm.rounds=50]}
          - {label: SFL 100, scenario: ../chfl/paper-sfl.yaml, set: [algorithm.local_steps=100]}
          - {label: HFL, scenario: ../chfl/paper-hfl.yaml, seeds: 1}  # read by no finding
        quick:                             # --quick: what CI runs (short scenarios, 2 seeds)
          seeds: 2
          grid: {data.partition.p_c: [2]}
          arms: {CHFL: ../chfl/short-chfl.yaml, SFL: ../chfl/short-sfl.yaml}
        metrics: [local_steps_to_target, time_to_target_s]
        paper: {metric: local_steps_to_target, values: {CHFL: {"2": 7200}, SFL: {"2": 4400}}}
        figures: [time, bits]              # accuracy against time / bits / cost, seed bands
        readings:                          # a setting the paper states two ways: each choice
          - setting: SFL's local steps     # runs as its own arms, and every finding whose
            source: Sec. 5.1               # arms a choice replaces is judged once per choice
            choices:
              - {label: 50 a round, default: true, quote: "...", why: "..."}
              - {label: 100 a round, quote: "...", arms: {SFL: SFL 100}}
    findings:
      - id: chfl-faster
        claim: CHFL reaches the target in less simulated time than SFL
        study: table3
        rule: {kind: less, metric: time_to_target_s, arm: CHFL, than: SFL}

Paths are relative to the plan file. Every problem of a plan is reported at once, naming the
file, the line and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from netfl.errors import ScenarioError, ScenarioProblem
from netfl.reproduction.metrics import METRIC_NAMES  # noqa: F401 (re-exported)
from netfl.reproduction.reading_spec import Reading, ReadingChoice  # noqa: F401
from netfl.scenario.loader import read_yaml

PLAN_GLOB = "*.yaml"


# to-target metrics a finding's ``targets`` read from metrics.csv: metric -> (column, factor)
AT_ACCURACY = {"rounds_to_target": ("round", 1.0), "time_to_target_s": ("sim_time_s", 1.0),
               "bits_to_target": ("bytes_total", 8.0), "bytes_to_target": ("bytes_total", 1.0),
               "cost_to_target": ("cost_total", 1.0)}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Arm(_Strict):
    """One row of a study's table: a scenario file and its own overrides."""

    label: str = Field(min_length=1)
    scenario: str
    set: list[str] = []
    note: str = ""  # printed under the table: where this row is run unlike the others, and why
    points: list[str] | None = None  # the named points it runs (default: all the study's)
    seeds: int | None = Field(None, ge=1)  # this arm's seeds, where not the study's or point's


class NamedPoint(_Strict):
    """A named setting crossed with every arm (a table row's second key, as the paper names
    it: 'p_c=1', 'alpha=0.3'): overrides that go together, which a grid would cross."""

    label: str = Field(min_length=1)
    set: list[str] = Field(min_length=1)
    seeds: int | None = Field(None, ge=1)  # this point's seeds, where not the study's


class QuickVariant(_Strict):
    """What ``--quick`` runs instead: short scenarios per arm label, fewer seeds and points."""

    seeds: int = Field(2, ge=1)
    grid: dict[str, list] | None = None
    points: list[str] | None = None  # labels of the study's points to run (default: all)
    set: list[str] = []
    arms: dict[str, str]


class PaperValues(_Strict):
    """The paper's own numbers for one metric, per arm label and grid point (the point's values
    joined by ', ', in grid order; '' where the study has no grid). A string value is printed as
    it is (a value the paper gives as text, or '-' for one it does not reach)."""

    metric: str
    unit: str = ""
    note: str = ""
    values: dict[str, dict[str, float | str]]


class Figure(_Strict):
    """``time``/``bits``/``cost``: accuracy against simulated time, bits or the learning cost
    (a scenario's ``cost`` model, Group-FEL's eq. (5)), seed bands, one per grid point.
    ``crossover``: ``metric`` against the grid key ``x``, one line per arm."""

    kind: Literal["time", "bits", "cost", "crossover"]
    x: str | None = None
    metric: str = "time_to_target_s"
    log_x: bool = True


class Study(_Strict):
    """A set of arms crossed with named points, a grid and seeds: one table of
    docs/reproduction.md. A point of the table is named by its named point's label and its grid
    values, joined by ', '."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    seeds: int = Field(3, ge=1)
    points: list[NamedPoint] = []
    grid: dict[str, list] = {}
    set: list[str] = []
    arms: list[Arm] = Field(min_length=1)
    quick: QuickVariant | None = None
    metrics: list[str] = ["bits_to_target", "time_to_target_s", "rounds_to_target",
                          "final_accuracy"]
    paper: PaperValues | None = None
    figures: list[Figure | Literal["time", "bits", "cost"]] = ["time"]
    note: str = ""
    readings: list[Reading] = []

    @model_validator(mode="after")
    def _consistent(self) -> Study:
        labels = [a.label for a in self.arms]
        if len(set(labels)) != len(labels):
            raise ValueError(f"arm labels must be distinct: {labels}")
        for reading in self.readings:
            for choice in reading.choices:
                named = {*choice.arms, *(a for a in choice.arms.values() if a is not None)}
                unknown = sorted(named - set(labels))
                if unknown:
                    raise ValueError(f"reading {reading.setting!r}, {choice.label!r}: "
                                     f"{unknown} are not arms ({labels})")
        if self.quick is not None:
            unknown = sorted(set(self.quick.arms) - set(labels))
            if unknown:
                raise ValueError(f"quick.arms names {unknown}, which are not arms ({labels})")
            names = [p.label for p in self.points]
            unknown = sorted(set(self.quick.points or []) - set(names))
            if unknown:
                raise ValueError(f"quick.points names {unknown}, which are not points ({names})")
        names = [p.label for p in self.points]
        if len(set(names)) != len(names):
            raise ValueError(f"point labels must be distinct: {names}")
        for arm in self.arms:
            unknown = sorted(set(arm.points or []) - set(names))
            if unknown:
                raise ValueError(f"arm {arm.label!r}: points {unknown} are not named points "
                                 f"({names})")
        for metric in self.metrics + ([self.paper.metric] if self.paper else []):
            if metric not in METRIC_NAMES:
                raise ValueError(f"unknown metric {metric!r}; one of {', '.join(METRIC_NAMES)}")
        return self

    def reading_arms(self) -> set[str]:
        """The arms that run a reading other than the default (left out of "every arm")."""
        return {arm for r in self.readings for c in r.choices for arm in c.arms.values()
                if arm is not None}

    def default_arms(self) -> list[str]:
        """The arms of the default readings, in the plan's order."""
        alternatives = self.reading_arms()
        return [a.label for a in self.arms if a.label not in alternatives]

    def figure_specs(self) -> list[Figure]:
        return [Figure(kind=f) if isinstance(f, str) else f for f in self.figures]


class Rule(_Strict):
    """How a finding is tested on a study's results (netfl.reproduction.verdicts).

    * ``lowest``: ``arm`` has the lowest ``metric`` of all arms at every grid point, or of the
      arms ``among`` names (the baselines the paper compares it with, where the study has more);
    * ``less``: ``arm``'s ``metric`` is below ``than``'s at every grid point;
    * ``ratio``: ``than``'s metric over ``arm``'s is at least ``at_least`` at every point;
    * ``within``: ``arm``'s metric is within ``tolerance`` (absolute) of ``than``'s;
    * ``comparable``: ``arm`` is comparable or superior to every other arm (or those ``among``
      names) at every grid point: never worse than one by more than ``tolerance`` (absolute);
    * ``across``: one arm across settings: at each pair ``[a, b]`` of ``settings`` (named
      points of the study), ``arm`` does better at a than at b (a claim about the data, such as
      "inter-edge heterogeneity hurts more than intra-edge").

    A run that never reached its target counts as worse than any that did (time, bits and
    steps to target)."""

    kind: Literal["lowest", "less", "ratio", "within", "comparable", "across"]
    metric: str
    arm: str
    than: str | None = None
    at_least: float | None = None
    tolerance: float | None = Field(None, gt=0)
    higher_is_better: bool = False
    among: list[str] = []
    settings: list[tuple[str, str]] = []

    @model_validator(mode="after")
    def _complete(self) -> Rule:
        if (self.kind == "across") != bool(self.settings):
            raise ValueError("rule 'across' (and only it) needs 'settings': pairs [a, b] of "
                             "named points, the arm doing better at a")
        if self.among and self.kind not in ("lowest", "comparable"):
            raise ValueError(f"'among' is for rules 'lowest' and 'comparable', not "
                             f"{self.kind!r}")
        if self.kind in ("less", "ratio", "within") and not self.than:
            raise ValueError(f"rule {self.kind!r} needs 'than'")
        if self.kind in ("within", "comparable") and self.tolerance is None:
            raise ValueError(f"rule {self.kind!r} needs 'tolerance'")
        if self.kind == "ratio" and self.at_least is None:
            raise ValueError("rule 'ratio' needs 'at_least'")
        return self


class Finding(_Strict):
    id: str
    claim: str
    source: str = ""  # where the paper says it
    study: str
    rule: Rule
    why: str = ""  # the reason, in words, where the numbers alone do not say it
    headline: str = ""  # the finding in a few words: it is a row of the front tables
    # judged again at each of these test accuracies, read from the runs' metrics.csv (every
    # update evaluated: eval_every 1); its rule's metric one of AT_ACCURACY's
    targets: list[float] = []
    _reading: str = PrivateAttr("")  # set on a finding judged under a reading (see readings.py)
    _target: float | None = PrivateAttr(None)  # set on a copy judged at one of ``targets``

    @model_validator(mode="after")
    def _targets_readable(self) -> Finding:
        if self.targets and self.rule.metric not in AT_ACCURACY:
            raise ValueError(f"finding {self.id!r}: 'targets' reads {self.rule.metric!r} from "
                             f"metrics.csv, which has only {', '.join(AT_ACCURACY)}")
        if any(not 0 < t <= 1 for t in self.targets):
            raise ValueError(f"finding {self.id!r}: targets are test accuracies in (0, 1]: "
                             f"{self.targets}")
        return self

    @property
    def reading(self) -> str:
        """The reading this copy of the finding is judged under ('' where none applies)."""
        return self._reading

    @property
    def target(self) -> float | None:
        """The test accuracy this copy is judged at (None: the runs' own target)."""
        return self._target

    def compared(self, arms: list[str]) -> list[str]:
        """The arms the finding compares, of its study's ``arms``: its two, or for ``lowest``
        and ``comparable`` its arm and ``among`` (default: every arm)."""
        rule = self.rule
        if rule.kind == "across":
            return [rule.arm]
        if rule.kind not in ("lowest", "comparable"):
            return [rule.arm, rule.than]
        return [rule.arm, *rule.among] if rule.among else list(arms)


class Plan(_Strict):
    section: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    order: int = 0
    studies: list[Study] = Field(min_length=1)
    findings: list[Finding] = []
    path: Path | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _references(self) -> Plan:
        ids = [s.id for s in self.studies]
        if len(set(ids)) != len(ids):
            raise ValueError(f"study ids must be distinct: {ids}")
        by_id = {s.id: s for s in self.studies}
        for finding in self.findings:
            study = by_id.get(finding.study)
            if study is None:
                raise ValueError(f"finding {finding.id!r}: no study {finding.study!r} ({ids})")
            labels = [a.label for a in study.arms]
            for name in (finding.rule.arm, finding.rule.than, *finding.rule.among):
                if name is not None and name not in labels:
                    raise ValueError(f"finding {finding.id!r}: {name!r} is not an arm of "
                                     f"{study.id!r} ({labels})")
            points = [p.label for p in study.points]
            for name in (n for pair in finding.rule.settings for n in pair):
                if name not in points:
                    raise ValueError(f"finding {finding.id!r}: {name!r} is not a named point "
                                     f"of {study.id!r} ({points})")
        return self

    def study(self, study_id: str) -> Study:
        return next(s for s in self.studies if s.id == study_id)

    def resolve(self, relative: str) -> Path:
        """A path of the plan, relative to its file."""
        base = self.path.parent if self.path is not None else Path(".")
        return (base / relative).resolve()


def load_plan(path: str | Path) -> Plan:
    """Read and check one plan file; every problem at once, with file, line and field.

    Raises:
        ScenarioError: the file is unreadable, or a field is wrong, or a scenario it names is
            not there.
    """
    path = Path(path)
    raw, lines = read_yaml(path)
    try:
        plan = Plan.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            line = next((lines[loc[:i]] for i in range(len(loc), 0, -1) if loc[:i] in lines),
                        None)
            field = ".".join(str(p) for p in loc)
            problems.append(ScenarioProblem(field, error["msg"], error.get("input"),
                                            has_value=error["type"] != "missing" and bool(loc),
                                            source=str(path), line=line))
        raise ScenarioError(problems) from None
    plan.path = path
    missing = []
    for i, study in enumerate(plan.studies):
        named = [(f"studies.{i}.arms.{j}.scenario", a.scenario) for j, a in enumerate(study.arms)]
        if study.quick:
            named += [(f"studies.{i}.quick.arms.{k}", v) for k, v in study.quick.arms.items()]
        for field, relative in named:
            if not plan.resolve(relative).is_file():
                key = tuple(int(p) if p.isdigit() else p for p in field.split("."))
                missing.append(ScenarioProblem(field, "no such scenario file", relative,
                                               source=str(path), line=lines.get(key)))
    if missing:
        raise ScenarioError(missing)
    return plan


def load_plans(folder: str | Path, sections: list[str] | None = None) -> list[Plan]:
    """Every plan in ``folder`` (ordered by ``order``, then section), or the named sections in
    the order named."""
    folder = Path(folder)
    plans = sorted((load_plan(p) for p in sorted(folder.glob(PLAN_GLOB))),
                   key=lambda p: (p.order, p.section))
    if sections:
        known = {p.section for p in plans}
        unknown = [s for s in sections if s not in known]
        if unknown:
            raise ScenarioError([ScenarioProblem(
                "section", f"no plan in {folder} has this section; known: "
                f"{', '.join(sorted(known))}", s, source=str(folder)) for s in unknown])
        by_section = {p.section: p for p in plans}
        plans = [by_section[s] for s in dict.fromkeys(sections)]
    return plans
