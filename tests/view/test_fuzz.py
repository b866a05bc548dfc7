"""No query string makes the viewer fail: every route of the app (taken from the app itself, so a
route added later is tried too) and every query parameter it reads (recorded while the route
answers a valid request), each set to hostile values, one at a time, and every route with
unknown, repeated, bare and thousands of parameters: the answer is 200, 400 or 404 (3xx for a
redirect), never a 500 nor a traceback. In process, with Starlette's TestClient.

The audits' cases (reliability_3 D4, D5): ``search?page=<30 digits>`` overflowed SQLite, and a
player page with an unknown ``only=`` raised in its template."""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

import starlette.requests
from starlette.datastructures import QueryParams
from starlette.routing import Mount, Route

from marketarena.core.reader import read_episode
from marketarena.view.app import create_app, vendor_files
from marketarena.view.search import PAGE_SIZE as SEARCH_PAGE

INSTANCE = "double_auction"
EPISODE = "x-gpt_fake-0000"
ALLOWED = {200, 400, 404}
HOSTILE = [
    "9" * 30,
    "-1",
    "1e30",
    "9" * 5000,  # past SQLite's and Python's int limits, negative, a float
    "",
    "x",
    "é漢字🙂\u202e",
    "../../../../etc/passwd",
    "a" * 10_000,
    "\x00",
    "\r\nX-Evil: 1",
    "<script>alert(1)</script>{{7*7}}' OR 1=1--",
]
#: sent as they are: percent-encoded bytes that decode to no text, a lone percent sign
RAW = ["%ff%fe", "%ED%A0%80", "%", "%2e%2e%2F%2e%2e"]


class Recording(QueryParams):
    """The query of a request, noting every parameter the handler reads."""

    read: set[str] = set()

    def __getitem__(self, key):
        Recording.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        Recording.read.add(key)
        return super().__contains__(key)

    def getlist(self, key):
        Recording.read.add(key)
        return super().getlist(key)


def valid_requests(llm_runs) -> dict[str, tuple[str, dict[str, str]]]:
    """For each route of the app: a path and query it answers with 200 (a new path parameter
    needs a value here, a route needing a query one below: the test says so)."""
    tables = read_episode(llm_runs["shards"] / INSTANCE, EPISODE, names=("decisions",))[1]
    first = tables["decisions"].iloc[0]
    values = {
        "instance": INSTANCE,
        "episode": EPISODE,
        "player": "gpt_fake",
        "name": next(iter(vendor_files())),
    }
    queries = {
        "/i/{instance}/compare": {"a": "gpt_fake", "b": "truthful"},
        "/i/{instance}/e/{episode}/d": {
            "step": str(first["step"]),
            "round": str(first["round"]),
            "phase": first["phase"],
            "agent": first["agent_id"],
        },
        "/i/{instance}/search": {"text": "Your private"},
    }
    out = {}
    for route in create_app(llm_runs["shards"]).routes:
        if isinstance(route, Mount):  # static files: the first file of its folder
            folder = route.app.directory
            name = sorted(p.name for p in folder.iterdir() if p.is_file())[0]
            out[route.path + "/{file}"] = (f"{route.path}/{name}", {})
            continue
        assert isinstance(route, Route), route
        missing = set(route.param_convertors) - set(values)
        assert not missing, f"{route.path}: give its parameter(s) {missing} a valid value here"
        path = route.path_format.format(
            **{k: quote(values[k], safe="") for k in route.param_convertors}
        )
        out[route.path] = (path, queries.get(route.path, {}))
    return out


def asked(client, url: str, capfd):
    response = client.get(url)
    assert response.status_code in ALLOWED or 300 <= response.status_code < 400, (
        url[:300],
        response.status_code,
        response.text[:500],
    )
    logged = capfd.readouterr()
    assert "Traceback" not in logged.out + logged.err, (url[:300], logged)
    return response


