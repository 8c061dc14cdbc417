"""Pictures of a sweep's variants in their start pose, before anything trains."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..robots import variants as variantlib
from ..sweepdir.files import CONTACT_SHEET_PNG
from .gl import run_render_process

if TYPE_CHECKING:
    from ..engine.sweep import SweepPlan

PICTURE_SIZE = (480, 360)


@dataclass(frozen=True)
class Pictures:
    contact_sheet: Path
    backend: str
    """The GL backend that drew them: egl or osmesa."""


def render_variant_pictures(plan: SweepPlan, folder: Path, size: tuple[int, int] = PICTURE_SIZE) -> Pictures:
    """One PNG per variant (<name>.png) and contact_sheet.png in `folder`.
    Raises gl.RenderUnavailable when this machine cannot render, gl.RenderFailed otherwise."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mjsweep-pictures-") as tmp:
        items = []
        for check in plan.checks:
            variant = variantlib.materialize(check.variant, Path(tmp))
            env_kwargs = {**plan.spec.env_kwargs, **variant.env_kwargs}
            items.append({
                "name": variant.name, "xml": str(variant.xml), "caption": variant.name,
                # Generated variants of one base share a camera; so do the files listed or globbed.
                "group": repr(variant.loc) if variant.xml_text is not None else "files",
                "env": plan.spec.env, "env_kwargs": env_kwargs,
            })
        job = Path(tmp) / "job.json"
        job.write_text(json.dumps({"width": size[0], "height": size[1], "folder": str(folder.resolve()),
                                   "items": items}), encoding="utf-8")
        backend = run_render_process("mjsweep.media.pictures", [str(job)])
    return Pictures(folder / CONTACT_SHEET_PNG, backend)
