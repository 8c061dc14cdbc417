"""Where the camera goes: pure geometry over the robot's bounding box, so that it is tested without GL.

Variants of one base share one camera (the box around all of them), so a longer leg looks longer
instead of being zoomed to the same size.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

AZIMUTH_DEG = 135.0  # from the front left: both the side and the front of a robot that faces +x
ELEVATION_DEG = -25.0  # a little from above, so that feet on the floor are seen
MARGIN = 1.15  # room around the robot


@dataclass(frozen=True)
class Box:
    low: tuple[float, float, float]
    high: tuple[float, float, float]

    @staticmethod
    def around(centers: np.ndarray, radii: np.ndarray) -> Box:
        """The axis-aligned box holding every sphere (one per geom: its centre and bounding radius)."""
        centers = np.asarray(centers, dtype=float).reshape(-1, 3)
        radii = np.asarray(radii, dtype=float).reshape(-1, 1)
        low, high = (centers - radii).min(axis=0), (centers + radii).max(axis=0)
        return Box(_point(low), _point(high))

    def union(self, other: Box) -> Box:
        return Box(_point(np.minimum(self.low, other.low)), _point(np.maximum(self.high, other.high)))

    @property
    def center(self) -> tuple[float, float, float]:
        return _point((np.asarray(self.low) + np.asarray(self.high)) / 2)

    @property
    def diagonal(self) -> float:
        return float(np.linalg.norm(np.subtract(self.high, self.low)))


def _point(values) -> tuple[float, float, float]:
    x, y, z = (float(v) for v in values)
    return x, y, z


@dataclass(frozen=True)
class CameraPose:
    lookat: tuple[float, float, float]
    distance: float
    azimuth: float = AZIMUTH_DEG
    elevation: float = ELEVATION_DEG


def framing(box: Box, fovy_deg: float, aspect: float) -> CameraPose:
    """The nearest camera, at the fixed angles, that sees every corner of the box, with a margin."""
    az, el = math.radians(AZIMUTH_DEG), math.radians(ELEVATION_DEG)
    forward = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    right = np.array([math.sin(az), -math.cos(az), 0.0])
    up = np.cross(right, forward)
    tan_v = math.tan(math.radians(fovy_deg) / 2)
    tan_h = tan_v * aspect
    center = np.array(box.center)
    distance = 1e-3
    for corner in itertools.product(*zip(box.low, box.high, strict=True)):
        offset = np.array(corner) - center
        # The camera sits at lookat - distance * forward; a corner is in view when its sideways and
        # upward offsets fit the field of view at the corner's own depth (distance + offset . forward).
        depth_shift = float(offset @ forward)
        needed = max(abs(float(offset @ right)) / tan_h, abs(float(offset @ up)) / tan_v) - depth_shift
        distance = max(distance, needed)
    return CameraPose(lookat=box.center, distance=distance * MARGIN)