def test_every_route_answers_hostile_query_strings_with_200_or_404(
    client, llm_runs, monkeypatch, capfd
):
    monkeypatch.setattr(starlette.requests, "QueryParams", Recording)
    routes = valid_requests(llm_runs)
    assert len(routes) >= 10  # the 8 pages, the vendor files and the static files at least
    tried = {}
    for template, (path, query) in routes.items():
        Recording.read = set()
        response = asked(client, f"{path}?{urlencode(query)}", capfd)
        assert response.status_code == 200, (template, response.text[:300])
        params = sorted(Recording.read | set(query))
        tried[template] = params
        for key in params:
            for value in HOSTILE:
                asked(client, f"{path}?{urlencode({**query, key: value})}", capfd)
            rest = urlencode({k: v for k, v in query.items() if k != key})
            for raw in RAW:
                asked(client, f"{path}?{rest}&{quote(key)}={raw}", capfd)
            asked(client, f"{path}?{rest}&{quote(key)}", capfd)  # bare: no "="
            asked(client, f"{path}?{urlencode(query)}&{quote(key)}=1&{quote(key)}=-9", capfd)
        asked(client, f"{path}?{urlencode(query)}&zz=1&{quote('<b>')}=%00&=x&&", capfd)
        many = "&".join(f"k{i}=v" for i in range(3000))
        asked(client, f"{path}?{urlencode(query)}&{many}", capfd)
    # the parameters were found by reading, not listed by hand: the pages' known ones among them
    assert {"player", "seed", "q", "only", "sort", "desc", "page", "s.distribution"} <= set(
        tried["/i/{instance}"]
    )
    assert {"text", "q", "page", "episode"} <= set(tried["/i/{instance}/search"])
    assert "player" in tried["/i/{instance}/e/{episode}"]


def test_every_route_answers_hostile_path_parameters_with_404(client, llm_runs, capfd):
    for template, (path, query) in valid_requests(llm_runs).items():
        slots, parts = template.split("/"), path.split("/")
        for i in [i for i, slot in enumerate(slots) if slot.startswith("{")]:
            for value in [*map(quote, HOSTILE + [".tmp-x", "e" * 300]), *RAW]:
                hostile = "/".join([*parts[:i], value.replace("/", "%2F"), *parts[i + 1 :]])
                response = asked(client, f"{hostile}?{urlencode(query)}", capfd)
                assert response.status_code == 404 or response.is_redirect, (
                    hostile[:200],
                    response.status_code,
                )


def test_the_audits_500s_are_200s(client):
    """D4: a 30-digit page of a search is its last page; D5: an unknown only= is ignored."""
    hits = lambda page: re.findall(r'<a class="hit" href="([^"]+)"', page.text)  # noqa: E731
    first = client.get(f"/i/{INSTANCE}/search?text=Your+private")
    last = client.get(f"/i/{INSTANCE}/search?text=Your+private&page=" + "9" * 30)
    assert first.status_code == last.status_code == 200
    assert 0 < len(hits(first)) < SEARCH_PAGE and hits(last) == hits(first)  # one page: the last
    plain = client.get(f"/i/{INSTANCE}/p/gpt_fake")
    odd = client.get(f"/i/{INSTANCE}/p/gpt_fake?only=x")
    assert plain.status_code == odd.status_code == 200
    listed = [
        re.findall(r'<tr><td><a href="/i/double_auction/e/([^"?]+)', page.text)
        for page in (plain, odd)
    ]
    assert listed[1] == listed[0] and len(listed[0]) == 3


def test_a_not_found_is_plain_text_that_no_browser_sniffs_and_pages_are_gzipped(client):
    missing = client.get(f"/i/{INSTANCE}/p/{quote('<script>alert(1)</script>', safe='')}")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/plain")
    assert missing.headers["x-content-type-options"] == "nosniff"
    for url in (f"/i/{INSTANCE}/e/{EPISODE}", "/vendor/dt_bundle.js"):
        response = client.get(url, headers={"Accept-Encoding": "gzip"})
        assert response.headers["content-encoding"] == "gzip", url
        assert response.headers["x-content-type-options"] == "nosniff"
        assert int(response.headers.get("content-length", 0) or 0) < len(response.content)
