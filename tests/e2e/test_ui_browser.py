"""The memory viewer in headless Chromium: search, edit, delete, and a hook's capture arriving live.

Chromium and its driver come from Debian packages (``chromium``,
``chromium-driver``; ``.ci/run`` installs them through ``tests/e2e/install_browser.sh``),
driven by selenium with both paths given, so nothing is ever downloaded.
Without them the tests skip and say why, except under ``CCMEMORY_REQUIRE_BROWSER=1``
(set by ``.ci/run``), where a missing browser fails the run.

With ``CCMEMORY_UI_SCREENSHOTS=<dir>`` the tests also save the README's screenshots there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest


from testing.hooks import run_hook, tool_call
from testing.ui import running_ui, RunningUI

from ccmemory import db as database  # noqa: E402
from ccmemory import memories, projects, sessions  # noqa: E402

CHROMIUM = os.environ.get("CCMEMORY_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CCMEMORY_CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT_SECONDS = 30


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not shutil.which(path):
            return f"{path} not found (apt-get install chromium chromium-driver, or run tests/e2e/install_browser.sh)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    problem = _missing()
    if problem:
        if os.environ.get("CCMEMORY_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CCMEMORY_REQUIRE_BROWSER=1 but {problem}")
        pytest.skip(problem)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # selenium-manager must never fetch a browser or a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1440,900", "--force-prefers-reduced-motion", "--no-first-run"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(WAIT_SECONDS)
    yield driver
    driver.quit()


@pytest.fixture
def store(home: Path, project_dir: Path) -> dict[str, Any]:
    """A project with a session and a few memories of every kind the page shows."""
    db = database.connect()
    project = projects.project_id(db, project_dir)
    sessions.ensure(db, "s-2026-11-20", project)
    sessions.set_summary(db, "s-2026-11-20", "Moved the staging database; fixed the flaky login test.")
    added = {
        "port": memories.add(db, project_id=project, content="The staging database listens on port 5433, not 5432.",
                             category="gotcha", tags=["database", "staging"], session_id="s-2026-11-20"),
        "tabs": memories.add(db, project_id=project, content="The user prefers tabs in Makefiles.",
                             category="general", sector="emotional"),
        "deploy": memories.add(db, project_id=project, content="Deploy with `make release` then tag the commit.",
                               category="pattern", sector="procedural", importance=0.8),
        "login": memories.add(db, project_id=project, content="## Flaky login test\n\nThe login test raced the "
                              "session cookie; **fixed** by waiting for `/api/me`.", category="discovery",
                              session_id="s-2026-11-20"),
    }
    db.close()
    return {"project": project, "memories": added}


def _wait(driver: Any, condition: Any, message: str) -> Any:
    """Wait for ``condition``; the list re-renders on every live update, so stale elements mean "not yet"."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_SECONDS, ignored_exceptions=(StaleElementReferenceException,
                                                                   NoSuchElementException)).until(condition, message)


def _click(driver: Any, css: str) -> None:
    """Click the element matching ``css``, again if a live update replaced it meanwhile."""
    def clicked(d: Any) -> bool:
        d.find_element("css selector", css).click()
        return True

    _wait(driver, clicked, f"could not click {css}")


def _open(driver: Any, ui: RunningUI) -> None:
    driver.get(ui.url)
    _wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"), "page never loaded")
    _wait(driver, lambda d: d.find_element("id", "live").text == "live", "event stream never connected")


def _items(driver: Any) -> list[Any]:
    return driver.find_elements("css selector", "#memories li.memory")


def _item(driver: Any, memory_id: str) -> Any:
    found = driver.find_elements("css selector", f'#memories li[data-id="{memory_id}"]')
    return found[0] if found else None


