"""What a researcher shares after a sweep, on a real trained sweep: the contact sheet kept in the sweep
folder, a video of each variant's policy, and report.html opened in a real headless Chromium."""

from __future__ import annotations

import itertools
import json
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from helpers.commands import run_sweep, write_spec
from helpers.fake_sweep import run_spec
from helpers.models import TINY_LONG_XML, TINY_XML
from helpers.rendering import CHROMEDRIVER, CHROMIUM, needs_browser, needs_gl
from mjsweep.media.sheet import LABEL_HEIGHT
from mjsweep.media.videos import NoVideo, choose
from mjsweep.results.rows import ResultRow
from mjsweep.sweepdir.models import RunResult, RunState, RunStatus


def row(seed: int, final: float, variant: str = "walker", ok: bool = True) -> ResultRow:
    status = RunStatus(state=RunState.SUCCEEDED if ok else RunState.FAILED, attempts=1)
    return ResultRow(f"{variant}_s{seed}", run_spec(variant, seed), status,
                     RunResult(eval_mean_return=final) if ok else None)


def test_a_video_shows_the_seed_with_the_median_final_return(tmp_path):
    rows = [row(0, 5.0), row(1, 1.0), row(2, 3.0), row(3, 9.0, ok=False), row(0, 2.0, "long"), row(1, 4.0, "long")]
    picked = {c.row.variant: c.row.seed for c in choose(rows, tmp_path)}
    assert picked == {"walker": 2, "long": 0}  # the middle of 1, 3, 5; the lower middle of 2, 4
    assert [c.row.seed for c in choose(rows, tmp_path, variant="walker", seed=0)] == [0]
    with pytest.raises(NoVideo, match="variant 'walker' seed 3"):
        choose(rows, tmp_path, variant="walker", seed=3)  # seed 3 failed: it has no model


