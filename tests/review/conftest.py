"""Fixtures of the review tests: a real correction run on car_1, the review app served on loopback,
and headless Chromium (Debian's chromium + chromium-driver, driven by selenium)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from sqlmend.batch import run_file
from sqlmend.evaluation.evaluate import evaluate_run
from sqlmend.data import load_dataset, load_predictions
from sqlmend.pipeline import PipelineConfig
from sqlmend.review.run import Run

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
#: The prediction file the runs correct (real GPT-4 zero-shot predictions of Spider dev).
PRED = "gpt-4_zero-shot.sql"
STAGES = ["static", "guard"]


@pytest.fixture(scope="session")
def car_run_base(tmp_path_factory, data_dir) -> Path:
    """A real correction run: GPT-4 zero-shot's predictions of the 92 car_1 questions, static + guard."""
    pred = data_dir / "predictions" / "spider-dev" / PRED
    ds = load_dataset("spider-dev")
    preds = load_predictions(pred, ds)
    tasks = [t for t in ds.with_sql(preds) if t.db_id == "car_1"]
    out = tmp_path_factory.mktemp("runs") / "car_1"
    run_file(ds, preds, tasks, PipelineConfig(stages=STAGES, workers=2), out, "spider", progress=False,
             manifest={"dataset": "spider-dev", "pred": str(pred)})
    return out


@pytest.fixture
def car_run(car_run_base, tmp_path) -> Path:
    """A fresh copy of the car_1 run (its own reviews.jsonl)."""
    out = tmp_path / "run"
    shutil.copytree(car_run_base, out)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """The review app of one run, served by uvicorn on 127.0.0.1 in a thread."""

    def __init__(self, run_dir: Path, store: Path, reviewer: str = "ana"):
        import uvicorn

        from sqlmend.review.app import create_app

        self.run = Run.load(run_dir)
        evaluate_run(self.run)
        self.app = create_app(self.run, reviewer, store, allowed_hosts=["127.0.0.1", "localhost"])
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 10
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError("the review server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)


@pytest.fixture
def served(car_run, tmp_path):
    s = Served(car_run, tmp_path / "store")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium through chromedriver; skipped (with the reason) where Debian's packages are absent."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("chromium / chromium-driver not installed (scripts/setup.sh installs them as root: "
                    "apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed (pip install -e .[dev])")
    from selenium.webdriver.chrome.service import Service

    profile = Path(os.environ.get("TMPDIR", "/tmp")) / f"sqlmend-chromium-{os.getpid()}"
    shutil.rmtree(profile, ignore_errors=True)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1000", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def screenshot(browser, tmp_path):
    """``screenshot(name)``: save the browser's view; also to $SQLMEND_SCREENSHOTS (docs/images) when set."""

    def take(name: str, full_height: bool = False) -> Path:
        size = browser.get_window_size()
        if full_height:
            h = browser.execute_script("return document.documentElement.scrollHeight")
            browser.set_window_size(size["width"], min(int(h) + 40, 4000))
        path = tmp_path / f"{name}.png"
        browser.save_screenshot(str(path))
        if full_height:
            browser.set_window_size(size["width"], size["height"])
        target = os.environ.get("SQLMEND_SCREENSHOTS")
        if target:
            Path(target).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(target) / f"{name}.png")
        return path

    return take
