"""Browser fixtures for the viewer tests: headless Chromium driven by selenium, or a clean skip.

The tests look at real screenshots: a body's colour must be found where its pose, projected by the
camera the page was given, puts its origin. `project` is that projection (gluLookAt then
gluPerspective), written here independently of the viewers.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

WIDTH, HEIGHT = 800, 640


def _find(*names: str) -> str | None:
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return None


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (session-wide: starting one takes a few seconds), or skip."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    chrome = _find("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    driver_path = _find("chromedriver")
    if chrome is None or driver_path is None:
        pytest.skip("no Chromium and chromedriver found (apt-get install chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chrome
    # Software WebGL (SwiftShader): CI machines have no GPU; device scale 1 so CSS pixels are pixels.
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={WIDTH},{HEIGHT}",
                "--force-device-scale-factor=1", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                "--ignore-gpu-blocklist", "--hide-scrollbars"):
        opts.add_argument(arg)
    try:
        drv = webdriver.Chrome(options=opts, service=Service(driver_path))
    except Exception as e:  # a browser that cannot start here (no display libraries, sandbox rules)
        pytest.skip(f"Chromium could not start: {e}")
    drv.set_page_load_timeout(30)
    yield drv
    drv.quit()


def project(point, eye, target, up, fov_deg: float, width: int, height: int) -> tuple[float, float]:
    """Pixel (column, row from the top) of a world point seen by a perspective camera."""
    eye, target, up, p = (np.asarray(v, dtype=float) for v in (eye, target, up, point))
    f = (target - eye) / np.linalg.norm(target - eye)
    s = np.cross(f, up)
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    d = p - eye
    z = d @ f
    t = np.tan(np.radians(fov_deg) / 2)
    x_ndc = (d @ s) / (z * t * width / height)
    y_ndc = (d @ u) / (z * t)
    return (x_ndc + 1) / 2 * width, (1 - y_ndc) / 2 * height


def png_rgb(png: bytes) -> np.ndarray:
    """(h, w, 3) uint8 of a PNG screenshot (matplotlib reads PNG; it is a test dependency)."""
    import io

    import matplotlib.image as mpimg

    img = mpimg.imread(io.BytesIO(png), format="png")
    if img.dtype != np.uint8:
        img = np.rint(img * 255).astype(np.uint8)
    return img[..., :3]


def colour_near(img: np.ndarray, xy: tuple[float, float], rgb, radius: int = 2, tol: int = 60) -> bool:
    """Whether most pixels within ``radius`` of ``xy`` are within ``tol`` (per channel) of ``rgb``."""
    x, y = int(round(xy[0])), int(round(xy[1]))
    h, w = img.shape[:2]
    if not (0 <= x < w and 0 <= y < h):
        return False
    patch = img[max(y - radius, 0):y + radius + 1, max(x - radius, 0):x + radius + 1].reshape(-1, 3).astype(int)
    close = np.all(np.abs(patch - np.asarray(rgb)) <= tol, axis=1)
    return bool(close.mean() > 0.5)