def test_best_falls_back_to_the_final_model_where_a_run_kept_no_best(tmp_path):
    (tmp_path / "walker_s0").mkdir()
    (tmp_path / "walker_s1").mkdir()
    (tmp_path / "walker_s1" / "best_model.zip").write_bytes(b"")
    by_seed = {c.row.seed: c.model.name for c in choose([row(0, 1.0)], tmp_path, best=True)}
    by_seed |= {c.row.seed: c.model.name for c in choose([row(1, 1.0)], tmp_path, best=True)}
    assert by_seed == {0: "model.zip", 1: "best_model.zip"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A real sweep of two variants x two seeds, started with --pictures."""
    folder = tmp_path_factory.mktemp("sharing")
    spec = write_spec(folder, {
        "name": "share", "env": "HalfCheetah-v5", "max_episode_steps": 100,
        "variants": [{"name": "walker", "xml": str(TINY_XML)}, {"name": "walker-long", "xml": str(TINY_LONG_XML)}],
        "seeds": 2, "total_timesteps": 512, "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1},
        "eval": {"episodes": 1}, "runs_dir": "runs",
    })
    proc = run_sweep("run", str(spec), "--quiet", "--pictures", str(folder / "pictures"))
    assert proc.returncode == 0, proc.stderr
    return folder / "runs" / "share"


@needs_gl
def test_run_with_pictures_keeps_the_contact_sheet_in_the_sweep_folder(trained):
    kept = trained / "pictures" / "contact_sheet.png"
    assert kept.read_bytes() == (trained.parents[1] / "pictures" / "contact_sheet.png").read_bytes()


def shadowed_far_floor(frame: np.ndarray, edge: int = 3) -> int:
    """Pixels of the tiny walker's grey floor in shadow (lit it is about 85, in shadow about 22) between
    the frame's label and the robot, where no shadow belongs; blurred edges of black (the label, the void
    beyond the floor's side) are not counted."""
    band = frame[LABEL_HEIGHT:frame.shape[0] // 3].max(axis=-1)
    black = np.pad(band < 12, edge)
    near_black = np.zeros_like(band, dtype=bool)
    for dy, dx in itertools.product(range(2 * edge + 1), repeat=2):
        near_black |= black[dy:dy + band.shape[0], dx:dx + band.shape[1]]
    return int(np.sum((band >= 12) & (band < 30) & ~near_black))


@pytest.mark.slow
@needs_gl
def test_video_of_each_variant_has_the_frames_its_seconds_ask_for(trained):
    import imageio.v2 as imageio

    proc = run_sweep("video", str(trained), "--seconds", "1", "--gif")
    assert proc.returncode == 0, proc.stderr
    written = sorted(Path(line) for line in proc.stdout.split())
    assert [p.name for p in written] == ["walker-long.mp4", "walker.mp4"]
    for path in written:
        reader = imageio.get_reader(path)
        fps = reader.get_meta_data()["fps"]
        frames = list(reader.iter_data())  # the reader itself claims an infinite length
        reader.close()
        # HalfCheetah-v5 steps 5 physics steps of the tiny walker's 0.01 s: 20 frames a simulated second.
        assert fps == pytest.approx(20.0) and len(frames) == 20
        assert frames[0].shape == (240, 320, 3)
        assert frames[0].std() > 10, "not blank"
        assert shadowed_far_floor(frames[0]) == 0, "no dark triangles on the far floor"
        assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).mean() > 1, "the robot moves"
        assert Image.open(path.with_suffix(".gif")).n_frames == 20
    assert "frames" in proc.stderr  # progress


@needs_gl
@needs_browser
def test_html_report_opens_in_chromium_with_table_figures_pictures_and_videos(trained, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert run_sweep("video", str(trained), "--seconds", "0.5").returncode == 0
    proc = run_sweep("report", str(trained), "--format", "html")
    assert proc.returncode == 0, proc.stderr
    page = Path(proc.stdout.strip())
    assert page == trained / "report.html"
    text = page.read_text()
    assert "http://" not in text and "https://" not in text, "nothing to fetch from a network"

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1300,2400",
                 f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(page.as_uri())
        time.sleep(1)  # let the embedded media decode; the checks below do not depend on speed
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        table_rows = driver.execute_script("return document.querySelectorAll('tbody tr').length")
        assert table_rows == 2
        figures = driver.execute_script(
            "return [...document.querySelectorAll('figure svg')].map(s => [s.getAttribute('aria-label'), "
            "s.getBoundingClientRect().width, s.getBoundingClientRect().height, "
            "s.querySelectorAll('path, circle, rect').length])")
        assert [label for label, *_ in figures] == ["learning curves: mean over seeds, 95% t interval",
                                                    "final evaluation return per run",
                                                    "P(row > column) over seeds, with its 95% interval",
                                                    "performance profiles: the fraction of each group's runs above "
                                                    "each return, 95% band"]
        assert all(width > 100 and height > 100 and marks > 5 for _, width, height, marks in figures), figures
        images = driver.execute_script(
            "return [...document.images].map(i => [i.alt, i.complete && i.naturalWidth > 0, i.width])")
        assert [alt for alt, _, _ in images] == ["the variants in their start pose"]
        assert all(loaded and width > 100 for _, loaded, width in images), images
        videos = driver.execute_script(
            "return [...document.querySelectorAll('video')].map(v => v.error ? v.error.code : 0)")
        assert videos == [0, 0]
        shot = tmp_path / "report.png"
        driver.save_screenshot(str(shot))
    finally:
        driver.quit()
    pixels = np.asarray(Image.open(shot).convert("RGB"))
    assert pixels.std() > 10 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50


def cross_results(sweep: Path) -> dict[str, float]:
    return {p.relative_to(sweep / "cross").as_posix(): p.stat().st_mtime_ns
            for p in (sweep / "cross").glob("*/*.json")}


@pytest.mark.slow
def test_cross_evaluation_fills_the_matrix_and_a_rerun_does_only_what_is_missing(trained):
    proc = run_sweep("evaluate", str(trained), "--cross", "--episodes", "1")
    assert proc.returncode == 0, proc.stderr
    assert "4 policies x 2 variants, 8 pairs to evaluate" in proc.stderr
    lines = (trained / "cross" / "matrix.csv").read_text().splitlines()
    assert lines[0] == "train,test,seeds,mean,ci95_low,ci95_high,skipped"
    cells = {tuple(line.split(",")[:2]): line.split(",") for line in lines[1:]}
    assert set(cells) == {(a, b) for a in ("walker", "walker-long") for b in ("walker", "walker-long")}
    for train, test in cells:
        results = [json.loads((trained / "cross" / rel).read_text()) for rel in cross_results(trained)
                   if rel.endswith(f"/{test}.json") and rel.startswith(train + "_s")]
        assert len(results) == 2 and all(r["episodes"] == 1 and len(r["returns"]) == 1 for r in results)
        mean, low, high = map(float, cells[(train, test)][3:6])
        assert cells[(train, test)][2] == "2"
        assert mean == pytest.approx(sum(r["mean"] for r in results) / 2, rel=1e-5)
        assert low <= mean <= high
    heatmap = ET.parse(trained / "cross" / "matrix.svg").getroot()
    drawn = [e for e in heatmap.iter() if e.get("class") == "cell"]
    assert len(drawn) == 4 and len({e.get("fill") for e in drawn}) > 1  # a colour per mean, not one for all
    values = ["".join(e.itertext()) for e in heatmap.iter() if e.get("class") == "value"]
    assert sorted(v.partition("[")[0] for v in values) == sorted(f"{float(c[3]):.1f}" for c in cells.values())

    before = cross_results(trained)
    again = run_sweep("evaluate", str(trained), "--cross", "--episodes", "1")
    assert again.returncode == 0 and "0 pairs to evaluate" in again.stderr
    assert cross_results(trained) == before, "nothing evaluated twice"
    gone = next(iter(before))
    (trained / "cross" / gone).unlink()
    third = run_sweep("evaluate", trained.name, "--cross", "--episodes", "1", cwd=trained.parent)  # a relative path
    assert third.returncode == 0 and "1 pairs to evaluate" in third.stderr
    after = cross_results(trained)
    assert set(after) == set(before) and all(after[k] == before[k] for k in before if k != gone)


def test_a_policy_is_not_evaluated_on_a_variant_with_other_spaces(trained, tmp_path):
    import subprocess
    import sys

    run_dir = next(p for p in sorted(trained.iterdir()) if (p / "model.zip").is_file())
    result = tmp_path / "planar.json"
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"model": str(run_dir / "model.zip"), "vecnormalize": None, "seed": 0, "episodes": 1,
                               "deterministic": True,
                               "targets": [{"variant": "planar", "env": "HalfCheetah-v5",
                                            "xml": str(TINY_XML.with_name("planar_walker.xml")), "env_kwargs": {},
                                            "max_episode_steps": 50, "result": str(result)}]}))
    proc = subprocess.run([sys.executable, "-m", "mjsweep.crosseval.evaluator", str(job)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    written = json.loads(result.read_text())
    assert written["skipped"].startswith("observation space") and "mean" not in written
