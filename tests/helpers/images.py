"""Checks on PNGs written by `sweep plot`."""

from __future__ import annotations

import numpy as np


def not_blank(path) -> None:
    """A real figure: big enough, many colours, ink on more than 2% of it, and the first group's colour."""
    import matplotlib.image

    pixels = matplotlib.image.imread(str(path))[..., :3]
    colors = np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    non_white = np.mean(np.any(pixels < 0.95, axis=-1))
    assert pixels.shape[0] > 200 and pixels.shape[1] > 400
    assert len(colors) > 20 and non_white > 0.02, (len(colors), non_white)
    tab_blue = np.array([31, 119, 180]) / 255  # the first group's line colour
    assert np.any(np.all(np.abs(pixels - tab_blue) < 0.02, axis=-1))
