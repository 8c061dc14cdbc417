"""A pydantic error of the spec's model said in one line: an unknown key with the keys allowed there, a
missing key, or the value's problem with what was written."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..errors import shown
from .sweepspec import SweepSpec


def explain(err: dict[str, Any]) -> str:
    kind, loc = err["type"], err["loc"]
    if kind == "extra_forbidden":
        return f"unknown key (allowed: {', '.join(_model_at(loc).model_fields)})"
    if kind == "missing":
        return "required key is missing"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    return f"{msg} (got {shown(err['input'])})" if "input" in err and kind != "value_error" else msg


def _model_at(loc: tuple[str | int, ...]) -> type[BaseModel]:
    """The model whose key is the last part of loc, found by walking the field annotations."""
    model: type[BaseModel] = SweepSpec
    for part in loc[:-1]:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        inner = _inner_model(field.annotation) if field else None
        if inner is not None:
            model = inner
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        if found := _inner_model(arg):
            return found
    return None
