"""End to end: `dvc repro` on a tiny params file in a scratch copy of the project, with the real
embedding model (``tests/e2e/project.py`` builds it once per run). Every output is there (two
instances of bertrand, alpha 1 and 10, with their own figures and boards), and dvc.yaml lists every
module each stage imports."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.e2e.project import TINY_MARKET, episode_meta

pytestmark = pytest.mark.slow


def test_repro_produces_every_output(project):
    reports = project / "reports"
    for fig in (
        "fig3_market_indices",
        "fig4_economics",
        "fig5_operations",
        "fig6_slogan_similarity",
        "fig7_slogan_map",
    ):
        png = reports / "figures" / "supply_chain" / f"{fig}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    table = (reports / "tables" / "supply_chain" / "supply_chain_table2.md").read_text()
    for name in ("cost_plus_m50", "volume", "target_hype", "random"):
        assert name in table
    assert (
        "\\begin{tabular}"
        in (reports / "tables" / "supply_chain" / "supply_chain_table2.tex").read_text()
    )
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
        # every instance has its reference folder and its code file (the simulate and
        # instances stages), whether or not its market has a reference
        summary = json.loads(
            (project / "data" / "references" / instance / "summary.json").read_text()
        )
        assert summary["instance"] == instance and len(summary["fingerprint"]) == 64
        info = json.loads((project / "data" / "instances" / f"{instance}.json").read_text())
        assert info["instance"] == instance and ("uses" in info) == (
            info["market"] == "supply_chain"
        )
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


def test_a_repro_starts_one_stage_per_job_and_none_that_only_hashes(project):
    """One stage for every instance's code file (not one process per instance) and no reference
    stage (a market's reference is its simulate stage's first step, and a market without one no
    longer costs a process): five stages per instance and five global ones (issue 57)."""
    ran = set(re.findall(r"Running stage '([^']+)'", (project / "repro.log").read_text()))
    instances = yaml.safe_load((project / "params.yaml").read_text())["markets"]
    per = ("simulate", "metrics", "stats", "ratings", "figures")
    assert ran == {
        "personas",
        "embed",
        "instances",
        "overall",
        "report",
        *(f"{s}@{i}" for s in per for i in instances),
    }


def test_two_instances_of_one_kind_have_their_own_outputs(project):
    reports = project / "reports"
    boards = {
        name: pd.read_csv(reports / "leaderboards" / f"{name}.csv")
        for name in ("bertrand", "bertrand_a10")
    }
    assert set(boards["bertrand"]["name"]) == set(boards["bertrand_a10"]["name"])
    refs = {
        name: json.loads((project / "data" / "references" / name / "summary.json").read_text())
        for name in boards
    }
    nash = {name: ref["reference"]["nash"]["prices"][0][0] for name, ref in refs.items()}
    assert nash["bertrand_a10"] == pytest.approx(10 * nash["bertrand"], rel=1e-6)  # alpha scales p
    for name in boards:
        assert (reports / "figures" / name / "fig_prices.png").stat().st_size > 10_000
        assert (reports / "tables" / name / f"{name}_collusion.md").is_file()
        meta = json.loads(
            next((project / "data" / "episodes" / name).glob("ep-*/meta.json")).read_text()
        )
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
        name = Path(record["argv"][0]).stem
        spec = stages[name]
        key = record["argv"][1] if "foreach" in spec else None
        deps = spec["do"]["deps"] if key else spec["deps"]
        covered = [project / d.replace("${key}", key or "") for d in deps]
        if key:
            kind = params["markets"][key].get("market", key)
            covered += [lib / c for c in INSTANCE_CODE] + [lib / "markets" / kind]
        for f in record["files"]:
            path = Path(f)
            if not path.is_relative_to(project):
                continue
            assert any(path == c or path.is_relative_to(c) for c in covered), (
                f"stage {name}{'@' + key if key else ''} imports {path.relative_to(project)}, "
                "which dvc.yaml does not list"
            )
        checked.add(name)
    assert checked >= {
        "instances",
        "personas",
        "embed",
        "simulate",
        "metrics",
        "stats",
        "ratings",
        "figures",
        "overall",
        "report",
    }


def test_a_stage_that_reads_logs_imports_no_other_market(project):
    """A per-instance stage loads its own market only (validating its params reads the market's
    params module alone, not the others' packages: issue 57)."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    for line in (project / "imports.jsonl").read_text().splitlines():
        record = json.loads(line)
        if len(record["argv"]) < 2 or record["argv"][1] not in params["markets"]:
            continue
        kind = params["markets"][record["argv"][1]].get("market", record["argv"][1])
        others = {
            Path(f).relative_to(project / "lib" / "marketarena" / "markets").parts[0]
            for f in record["files"]
            if Path(f).is_relative_to(project / "lib" / "marketarena" / "markets")
        }
        assert others <= {kind, "_shared", "__init__.py"}, (record["argv"], others)
