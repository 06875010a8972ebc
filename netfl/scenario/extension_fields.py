"""Scenario fields whose ``kind`` may also name a plug-in (netfl.scenario.plugins): the built-in
kinds validate as usual; any other kind that names an installed entry point or a
``module:Class`` validates against that extension's own Spec, with the same error reporting."""

from __future__ import annotations

import typing
from typing import Annotated

from pydantic import SerializeAsAny, ValidationError, ValidationInfo, WrapValidator

from netfl.scenario.plugins import ExtensionError, installed, is_reference, load_for_group


class ExtensionInvalid(ValueError):
    """An extension's section failed its own Spec: ``error`` (a ValidationError) holds the
    fields, reported by the loader as if the Spec were netfl's (file, line, field, value)."""

    def __init__(self, error: ValidationError, spec: type):
        super().__init__(f"invalid {spec.__name__} section")
        self.error, self.spec = error, spec


class ExtensionUnusable(ValueError):
    """The extension a ``kind`` names could not be found or loaded."""


def builtin_kinds(union) -> frozenset[str]:
    """The ``kind`` tags of a discriminated union of sections."""
    members = typing.get_args(typing.get_args(union)[0]) or (typing.get_args(union)[0],)
    return frozenset(tag for spec in members
                     for tag in typing.get_args(spec.model_fields["kind"].annotation))


def or_extension(union, group: str, sections_only: bool = False):
    """``union`` (a discriminated union of built-in sections) that also takes the sections of
    extensions of ``group`` (their own Spec instances, serialized as themselves).
    ``sections_only``: ``union`` is a plain value (a data set's name), and every section given
    in its place (a mapping with a ``kind``) is an extension's."""
    builtins = frozenset() if sections_only else builtin_kinds(union)

    def validate(value, handler, info: ValidationInfo):
        kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
        if isinstance(kind, str) and kind not in builtins and (
                sections_only or is_reference(kind) or kind in installed(group)):
            try:
                spec = load_for_group(group, kind).Spec
            except ExtensionError as exc:
                raise ExtensionUnusable(str(exc)) from None
            if isinstance(value, spec):
                return value
            try:
                return spec.model_validate(value, context=info.context)
            except ValidationError as exc:
                raise ExtensionInvalid(exc, spec) from None
        return handler(value)

    return Annotated[union, WrapValidator(validate), SerializeAsAny()]
