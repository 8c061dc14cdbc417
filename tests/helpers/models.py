"""The repository's XML models and a spec that trains on the tiny walker in seconds."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
XML_DIR = REPO / "xml_models"
TINY_XML = XML_DIR / "tiny_walker.xml"
TINY_LONG_XML = XML_DIR / "tiny_walker_long.xml"

# A spec that trains for real in a few seconds per run on the tiny planar walker.
TINY_SPEC = {
    "name": "tiny",
    "env": "HalfCheetah-v5",
    "max_episode_steps": 100,
    "variants": [{"name": "walker", "xml": str(TINY_XML)}],
    "seeds": 1,
    "total_timesteps": 512,
    "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1},
    "eval": {"episodes": 1},
    "runs_dir": "runs",
}