def _screenshot(driver: Any, name: str) -> None:
    folder = os.environ.get("CCMEMORY_UI_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / name))


def _stored(memory_id: str) -> memories.Memory | None:
    db = database.connect()
    try:
        return memories.get(db, memory_id, project_id=None)
    except LookupError:
        return None
    finally:
        db.close()


def test_search_edit_and_delete_a_memory(browser: Any, store: dict[str, Any], home: Path, project_dir: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    port = store["memories"]["port"]
    with running_ui(home, project_dir, keyword_only=False) as ui:
        _open(browser, ui)
        assert len(_items(browser)) == 4
        _screenshot(browser, "ui-memories.png")

        browser.find_element(By.ID, "q").send_keys("staging port")

        def hybrid_answer(d: Any) -> bool:
            """Search; until the viewer's model has loaded the answer is keyword-only, so ask again."""
            d.find_element(By.CSS_SELECTOR, "#search-form button[type=submit]").click()
            _wait(d, lambda d2: "result" in d2.find_element(By.ID, "count").text, "search never answered")
            return "(hybrid)" in d.find_element(By.ID, "count").text

        _wait(browser, hybrid_answer, "search never ran in hybrid mode")
        assert _items(browser)[0].get_attribute("data-id") == port.id
        _click(browser, f'#memories li[data-id="{port.id}"]')
        _wait(browser, lambda d: "port 5433" in d.find_element(By.ID, "detail").text, "detail never opened")
        _screenshot(browser, "ui-search-detail.png")

        browser.find_element(By.ID, "edit").click()
        content = browser.find_element(By.ID, "edit-content")
        content.clear()
        content.send_keys("The staging database moved to port 6543 in November.")
        tags = browser.find_element(By.ID, "edit-tags")
        tags.clear()
        tags.send_keys("database, staging, moved")
        Select(browser.find_element(By.ID, "edit-sector")).select_by_value("episodic")
        browser.find_element(By.ID, "save").click()
        _wait(browser, lambda d: "port 6543" in d.find_element(By.ID, "detail").text, "edit never shown")
        edited = _stored(port.id)
        assert edited is not None
        assert (edited.content, edited.tags, edited.sector) == (
            "The staging database moved to port 6543 in November.", ["database", "staging", "moved"], "episodic")
        _wait(browser, lambda d: "6543" in (_item(d, port.id).text if _item(d, port.id) else ""),
              "the list never showed the edit")

        _click(browser, "#delete")
        _wait(browser, lambda d: _item(d, port.id) is None, "the deleted memory stayed in the list")
        assert _stored(port.id).is_deleted

        Select(browser.find_element(By.ID, "f-deleted")).select_by_value("only")
        _click(browser, "#clear-search")
        _wait(browser, lambda d: _item(d, port.id) is not None, "the trash never listed the memory")
        _click(browser, f'#memories li[data-id="{port.id}"]')
        def armed_detail(d: Any) -> Any:
            button = d.find_element(By.ID, "hard-delete")
            return button if button.is_displayed() and d.find_elements(By.ID, "restore") else None

        hard = _wait(browser, armed_detail, "no hard delete button in the trashed memory's detail")
        hard.click()
        assert "cannot be undone" in hard.text and _stored(port.id) is not None  # the first click only arms it
        hard.click()
        _wait(browser, lambda d: _item(d, port.id) is None, "the hard-deleted memory stayed in the trash")
        assert _stored(port.id) is None


def test_a_memory_captured_by_a_hook_appears_without_a_reload(browser: Any, store: dict[str, Any], home: Path,
                                                               project_dir: Path) -> None:
    from selenium.webdriver.common.by import By

    with running_ui(home, project_dir) as ui:
        _open(browser, ui)
        browser.execute_script("window.__sameDocument = 'yes';")
        before = len(_items(browser))
        payload = tool_call("hook-live", project_dir, "Bash", {"command": "pytest tests/test_login.py -q"},
                            {"stdout": "7 passed in 0.42s", "stderr": "", "interrupted": False}, "toolu_live_01")
        result = run_hook("post_tool_use", payload, home, cwd=project_dir)
        assert result.returncode == 0, result.stderr
        _wait(browser, lambda d: len(_items(d)) == before + 1, "the captured memory never appeared")
        newest = _wait(browser, lambda d: _items(d)[0], "no list")
        assert "pytest tests/test_login.py" in newest.text
        assert "new" in newest.get_attribute("class").split()
        assert browser.execute_script("return window.__sameDocument") == "yes"  # no reload happened
        _screenshot(browser, "ui-live-capture.png")

        browser.find_element(By.CSS_SELECTOR, '#tabs button[data-tab="sessions"]').click()
        _wait(browser, lambda d: "Moved the staging database" in d.find_element(By.ID, "sessions").text,
              "no session timeline")
        _screenshot(browser, "ui-sessions.png")
        browser.find_element(By.CSS_SELECTOR, '#tabs button[data-tab="storage"]').click()
        _wait(browser, lambda d: "Data directory" in d.find_element(By.ID, "storage").text, "no storage view")


def test_memory_files_are_created_edited_and_deleted_in_the_page(browser: Any, store: dict[str, Any], home: Path,
                                                                  project_dir: Path) -> None:
    from selenium.webdriver.common.by import By

    def file_row(d: Any, path: str) -> Any:
        found = d.find_elements(By.CSS_SELECTOR, f'#files li[data-path="{path}"]')
        return found[0] if found else None

    with running_ui(home, project_dir) as ui:
        _open(browser, ui)
        _click(browser, '#tabs button[data-tab="files"]')
        _wait(browser, lambda d: "No memory files yet" in d.find_element(By.ID, "files").text, "no empty state")
        _click(browser, "#new-file")
        path = browser.find_element(By.ID, "file-path")
        path.clear()
        path.send_keys("/memories/deploy.md")
        browser.find_element(By.ID, "file-content").send_keys("# Deploy\n\n- run `make release`\n")
        _click(browser, "#file-save")
        _wait(browser, lambda d: file_row(d, "/memories/deploy.md") is not None, "the new file is not listed")
        _wait(browser, lambda d: "version 1" in d.find_element(By.ID, "file").text, "the file did not open")

        content = browser.find_element(By.ID, "file-content")
        content.send_keys("- then tag the commit\n")
        _click(browser, "#file-save")
        _wait(browser, lambda d: "version 2" in d.find_element(By.ID, "file").text, "the edit was not saved")
        db = database.connect()
        stored = db.one("SELECT content, version FROM memory_files WHERE path = 'deploy.md'")
        db.close()
        assert stored == {"content": "# Deploy\n\n- run `make release`\n- then tag the commit\n", "version": 2}
        _screenshot(browser, "ui-files.png")

        _click(browser, "#file-delete")
        _click(browser, "#file-delete")
        _wait(browser, lambda d: file_row(d, "/memories/deploy.md") is None, "the deleted file is still listed")
        db = database.connect()
        assert db.scalar("SELECT COUNT(*) FROM memory_files") == 0
        db.close()


def test_the_launch_file_opens_the_page_with_its_token(browser: Any, store: dict[str, Any], home: Path,
                                                       project_dir: Path) -> None:
    """`ccmemory ui` starts the browser on a private file (not the address with the token): it forwards to the page."""
    from ccmemory.ui import launch

    with running_ui(home, project_dir) as ui:
        path = launch.write_launch_file(ui.url)
        try:
            browser.get(Path(path).as_uri())
            _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready === 'true'"),
                  "the launch file never led to a ready page")
            assert browser.current_url == f"{ui.base}/" and len(_items(browser)) == 4
        finally:
            launch.remove_launch_file(path)
