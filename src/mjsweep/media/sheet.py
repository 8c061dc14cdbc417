"""Images put together with Pillow (the render extra): labels on frames and contact sheets."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

LABEL_HEIGHT = 18


def label(frame: np.ndarray, lines: Sequence[str]) -> np.ndarray:
    """The frame with text lines in its top left corner, on a dark band that keeps them readable."""
    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    band = LABEL_HEIGHT * len(lines) + 4
    draw.rectangle((0, 0, image.width, band), fill=(0, 0, 0))
    for i, line in enumerate(lines):
        draw.text((4, 2 + i * LABEL_HEIGHT), line, fill=(255, 255, 255), font=font)
    return np.asarray(image)


def contact_sheet(tiles: Sequence[np.ndarray], captions: Sequence[str], columns: int | None = None) -> np.ndarray:
    """Tiles of one size on a grid, each with its caption in a strip below it."""
    if not tiles:
        raise ValueError("a contact sheet needs at least one picture")
    height, width = tiles[0].shape[:2]
    columns = columns or math.ceil(math.sqrt(len(tiles)))
    rows = math.ceil(len(tiles) / columns)
    cell_h = height + LABEL_HEIGHT + 6
    sheet = Image.new("RGB", (columns * width, rows * cell_h), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default()
    for i, (tile, caption) in enumerate(zip(tiles, captions, strict=True)):
        x, y = (i % columns) * width, (i // columns) * cell_h
        sheet.paste(Image.fromarray(tile), (x, y))
        draw.text((x + 4, y + height + 3), caption, fill=(0, 0, 0), font=font)
    return np.asarray(sheet)


def save_png(image: np.ndarray, path) -> None:
    Image.fromarray(image).save(path, format="PNG")
