"""Findings judged under each reading of a setting the paper states two ways: pure functions.

A study's ``readings`` (netfl.reproduction.plan.Reading) name, for each ambiguous setting, the
arms that run each way of reading it. A finding is judged once under the default readings (the
study's own arms) and once more per other choice that replaces one of the arms it compares, with
that choice's arms in their place; choices of different settings are not crossed (each is judged
with the others at their default). A finding none of whose arms a reading replaces is judged
once, as before; so is one that needs settings a choice's arms do not run (a claim across
settings, where the choice runs at one).
"""

from __future__ import annotations

from netfl.reproduction.plan import Finding, ReadingChoice, Study

NO_READING = ""


def judged_findings(study: Study, findings: list[Finding]) -> list[Finding]:
    """Every finding of ``study`` (of ``findings``) as it is judged: per reading where one
    applies, each copy with explicit arms and its ``reading`` label; then, for a finding with
    ``targets``, at the runs' own target and at each of those."""
    judged = []
    for finding in _per_reading(study, findings):
        judged.append(finding)
        for target in finding.targets:
            copy = finding.model_copy()
            copy._reading, copy._target = finding.reading, target
            judged.append(copy)
    return judged


def _per_reading(study: Study, findings: list[Finding]) -> list[Finding]:
    judged = []
    defaults = study.default_arms()
    for finding in findings:
        if finding.study != study.id:
            continue
        compared = set(finding.compared(defaults))
        touching = [(reading, [c for c in reading.choices
                               if not c.default and compared & set(c.arms)
                               and _runs_where_needed(study, finding, c)])
                    for reading in study.readings]
        touching = [(reading, choices) for reading, choices in touching
                    if choices and (not reading.metrics or finding.rule.metric in reading.metrics)]
        if not touching:
            judged.append(_explicit(finding, defaults, {}, NO_READING))
            continue
        label = "; ".join(f"{reading.default.label} (default)" for reading, _ in touching)
        judged.append(_explicit(finding, defaults, {}, label))
        for _reading, choices in touching:
            judged += [_explicit(finding, defaults, choice.arms, choice.label)
                       for choice in choices]
    return judged


def _runs_where_needed(study: Study, finding: Finding, choice: ReadingChoice) -> bool:
    """Whether the choice runs what the finding needs: its own two arms (an arm the choice
    leaves unrun may only drop out of an ``among``), at every named point it needs (a claim
    across settings needs them all; any other is judged at the points the arms share)."""
    rule = finding.rule
    if any(choice.arms.get(arm, arm) is None for arm in (rule.arm, rule.than) if arm):
        return False
    needed = {name for pair in rule.settings for name in pair}
    by_label = {arm.label: arm for arm in study.arms}
    return all(arm is None or by_label[arm].points is None
               or needed <= set(by_label[arm].points)
               for original, arm in choice.arms.items()
               if original in finding.compared(study.default_arms()))


def _explicit(finding: Finding, defaults: list[str], arms: dict[str, str | None],
              label: str) -> Finding:
    """``finding`` with its arms replaced by ``arms`` (default arm -> this reading's), and
    "every other arm" spelled out as the default arms so no reading's arm joins it."""
    rule = finding.rule
    swap = {**{a: a for a in defaults}, **arms}
    update: dict = {"arm": swap.get(rule.arm, rule.arm)}
    if rule.than is not None:
        update["than"] = swap.get(rule.than, rule.than)
    if rule.kind in ("lowest", "comparable"):
        among = rule.among or [a for a in defaults if a != rule.arm]
        update["among"] = [swap.get(a, a) for a in among if swap.get(a, a) is not None]
    copy = finding.model_copy(update={"rule": rule.model_copy(update=update)})
    copy._reading = label
    return copy


def readings_table(study: Study) -> str:
    """The study's readings as a markdown table: per setting and choice, the paper's words, the
    arms that run it and why netfl reads it so (the default) or how it is read ('' where there
    are none)."""
    if not study.readings:
        return ""
    head = "| setting | reading | the paper's words | arms | why (the default) or how it is read |"
    lines = [head, "|---|---|---|---|---|"]
    for reading in study.readings:
        setting = reading.setting + (f" ({reading.source})" if reading.source else "")
        for choice in reading.choices:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in (
                setting, _label(choice), f"\u201c{choice.quote.strip()}\u201d",
                _arms_text(choice), choice.why.strip()))
                + " |")
            setting = ""
    return "\n".join(lines)


def _arms_text(choice: ReadingChoice) -> str:
    if not choice.arms:
        return "the study's own"
    run = [arm for arm in choice.arms.values() if arm is not None]
    unrun = [arm for arm, its in choice.arms.items() if its is None]
    return ", ".join(run) + (f" (not run: {', '.join(unrun)})" if unrun else "")


def _label(choice: ReadingChoice) -> str:
    return f"**{choice.label}** (default)" if choice.default else choice.label
