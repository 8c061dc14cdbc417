"""Skip markers for tests that need a GL backend or a browser: they skip on a bare machine and fail in CI,
which installs both (MJSWEEP_REQUIRE_RENDER=1); and the headless Chromium that opens report.html."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

REQUIRED = bool(os.environ.get("MJSWEEP_REQUIRE_RENDER"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def gl_works() -> bool:
    code = "import mujoco; c = mujoco.GLContext(64, 64); c.make_current(); c.free()"
    for backend in ("egl", "osmesa"):
        env = {**os.environ, "MUJOCO_GL": backend}
        if subprocess.run([sys.executable, "-c", code], env=env, capture_output=True).returncode == 0:
            return True
    return False


def browser_works() -> bool:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)


def needs_gl(test):
    """Marks a test `render` (select or leave out with -m) and skips it without a GL backend, unless required."""
    skip = pytest.mark.skipif(not REQUIRED and not gl_works(),
                              reason="no GL backend here (apt-get install libosmesa6); CI requires one")
    return pytest.mark.render(skip(test))


def needs_browser(test):
    """Marks a test `browser` and skips it without Chromium and its driver, unless required."""
    skip = pytest.mark.skipif(not REQUIRED and not browser_works(),
                              reason="no Chromium here (apt-get install chromium chromium-driver); CI has it")
    return pytest.mark.browser(skip(test))


@contextmanager
def chromium(profile: Path, window: str = "1300,2400") -> Iterator[Any]:
    """A real headless Chromium driven by selenium, with its profile in `profile` and its console kept."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", f"--window-size={window}",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
