"""Agent Bazaar's lemon runs (``agent_bazaar.py``) on hostile logs, through the simulate stage of
an imported instance (``stages/simulate.py``, as ``dvc repro`` runs it): the reliability audit's
lemon cases (``shared/audits/reliability_3.md``, A1-A24 and D2, D3, D8) rebuilt on the
hand-written fixture (``ab_fixture.py``; the ``import-agent-bazaar`` command's lemon params are
the authors' 12 sellers, which the fixture's 4 are not).

Each case: a fresh copy of the fixture's logs with one alteration, imported in a forked child with
a time limit and a memory cap (``tests/core/hardening.py``) into a project that holds a copy of a
good earlier import. A refusal is exit code 2 and exactly one ``error:`` line naming the file
(no traceback, no "This is likely a bug"), and the earlier import is left byte for byte; a case
the importer accepts is imported. A folder name that is not UTF-8 is refused as in crash.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.core.hardening import (
    alter,
    assert_refused,
    deepen,
    edit,
    rename_bytes,
    run_cli,
    set_number,
    shown,
    tree_digest,
)

from . import ab_fixture as fx

INSTANCE = "lemon_authors"
K2 = f"{fx.MODEL}_k2_rep1_seed8"
PROMPTS = "lemon_agent_prompts.jsonl"
TOKENS = f"{K2}_token_usage.json"


def _run(logs: Path) -> Path:
    return logs / fx.MODEL / K2


def _replace(name: str, how: str, target: str | bytes = ""):
    return lambda logs, outside: alter(
        _run(logs) / name, how, target.format(outside=outside) if how == "link" else target
    )


def _number(key: str, value: str):
    return lambda logs, outside: edit(
        _run(logs) / "state_t1.json", lambda s: set_number(s, key, value)
    )


def _args(**values):
    import json

    return lambda logs, outside: edit(
        _run(logs) / "experiment_args.json", lambda s: json.dumps(dict(json.loads(s), **values))
    )


def _duplicate_step(logs, outside):
    shutil.copy(_run(logs) / "state_t1.json", _run(logs) / "state_t01.json")
    return _run(logs) / "state_t1.json"  # named: the second of the two (listed by name)


GOOD_LINE = (
    b'{"role": "buyer", "agent": "consumer_0", "call": "bid", "timestep": 0, "depth": 0, '
    b'"system_prompt": "s", "user_prompt": "u", "response": "r"}'
)

#: case -> (the alteration, returning what the error must name; what it says, or None: imported)
CASES = {
    "truncated_json": (
        _replace("state_t3.json", "bytes", '{"timestep": 3, "firms": [{"na'),
        "not valid JSON",
    ),
    "nan": (_number("consumer_surplus", "NaN"), "consumer_surplus"),
    "num_1e400": (_number("price", "1e400"), "price"),
    "deep_nesting_args": (
        lambda logs, outside: edit(_run(logs) / "experiment_args.json", deepen),
        "not valid JSON",
    ),
    "huge_sparse_state_300MiB": (_replace("state_t2.json", "sparse"), "over the 64 MiB"),
    "prompt_log_sparse_300MiB": (_replace(PROMPTS, "sparse"), "over the 256 MiB"),
    "state_folder": (_replace("state_t1.json", "folder"), "is a folder, not a file"),
    "state_fifo": (_replace("state_t1.json", "fifo"), "is not a regular file (a FIFO)"),
    "state_link_dev_zero": (
        _replace("state_t1.json", "link", "/dev/zero"),
        "is not a regular file (a link to /dev/zero, a character device)",
    ),
    "state_link_dev_urandom": (
        _replace("state_t1.json", "link", "/dev/urandom"),
        "is not a regular file (a link to /dev/urandom",
    ),
    "state_link_outside": (
        _replace("state_t1.json", "link", "{outside}/state.json"),
        "outside the source folder",
    ),
    "args_folder": (_replace("experiment_args.json", "folder"), "is a folder, not a file"),
    "args_fifo": (_replace("experiment_args.json", "fifo"), "is not a regular file (a FIFO)"),
    "tokens_link_dev_zero": (_replace(TOKENS, "link", "/dev/zero"), "is not a regular file"),
    "prompt_log_fifo": (_replace(PROMPTS, "fifo"), "is not a regular file (a FIFO)"),
    "buyer_llm_html": (
        _args(buyer_llm="vendor/<script>alert(1)</script>"),
        "buyer_llm: Value error",
    ),
    "seller_llm_dotdot": (_args(seller_llm="vendor/.."), "seller_llm: Value error, model '..'"),
    "llm_newline": (_args(llm="vendor/a\nb"), "is not a plain name"),
    "run_folder_non_utf8": (
        lambda logs, outside: rename_bytes(_run(logs), b"\xff*"),
        "its name is not UTF-8 text",
    ),
    "model_folder_non_utf8": (
        lambda logs, outside: rename_bytes(logs / fx.MODEL, b"*\xff\xfe"),
        "its name is not UTF-8 text",
    ),
    "duplicate_state_step": (
        _duplicate_step,
        "a second state file of step 1, beside state_t01.json",
    ),
    # A23: a prompt log's unreadable lines are skipped and counted (its documented policy)
    "prompt_log_hostile_lines": (
        _replace(
            PROMPTS,
            "bytes",
            b"\n".join(
                [
                    GOOD_LINE,
                    b"\xff\xfe garbage",
                    GOOD_LINE.replace(b'"depth": 0', b'"depth": NaN'),
                    b"[" * 100_000,
                    GOOD_LINE.replace(b'"timestep": 0', b'"timestep": 1e400'),
                    b"{}",
                    GOOD_LINE,
                ]
            )
            + b"\n",
        ),
        None,
    ),
    "state_link_inside": (
        lambda logs, outside: alter(
            _run(logs) / "state_t1.json",
            "link",
            str(_run(logs).parent / f"{fx.MODEL}_k2_rep1_seed16" / "state_t1.json"),
        ),
        None,
    ),
}


def _project(root: Path, logs: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(
        yaml.safe_dump({"markets": {INSTANCE: fx.params_block(logs)}})
    )
    return root


def _stage(project: Path) -> tuple[int, str]:
    return run_cli(
        "stages.simulate:app", [INSTANCE, "--params", str(project / "params.yaml")], timeout_s=180
    )


def _episodes(project: Path) -> Path:
    return project / "data" / "episodes" / INSTANCE


@pytest.fixture(scope="module")
def earlier(tmp_path_factory):
    """A good import of the fixture through the stage, and its every file's hash."""
    root = tmp_path_factory.mktemp("earlier")
    project = _project(root / "project", fx.write_logs(root))
    code, output = _stage(project)
    assert code == 0, output
    return _episodes(project), tree_digest(_episodes(project))


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_runs_are_refused_in_one_line_and_the_earlier_import_is_kept(
    case, earlier, tmp_path
):
    good, digest = earlier
    logs = fx.write_logs(tmp_path)
    project = _project(tmp_path / "project", logs)
    shutil.copytree(good, _episodes(project))
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(_run(logs) / "state_t1.json", outside / "state.json")
    make, what = CASES[case]
    named = make(logs, outside)
    code, output = _stage(project)
    if what is None:
        assert code == 0 and "error:" not in output, output
    else:
        line = assert_refused(code, output, shown(named), what)
        assert line.startswith(f"error: {INSTANCE}: {shown(named)}"), line
        assert tree_digest(_episodes(project)) == digest  # the earlier import, byte for byte
    assert not list(_episodes(project).parent.glob(f".{INSTANCE}.*.tmp"))  # nothing left beside it
    assert [p.name for p in outside.iterdir()] == ["state.json"]
