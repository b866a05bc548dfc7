"""End to end: `dvc repro` on a tiny params file in a scratch copy of the project, with the real
embedding model. Checks every output (two instances of bertrand, alpha 1 and 10, with their own
figures and leaderboards; the results site, in a real browser), that dvc.yaml lists every module
each stage imports, that a second fresh copy run with other thread counts and one worker writes the
same dvc.lock (issue 28), that a second repro does nothing, that re-simulating identical episodes
changes no tracked hash, that adding runs replays only the new episodes, and that a run killed
mid-simulate resumes without redoing finished ones."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.browser import browser_page

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

def tiny_params() -> dict:
    """The repository's params.yaml (DVC needs every tracked key present), scaled down."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["personas"]["per_tribe"] = 6
    params["markets"]["supply_chain"].update(TINY_MARKET)
    if "double_auction" in params["markets"]:
        da = params["markets"]["double_auction"]
        da.update(games_per_distribution=2, rating_passes=10)
        da["reference"].update(games_per_distribution=200)
        da["roster"] = da["roster"][:10]
    for market in ("cournot", "bertrand"):  # one round robin of three firms: every pair once
        if market in params["markets"]:
            block = params["markets"][market]
            block["roster"] = block["roster"][:3]
            block["runs"] = 3
    if "bertrand" in params["markets"]:  # a second instance of the same kind
        params["markets"]["bertrand"].update(rounds=30, collusion_window=10)
        params["markets"]["bertrand_a10"] = {**params["markets"]["bertrand"], "market": "bertrand",
                                             "alpha": 10.0}
    for name, block in params["markets"].items():  # the contract tests' tiny instances
        kind = block.get("market", name)
        if kind in ("crash", "lemon", "english_auction"):
            tiny = ROOT / "lib" / "marketarena" / "markets" / kind / "tiny_params.yaml"
            params["markets"][name] = {**yaml.safe_load(tiny.read_text()), "market": kind}
    params["stats"].update(n_boot=200, n_perm=200)
    params["ratings"]["n_boot"] = 20
    return params


TINY_MARKET = {
        "runs": 2, "seed": 3, "steps": 2, "rounds": 2, "beta": 10,
        "roster": [
            {"name": "cost_plus_m50", "kind": "baseline", "strategy": "cost_plus", "params": {"markup": 0.5}},
            {"name": "volume", "kind": "baseline", "strategy": "volume"},
            {"name": "target_hype", "kind": "baseline", "strategy": "targeter", "params": {"tribe": "hype"}},
            {"name": "random", "kind": "baseline", "strategy": "random"},
        ],
}


#: thread counts of the first scratch copy and of its twin (issue 28: the same dvc.lock)
THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1"}
TWIN_THREADS = {k: "2" for k in THREADS}


def env(project: Path):
    """The scratch project runs its own copy of the code (not the editable install), so that its
    episodes' code fingerprint cannot move while the test runs. Thread counts: ``THREADS``, or a
    twin's own (its ``threads.json``)."""
    e = dict(os.environ)
    threads = project / "threads.json"
    e.update(json.loads(threads.read_text()) if threads.is_file() else THREADS)
    e["PYTHONPATH"] = str(project / "lib")
    e["PATH"] = f"{BIN}{os.pathsep}{e['PATH']}"
    e.update(GIT_AUTHOR_NAME="e2e", GIT_AUTHOR_EMAIL="e2e@example.invalid",  # dvc exp commits
             GIT_COMMITTER_NAME="e2e", GIT_COMMITTER_EMAIL="e2e@example.invalid")
    e.update(DVC_NO_ANALYTICS="1", HF_HUB_OFFLINE="1", MPLBACKEND="Agg",
             MARKETARENA_RECORD_IMPORTS=str(project / "imports.jsonl"))
    return e


def dvc(project: Path, *args, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(BIN / "dvc"), *args], cwd=project, env=env(project),
                          capture_output=True,
                          text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"dvc {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def write_params(project: Path, params: dict) -> None:
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def scratch_copy(dest: Path, params: dict) -> Path:
    """A scratch copy of the project (code, dvc.yaml) with its own git + DVC repo."""
    for name in ("dvc.yaml", ".dvcignore", "stages", "lib"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(
            src, dest / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if src.is_dir() else {}))
    write_params(dest, params)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    dvc(dest, "init", "-q")
    dvc(dest, "config", "core.analytics", "false")
    return dest


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return scratch_copy(tmp_path_factory.mktemp("project"), tiny_params())


