"""``turnstile dashboard`` in a real headless browser (Debian's chromium, driven over WebDriver by selenium).

The dashboard runs as the user runs it (its own process, the admin's kubeconfig) against the shared cluster with
Turnstile in front. The page must show the queues, follow the cluster without a reload (server-sent events: a
marker set in the page survives every update), and answer the fit form. A screenshot of the run is saved
(``TURNSTILE_SCREENSHOT`` names the file; else the test's temporary directory).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from tests.e2e.kube import apply, cluster_queue, create, eventually, finish_job_pods, flavor, get, job, local_queue
from webhook.local.cluster import LocalCluster, free_port
from webhook.local.turnstile import LocalTurnstile

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        pytest.fail("chromium and chromium-driver are needed: apt-get install chromium chromium-driver (.ci/run does)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def dashboard(cluster: LocalCluster, turnstile: LocalTurnstile, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "dashboard.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "webhook", "dashboard", f"--kubeconfig={cluster.kubeconfig}", f"--port={port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    try:
        eventually(lambda: "dashboard on" in (tmp_path / "dashboard.log").read_text(), timeout=60, what="the dashboard")
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def text_of(driver: webdriver.Chrome, css: str) -> str:
    # One script reads every match: the page re-renders as the queues change, so elements found by one WebDriver
    # call can be gone (stale) by the next. innerText separates table cells with tabs, WebDriver's text with spaces.
    script = "return Array.from(document.querySelectorAll(arguments[0]), e => e.innerText).join('\\n')"
    return str(driver.execute_script(script, css)).replace("\t", " ")


def test_dashboard_shows_queues_live_and_answers_fit(
    cluster: LocalCluster, dashboard: str, browser: webdriver.Chrome, namespace: str, tmp_path: Path
) -> None:
    try:
        run_scenario(cluster, dashboard, browser, namespace, tmp_path)
    except AssertionError:
        # What the page showed and what the dashboard said, for whoever reads the failure.
        print("page:", browser.find_element(By.TAG_NAME, "body").text[:3000])
        print("dashboard log:", (tmp_path / "dashboard.log").read_text()[-3000:])
        raise


def run_scenario(
    cluster: LocalCluster, dashboard: str, browser: webdriver.Chrome, namespace: str, tmp_path: Path
) -> None:
    cq = f"dash-{namespace}"
    apply(
        cluster,
        flavor("dash-flavor"),
        cluster_queue(cq, flavors={"dash-flavor": {"cpu": "2"}}, cohort="dashboard-demo"),
        local_queue(namespace, "team", cq),
    )
    create(cluster, job(namespace, "first", queue="team", requests={"cpu": "2"}))
    eventually(lambda: get(cluster, "job", "first", namespace)["spec"].get("suspend") is False, what="first to start")

    # 1. The page shows the cohort and the queue with its usage bar against quota.
    browser.get(dashboard)
    card = f"#cq-{cq}"
    eventually(lambda: "2 / 2" in text_of(browser, f"{card} .usage"), what="the queue's usage on the page")
    assert "Cohort dashboard-demo" in text_of(browser, ".cohort h2")
    eventually(lambda: text_of(browser, "#live") == "live", what="the live connection")
    browser.execute_script("window.notReloaded = true;")

    # 2. A second job waits: it appears in the queue's pending list with its position and reason, live.
    create(cluster, job(namespace, "second", queue="team", requests={"cpu": "1"}))
    row = eventually(
        lambda: next(
            (
                t
                for t in text_of(browser, f"{card} tr.pending").splitlines()
                if "second" in t and "WaitingForQuota" in t
            ),
            "",
        ),
        what="the pending job on the page, with the scheduler's reason",
    )
    assert row.startswith("1 ")

    # 3. The first finishes, the second is admitted: the page follows without a reload.
    finish_job_pods(cluster, namespace, "first")
    eventually(lambda: get(cluster, "job", "second", namespace)["spec"].get("suspend") is False, what="second admitted")
    eventually(lambda: "Nothing pending." in text_of(browser, card), what="the pending list to empty")
    eventually(lambda: "1 / 2" in text_of(browser, f"{card} .usage"), what="the usage to follow")
    assert browser.execute_script("return window.notReloaded === true;")

    # 4. The fit form answers: 2 CPUs would wait (1 is free), with what is missing.
    manifest = job(namespace, "third", queue="team", requests={"cpu": "2"})
    browser.find_element(By.ID, "fit-manifest").send_keys(yaml.safe_dump(manifest))
    browser.find_element(By.ID, "fit-submit").click()
    answer = eventually(lambda: text_of(browser, ".fit-answer"), what="the fit answer")
    assert answer.startswith(f"Job {namespace}/third would wait in ClusterQueue {cq}")
    assert "Missing:   cpu in flavor dash-flavor: needs 2, 1 free, 1 short" in answer

    screenshot = Path(os.environ.get("TURNSTILE_SCREENSHOT") or tmp_path / "dashboard.png")
    assert browser.save_screenshot(str(screenshot))
