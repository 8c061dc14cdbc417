"""Videos of trained policies: which run stands for each variant, and the job for the render process."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..naming import sanitize
from ..sweepdir.files import RunDir
from ..sweepdir.trust import Trust, granted, require
from .gl import run_render_process

if TYPE_CHECKING:
    from ..results.rows import ResultRow

VIDEO_SIZE = (320, 240)  # about 0.3 to 0.6 s a frame on a CPU (OSMesa): 10 s at 20 fps is a minute or two


class NoVideo(InputError):
    """Nothing in the sweep matches the request; str() says why."""


@dataclass(frozen=True)
class VideoChoice:
    row: ResultRow
    model: Path
    vecnormalize: Path | None
    output: Path

    @property
    def title(self) -> str:
        return f"{self.row.group} seed {self.row.seed}"


def choose(rows: list[ResultRow], folder: Path, variant: str | None = None, seed: int | None = None,
           best: bool = False) -> list[VideoChoice]:
    """One run per variant x grid point: the given seed, else the seed with the median final return
    (the lower of the two middle ones for an even count), so that the video shows a typical policy."""
    groups: dict[str, list[ResultRow]] = {}
    for row in rows:
        if row.ok and (variant is None or row.variant == variant) and (seed is None or row.seed == seed):
            groups.setdefault(row.group, []).append(row)
    if not groups:
        wanted = " ".join(filter(None, [f"variant {variant!r}" if variant else "",
                                        f"seed {seed}" if seed is not None else ""]))
        raise NoVideo(f"no succeeded run{' of ' + wanted if wanted else ''} with a trained model")
    choices = []
    for group, members in groups.items():
        members.sort(key=lambda r: (r.final_return, r.seed))
        row = members[(len(members) - 1) // 2]
        run_dir = RunDir(folder / row.run_id)
        model, stats = (run_dir.best_model_zip, run_dir.best_vecnormalize) if best and \
            run_dir.best_model_zip.is_file() else (run_dir.model_zip, run_dir.vecnormalize)
        output_name = sanitize(group.replace(" ", "_")) + ".mp4"
        choices.append(VideoChoice(row, model, stats if stats.is_file() else None, Path(output_name)))
    return choices


def render_videos(choices: list[VideoChoice], sweep_folder: Path, output: Path, seconds: float, gif: bool,
                  size: tuple[int, int] = VIDEO_SIZE, trust: Trust = ()) -> list[Path]:
    """An MP4 (and a GIF) per choice in `output`; raises gl.RenderUnavailable or gl.RenderFailed, and
    UntrustedFolderError before anything is unpickled or written for a sweep folder no one trusted."""
    trust = list(trust)
    for choice in choices:
        for file in (choice.model, choice.vecnormalize):
            if file is not None:
                require(file, sweep_folder, trust)
    created = not output.exists()
    output.mkdir(parents=True, exist_ok=True)
    items = [{"run_dir": str(sweep_folder / c.row.run_id), "model": str(c.model),
              "vecnormalize": str(c.vecnormalize) if c.vecnormalize else None,
              "title": f"{c.title}: final eval return {c.row.final_return:.1f}",
              "output": str(output / c.output)} for c in choices]
    try:
        with tempfile.TemporaryDirectory(prefix="mjsweep-videos-") as tmp:
            job = Path(tmp) / "job.json"
            job.write_text(json.dumps({"width": size[0], "height": size[1], "seconds": seconds, "gif": gif,
                                       "items": items}), encoding="utf-8")
            with granted(trust):  # the render process checks again
                run_render_process("mjsweep.media.policy_render", [str(job)])
    except BaseException:
        if created and not any(output.iterdir()):  # a failed command leaves no empty folder of its own behind
            output.rmdir()
        raise
    return [output / c.output for c in choices]