def lock_outs(project: Path) -> dict[str, str]:
    """Every tracked output of dvc.lock with its hash."""
    stages = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    return {o["path"]: o["md5"] for st in stages.values() for o in st.get("outs", [])}


def ran(out: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", out))


def episode_meta(project: Path) -> dict[str, dict]:
    """Each supply_chain episode's meta.json, with ``written``: when it was written (ns)."""
    root = project / "data" / "episodes" / "supply_chain"
    out = {}
    for p in sorted(root.glob("ep-*")):
        try:  # a running simulate may sweep a stale folder while we look
            meta = p / "meta.json"
            out[p.name] = {**json.loads(meta.read_text()), "written": meta.stat().st_mtime_ns}
        except FileNotFoundError:
            pass
    return out


def test_repro_produces_every_output(project):
    dvc(project, "repro")
    reports = project / "reports"
    for fig in ("fig3_market_indices", "fig4_economics", "fig5_operations",
                "fig6_slogan_similarity", "fig7_slogan_map"):
        png = reports / "figures" / "supply_chain" / f"{fig}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    table = (reports / "tables" / "supply_chain" / "supply_chain_table2.md").read_text()
    for name in ("cost_plus_m50", "volume", "target_hype", "random"):
        assert name in table
    assert "\\begin{tabular}" in (reports / "tables" / "supply_chain" / "supply_chain_table2.tex").read_text()
    board = pd.read_csv(reports / "leaderboards" / "supply_chain.csv")
    assert sorted(board["name"]) == sorted(e["name"] for e in TINY_MARKET["roster"])
    assert (board["mu_lo"] <= board["mu_hi"]).all() and (board["episodes"] == 2).all()
    assert (reports / "overall" / "overall.csv").is_file()
    site = reports / "site"
    instances = yaml.safe_load((project / "params.yaml").read_text())["markets"]
    assert (site / "index.html").is_file() and (site / "style.css").is_file()
    assert sorted(p.stem for p in site.glob("*.html")) == sorted([*instances, "index"])
    assert "no cross-market ranking" in (reports / "overall" / "overall.md").read_text()
    for instance in instances:  # every figure with the data it draws (plots.drawn) on the site
        rows = 0
        for png in (reports / "figures" / instance).glob("*.png"):
            drawn = reports / "tables" / instance / "figure_data" / f"{png.stem}.csv"
            rows += len(drawn.read_text().splitlines()) - 1  # (a "no data" panel draws none)
            assert (site / instance / "figures" / drawn.name).read_bytes() == drawn.read_bytes()
        assert rows > 0, instance
    stats = json.loads((reports / "stats" / "supply_chain.json").read_text())
    assert {r["metric"] for r in stats["spearman"]} >= {"fill_rate", "MMS", "NPM"}
    agents = pd.read_parquet(project / "data" / "metrics" / "supply_chain" / "agents.parquet")
    assert len(agents) == 2 * 4 and agents["episode_id"].nunique() == 2
    assert len(episode_meta(project)) == 2
    if (reports / "leaderboards" / "double_auction.csv").exists():  # the second market slots in
        da = pd.read_csv(reports / "leaderboards" / "double_auction.csv")
        assert len(da) == 10 and da["games"].sum() == 8 * 8
        assert (project / "data" / "references" / "double_auction" / "summary.json").is_file()
        assert len(list((reports / "figures" / "double_auction").glob("*.png"))) >= 7


def test_a_fresh_copy_with_other_thread_counts_and_one_worker_writes_the_same_dvc_lock(
        project, tmp_path_factory):
    """Issue 28: a second fresh copy, run with 2 threads everywhere (OpenMP, MKL, OpenBLAS, numba)
    instead of 1 and one simulate worker instead of one per core (``execution`` is no tracked
    param), gives back the first copy's dvc.lock: every output, byte for byte; and `dvc status`
    is clean in both."""
    first = (project / "dvc.lock").read_text()
    params = tiny_params()
    params["execution"] = {"workers": 1}
    twin = tmp_path_factory.mktemp("twin")
    (twin / "threads.json").write_text(json.dumps(TWIN_THREADS))
    scratch_copy(twin, params)
    dvc(twin, "repro")
    a, b = lock_outs(project), lock_outs(twin)
    assert len(a) > 50 and a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    assert (twin / "dvc.lock").read_text() == first
    for copy in (project, twin):
        assert "up to date" in dvc(copy, "status").stdout


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


def test_results_site_is_reproducible_and_its_hash_leaves_out_run_info(project):
    """The site's bytes are a function of its inputs (a forced rebuild writes the same bytes, no
    absolute path in any page), and run-info.js is not part of its hash (.dvcignore)."""
    site = project / "reports" / "site"
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    assert str(project).encode() not in b"".join(before.values())
    dvc(project, "repro", "--force", "--single-item", "report")
    after = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    assert after == before
    with open(site / "run-info.js", "a", encoding="utf-8") as fh:
        fh.write("// another run\n")
    status = dvc(project, "status", "report").stdout
    assert "changed" not in status, status


def test_two_instances_of_one_kind_have_their_own_outputs(project):
    reports = project / "reports"
    boards = {name: pd.read_csv(reports / "leaderboards" / f"{name}.csv")
              for name in ("bertrand", "bertrand_a10")}
    assert set(boards["bertrand"]["name"]) == set(boards["bertrand_a10"]["name"])
    refs = {name: json.loads((project / "data" / "references" / name / "summary.json").read_text())
            for name in boards}
    nash = {name: ref["reference"]["nash"]["prices"][0][0] for name, ref in refs.items()}
    assert nash["bertrand_a10"] == pytest.approx(10 * nash["bertrand"], rel=1e-6)  # alpha scales p
    for name in boards:
        assert (reports / "figures" / name / "fig_prices.png").stat().st_size > 10_000
        assert (reports / "tables" / name / f"{name}_collusion.md").is_file()
        meta = json.loads(next((project / "data" / "episodes" / name).glob("ep-*/meta.json")).read_text())
        assert (meta["instance"], meta["market"]) == (name, "bertrand")


def test_every_stage_lists_the_modules_it_imports(project):
    """Each stage run recorded the marketarena files it loaded (MARKETARENA_RECORD_IMPORTS): each
    must be a dependency of that stage in dvc.yaml, or, for per-instance stages, part of the code
    hashed into data/instances/<instance>.json (pipeline.INSTANCE_CODE + the market's folder)."""
    sys.path.insert(0, str(project / "lib"))
    from marketarena.pipeline import INSTANCE_CODE

    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    params = yaml.safe_load((project / "params.yaml").read_text())
    lib = project / "lib" / "marketarena"
    checked = set()
    for line in (project / "imports.jsonl").read_text().splitlines():
        record = json.loads(line)
        stage = Path(record["argv"][0]).stem
        name = {"instances": "instance"}.get(stage, stage)
        spec = stages[name]
        key = record["argv"][1] if "foreach" in spec else None
        deps = spec["do"]["deps"] if key else spec["deps"]
        covered = [project / d.replace("${key}", key or "") for d in deps]
        if key and name != "instance":
            kind = params["markets"][key].get("market", key)
            covered += [lib / c for c in INSTANCE_CODE] + [lib / "markets" / kind]
        for f in record["files"]:
            path = Path(f)
            if not path.is_relative_to(project):
                continue
            assert any(path == c or path.is_relative_to(c) for c in covered), \
                f"stage {name}{'@' + key if key else ''} imports {path.relative_to(project)}, " \
                "which dvc.yaml does not list"
        checked.add(name)
    assert checked >= {"instance", "personas", "embed", "reference", "simulate", "metrics", "stats",
                       "ratings", "figures"}


def test_second_repro_is_a_no_op(project):
    before = episode_meta(project)
    out = dvc(project, "repro").stdout
    assert "didn't change" in out or "up to date" in out
    assert episode_meta(project) == before


def test_resimulating_identical_episodes_changes_no_tracked_hash(project):
    """Issue 28: the episodes (a folder per episode, and shards) and their run logs deleted, the
    simulate stages play everything again (new wall times, new finish times), and nothing
    downstream re-runs: every tracked hash is the one before."""
    before = lock_outs(project)
    for instance in ("supply_chain", "double_auction"):
        shutil.rmtree(project / "data" / "episodes" / instance)
        shutil.rmtree(project / "data" / "run_logs" / instance)
    out = dvc(project, "repro", "--no-run-cache").stdout
    assert ran(out) == {"simulate@supply_chain", "simulate@double_auction"}, out
    assert lock_outs(project) == before
    assert (project / "data" / "run_logs" / "supply_chain").is_dir()  # the new run's information


def test_more_runs_replays_only_the_new_episode(project):
    before = episode_meta(project)
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["markets"]["supply_chain"]["runs"] = 3
    write_params(project, params)
    dvc(project, "repro")
    after = episode_meta(project)
    assert sorted(after) == ["ep-0000", "ep-0001", "ep-0002"]
    for ep in before:  # untouched: same fingerprint, not rewritten
        assert after[ep]["written"] == before[ep]["written"]
    agents = pd.read_parquet(project / "data" / "metrics" / "supply_chain" / "agents.parquet")
    assert agents["episode_id"].nunique() == 3


def test_killed_run_resumes_without_redoing_finished_episodes(project):
    old = {m["fingerprint"] for m in episode_meta(project).values()}
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["markets"]["supply_chain"].update(runs=12, steps=4)  # changed: every episode replays
    write_params(project, params)

    def new_episodes():
        return {k: v for k, v in episode_meta(project).items() if v["fingerprint"] not in old}

    proc = subprocess.Popen([str(BIN / "dvc"), "repro"], cwd=project, env=env(project),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    root = project / "data" / "episodes" / "supply_chain"
    deadline = time.time() + 600
    try:
        while time.time() < deadline:
            if root.is_dir() and len(new_episodes()) >= 2:
                break
            if proc.poll() is not None:
                pytest.fail("dvc repro finished before it could be interrupted")
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # dvc and the stage process it started
    finally:
        proc.wait()
    kept = new_episodes()
    assert 2 <= len(kept) < 12
    dvc(project, "repro")
    final = episode_meta(project)
    assert len(final) == 12
    for ep, meta in kept.items():
        assert final[ep]["written"] == meta["written"], ep


def test_a_dvc_exp_sweep_reruns_only_the_changed_instance(project):
    """README "Sweeps with dvc exp": `dvc exp run -S` (in the workspace, or queued with `--queue`
    and run with `--run-all`) re-runs the stages of the instance whose params changed (and
    `overall`), nothing else, and `dvc exp show` lists the experiments."""
    git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]
    subprocess.run([*git, "add", "-A"], cwd=project, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "baseline"], cwd=project, check=True, capture_output=True)
    out = dvc(project, "exp", "run", "-n", "bertrand-seed5", "-S", "markets.bertrand.seed=5").stdout
    stages_ran = ran(out)
    assert {"simulate@bertrand", "metrics@bertrand", "ratings@bertrand"} <= stages_ran, out
    stages = ("instance", "reference", "simulate", "metrics", "stats", "ratings", "figures")
    assert stages_ran <= {f"{s}@bertrand" for s in stages} | {"overall", "report"}, stages_ran
    shown = dvc(project, "exp", "show", "--json").stdout
    assert "bertrand-seed5" in shown
    # DVC's own queue: two variants queued, run by `--run-all` in DVC's temporary workspaces,
    # each re-running only the bertrand instance's stages
    for seed in (6, 7):
        dvc(project, "exp", "run", "--queue", "-n", f"bertrand-seed{seed}",
            "-S", f"markets.bertrand.seed={seed}")
    dvc(project, "exp", "run", "--run-all", "--jobs", "1")
    shown = dvc(project, "exp", "show", "--json").stdout
    for seed in (6, 7):
        assert f"bertrand-seed{seed}" in shown
        log = dvc(project, "queue", "logs", f"bertrand-seed{seed}").stdout
        queued = ran(log)
        assert "simulate@bertrand" in queued and queued <= {f"{s}@bertrand" for s in stages} | {"overall", "report"}, log
