"""End to end: the built project's results site (``reports/site``) from file:// in a real browser,
and rebuilt: the same bytes (on a copy of the build, which the rebuild changes)."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.browser import browser_page
from tests.e2e.project import copy_of, dvc

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site_copy(project, tmp_path_factory):
    return copy_of(project, tmp_path_factory.mktemp("site") / "project")


def test_results_site_opens_from_disk_in_a_browser(project):
    """reports/site from file:// in Chromium: the index links to every instance; on each page
    every figure has loaded, the board's rows show their 95% intervals, the run's time and spend
    come from run-info.js, and no page logs an error."""
    site = project / "reports" / "site"
    params = yaml.safe_load((project / "params.yaml").read_text())
    with browser_page() as (page, console):
        page.goto((site / "index.html").as_uri())
        links = page.eval_on_selector_all("table.instances a", "els => els.map(e => e.textContent)")
        assert links == list(params["markets"])
        first = links[0]
        page.click(f'table.instances a >> text="{first}"')
        assert page.url.endswith(f"/{first}.html")
        for instance in params["markets"]:
            if not page.url.endswith(f"/{instance}.html"):
                page.click(f'nav.side a >> text="{instance}"')  # links between pages
            page.wait_for_load_state("load")
            widths = page.eval_on_selector_all("figure img", "els => els.map(e => e.naturalWidth)")
            pngs = list((project / "reports" / "figures" / instance).glob("*.png"))
            assert len(widths) == len(pngs) > 0 and all(w > 0 for w in widths), instance
            first = page.locator("table.board tbody tr").first.inner_text()
            assert re.search(r"-?[\d.,]+ \[-?[\d.,]+, -?[\d.,]+\]", first), (instance, first)
            assert "leads" in page.locator("p.result").inner_text()  # its result in a sentence
            data = page.eval_on_selector_all("figcaption a[download]", "els => els.length")
            assert data == len(widths), instance  # every figure's data beside it
            assert "episode wall time" in page.locator("td[data-run-info]").inner_text()
        assert console.errors == []


def test_results_site_is_reproducible_and_its_hash_leaves_out_run_info(project, site_copy):
    """The site's bytes are a function of its inputs (a forced rebuild, here in a copy of the
    project at another path, writes the same bytes, no absolute path in any page), and
    run-info.js is not part of its hash (.dvcignore)."""
    site = site_copy / "reports" / "site"
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    dvc(site_copy, "repro", "--force", "--single-item", "report")
    after = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    assert after == before
    for path in (project, site_copy):
        assert str(path).encode() not in b"".join(after.values())
    with open(site / "run-info.js", "a", encoding="utf-8") as fh:
        fh.write("// another run\n")
    status = dvc(site_copy, "status", "report").stdout
    assert "changed" not in status, status
