"""Headless Chromium (Debian's ``chromium`` + ``chromium-driver``) through Selenium.

Without a browser the tests skip, saying why; under ``CI=true`` they fail instead,
since ``.ci/run`` installs the packages. Screenshots go to :func:`screenshot_dir`,
which ``make test`` prints.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

#: Where the distribution's packages put the browser and its driver.
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER_PATHS = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
REPO = Path(__file__).resolve().parents[2]


def screenshot_dir() -> Path:
    """``TIDINGS_SCREENSHOTS`` or ``build/screenshots`` in the repository."""
    path = Path(os.environ.get("TIDINGS_SCREENSHOTS") or REPO / "build" / "screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _first(paths: tuple[str, ...], name: str) -> str | None:
    found = next((p for p in paths if os.access(p, os.X_OK)), None)
    return found or shutil.which(name)


def chrome() -> Any:
    """A started headless Chrome driver, or a skip (a failure under CI)."""
    binary, driver = _first(CHROMIUM_PATHS, "chromium"), _first(DRIVER_PATHS, "chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        binary = None
        reason = f"selenium is not installed ({exc})"
    else:
        reason = (
            "no browser: install Debian's chromium and chromium-driver "
            "(apt-get install -y chromium chromium-driver)"
        )
    if binary is None or driver is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
        "--disable-extensions",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)
