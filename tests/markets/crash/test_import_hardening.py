"""``marketarena import-agent-bazaar --market crash`` on hostile Agent Bazaar logs: the reliability
audit's corpus (``shared/audits/scripts/turn5/reliability_3/ab_fuzz.py``, cases A1-A24 of
``reliability_3.md``) rebuilt on the hand-written fixture (``agent_bazaar_fixture.py``), with the
file-system cases it found (D2: a FIFO, a link to a device, a link out of the logs folder; D3: a
model id that makes no player name; D8: a folder name that is not UTF-8) and a few more of the same
kind (the arguments, the prompt log, the firms' prompts, the token usage as a FIFO or a device).

Each case: a fresh copy of the logs with one alteration, imported by the command (in process, in a
forked child with a time limit and a memory cap, ``tests/core/hardening.py``) over a copy of a
good earlier import. A refusal is exit code 2 and exactly one ``error:`` line naming the file,
never a traceback or "This is likely a bug", and the earlier import is left byte for byte. The
cases the importer accepts are imported (exit code 0) and write nothing outside ``--out``.

Left out of the audit's corpus: its 60 MiB valid state file (accepted, and only slow) and its
lemon cases, which are in ``tests/markets/lemon/test_import_hardening.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
from tests.markets.crash import agent_bazaar_fixture as fx

TOKENS = f"{fx.RUN1}_token_usage.json"
PROMPTS = "crash_agent_prompts.jsonl"


def _run(logs: Path) -> Path:
    return logs / fx.FOLDER / fx.RUN1


def _number(value: str):
    """state_t0's first ``cash`` replaced by ``value``."""
    return lambda logs, outside: edit(
        _run(logs) / "state_t0.json", lambda s: set_number(s, "cash", value)
    )


def _deep(name: str):
    return lambda logs, outside: edit(_run(logs) / name, deepen)


def _replace(name: str, how: str, target: str | bytes = ""):
    """``name`` of the run altered (``hardening.alter``); ``{outside}`` in a link's target: the
    folder outside the logs."""
    return lambda logs, outside: alter(
        _run(logs) / name, how, target.format(outside=outside) if how == "link" else target
    )


def _args_llm(value: str):
    return lambda logs, outside: edit(
        _run(logs) / "experiment_args.json",
        lambda s: json.dumps(dict(json.loads(s), llm=value.format(outside=outside))),
    )


def _rename(level: str, new: bytes):
    """The model folder (``model``) or the run folder (``run``) renamed (``*``: the old name)."""
    return lambda logs, outside: rename_bytes(
        _run(logs) if level == "run" else logs / fx.FOLDER, new
    )


def _run_outside(logs, outside):
    run = _run(logs)
    shutil.move(run, outside / run.name)
    run.symlink_to(outside / run.name)
    return run


def _state_inside(logs, outside):  # a link that stays in the logs folder: followed
    shared = logs / "shared"
    shared.mkdir()
    shutil.move(_run(logs) / "state_t1.json", shared / "state_t1.json")
    (_run(logs) / "state_t1.json").symlink_to(shared / "state_t1.json")


def _duplicate_run(logs, outside):
    copy = logs / f"{fx.FOLDER}_copy" / fx.RUN1
    shutil.copytree(_run(logs), copy)
    return copy


def _duplicate_step(logs, outside):  # named: the second of the two (listed by name)
    shutil.copy(_run(logs) / "state_t1.json", _run(logs) / "state_t01.json")
    return _run(logs) / "state_t1.json"


def _empty(logs, outside):
    shutil.rmtree(logs)
    logs.mkdir()
    return logs


def _non_utf8_state(logs, outside):
    path = _run(logs) / "state_t0.json"
    data = path.read_bytes()
    i = data.index(b'"', 10)
    path.write_bytes(data[: i + 1] + b"\xff\xfe" + data[i + 1 :])
    return path


GOOD = json.dumps(
    {
        "role": "firm",
        "agent": "competitive_1",
        "call": "price",
        "timestep": 0,
        "depth": 0,
        "system_prompt": "s",
        "user_prompt": "u",
        "response": "r",
    }
).encode()
HOSTILE_LINES = (
    b"\n".join(
        [
            GOOD,
            b"\xff\xfe garbage",
            GOOD.replace(b'"depth": 0', b'"depth": NaN'),
            b"[" * 100_000,
            GOOD.replace(b'"timestep": 0', b'"timestep": 1e400'),
            b"{}",
            GOOD,
        ]
    )
    + b"\n"
)

#: case -> (how the logs are altered: returns the file or folder the error must name; what the
#: error says, or None: the case is imported)
CASES = {
    # A1-A5: what the files hold
    "truncated_json": (
        _replace("state_t1.json", "bytes", '{"timestep": 1, "firms": [{"na'),
        "not valid JSON",
    ),
    "nan": (_number("NaN"), "Input should be a finite number"),
    "infinity": (_number("Infinity"), "Input should be a finite number"),
    "minus_infinity": (_number("-Infinity"), "Input should be a finite number"),
    "num_1e400": (_number("1e400"), "Input should be a finite number"),
    "num_minus_1e400": (_number("-1e400"), "Input should be a finite number"),
    "int_10e400": (_number("1" + "0" * 400), "firms.0.cash"),
    "num_1e308": (_number("1e308"), "firms.0.cash"),
    "deep_nesting_state": (_deep("state_t0.json"), "not valid JSON"),
    "deep_nesting_args": (_deep("experiment_args.json"), "not valid JSON"),
    "deep_nesting_tokens": (
        _replace(TOKENS, "bytes", '{"total": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        "not valid JSON",
    ),
    "tokens_nan": (
        _replace(TOKENS, "bytes", '{"input_tokens": NaN, "output_tokens": 1, "requests": 1}'),
        "NaN is not a JSON number",
    ),
    "tokens_1e400": (
        _replace(TOKENS, "bytes", '{"input_tokens": 1e400, "output_tokens": 1, "requests": 1}'),
        "input_tokens",
    ),
    "non_utf8_state": (_non_utf8_state, "not valid JSON"),
    # A6: sizes
    "huge_sparse_state_300MiB": (
        _replace("state_t1.json", "sparse"),
        "over the 64 MiB this importer reads",
    ),
    "huge_sparse_args_300MiB": (
        _replace("experiment_args.json", "sparse"),
        "over the 256 MiB this importer reads",
    ),
    "prompt_log_sparse_300MiB": (_replace(PROMPTS, "sparse"), "over the 256 MiB"),
    # A8-A14 (D2): what the files are
    "run_folder_link_outside": (_run_outside, "outside the source folder"),
    "state_link_etc_passwd": (
        _replace("state_t1.json", "link", "/etc/passwd"),
        "outside the source folder",
    ),
    "state_link_outside": (
        _replace("state_t1.json", "link", "{outside}/state.json"),
        "outside the source folder",
    ),
    "state_link_dev_zero": (
        _replace("state_t1.json", "link", "/dev/zero"),
        "is not a regular file (a link to /dev/zero, a character device)",
    ),
    "state_link_dev_urandom": (
        _replace("state_t1.json", "link", "/dev/urandom"),
        "is not a regular file (a link to /dev/urandom",
    ),
    "state_fifo": (_replace("state_t1.json", "fifo"), "is not a regular file (a FIFO)"),
    "state_folder": (_replace("state_t1.json", "folder"), "is a folder, not a file"),
    "state_broken_link": (
        _replace("state_t1.json", "link", "{outside}/nothing.json"),
        "which does not exist",
    ),
    "args_folder": (_replace("experiment_args.json", "folder"), "is a folder, not a file"),
    "args_fifo": (_replace("experiment_args.json", "fifo"), "is not a regular file (a FIFO)"),
    "tokens_link_dev_urandom": (_replace(TOKENS, "link", "/dev/urandom"), "is not a regular file"),
    "firm_prompts_link_dev_zero": (
        _replace("firm_attributes.json", "link", "/dev/zero"),
        "is not a regular file",
    ),
    "prompt_log_fifo": (_replace(PROMPTS, "fifo"), "is not a regular file (a FIFO)"),
    "state_link_inside": (_state_inside, None),
    # A15-A18 (D3, D8): names
    "llm_pathlike": (_args_llm("vendor/../../../../{outside}/x"), None),
    "llm_dotdot": (_args_llm("vendor/.."), "llm: Value error, model '..' is not a plain name"),
    "llm_html": (_args_llm("vendor/<script>alert(1)</script>"), "is not a plain name"),
    "llm_newline": (_args_llm("vendor/a\nb"), "is not a plain name"),
    "model_folder_html": (_rename("model", b"exp1_<img src=x onerror=alert(1)>"), None),
    "model_folder_ansi": (_rename("model", b"exp1_x\x1b[2J\x1b[31mRED"), None),
    "model_folder_dotdot": (_rename("model", b"exp1_.."), None),
    "model_folder_non_utf8": (_rename("model", b"*\xff\xfe"), "its name is not UTF-8 text"),
    "run_folder_non_utf8": (_rename("run", b"\xff*"), "its name is not UTF-8 text"),
    # A20-A22: duplicates and nothing
    "duplicate_run": (_duplicate_run, "holds the same run as"),
    "duplicate_state_step": (
        _duplicate_step,
        "a second state file of step 1, beside state_t01.json (remove one of the two)",
    ),
    "empty_logs_folder": (_empty, "holds no exp1_<model>/<run> folders"),
    # A23: a prompt log's unreadable lines are skipped and counted (its documented policy)
    "prompt_log_hostile_lines": (_replace(PROMPTS, "bytes", HOSTILE_LINES), None),
}


def _import(logs: Path, out: Path) -> tuple[int, str]:
    return run_cli(
        "marketarena.cli:app",
        ["import-agent-bazaar", str(logs), "--out", str(out), "--market", "crash"],
        timeout_s=120,
    )


@pytest.fixture(scope="module")
def earlier(tmp_path_factory):
    """A good import of the fixture (``--out``), and its every file's hash; its logs (the
    same logs imported again give the same bytes, ``import.json`` included) are beside it."""
    root = tmp_path_factory.mktemp("earlier")
    code, output = _import(fx.write(root / "logs-data"), root / "ab")
    assert code == 0, output
    return root / "ab", tree_digest(root / "ab")


def test_the_corpus_holds_the_audits_cases():
    audit = {
        "truncated_json",
        "nan",
        "infinity",
        "minus_infinity",
        "num_1e400",
        "num_minus_1e400",
        "int_10e400",
        "num_1e308",
        "deep_nesting_state",
        "deep_nesting_args",
        "deep_nesting_tokens",
        "tokens_nan",
        "tokens_1e400",
        "huge_sparse_state_300MiB",
        "huge_sparse_args_300MiB",
        "state_link_etc_passwd",
        "state_link_dev_zero",
        "state_link_dev_urandom",
        "state_fifo",
        "state_folder",
        "args_folder",
        "llm_pathlike",
        "llm_dotdot",
        "llm_html",
        "llm_newline",
        "model_folder_html",
        "model_folder_ansi",
        "model_folder_dotdot",
        "model_folder_non_utf8",
        "run_folder_non_utf8",
        "non_utf8_state",
        "duplicate_run",
        "duplicate_state_step",
        "empty_logs_folder",
        "prompt_log_hostile_lines",
        "prompt_log_sparse_300MiB",
        "run_folder_link_outside",
    }
    assert audit <= set(CASES) and len(CASES) >= 44


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_logs_are_refused_in_one_line_and_the_earlier_import_is_kept(
    case, earlier, tmp_path
):
    good, digest = earlier
    out, outside = tmp_path / "ab", tmp_path / "outside"
    shutil.copytree(good, out)
    logs = fx.write(tmp_path / "logs-data")
    outside.mkdir()
    shutil.copy(_run(logs) / "state_t1.json", outside / "state.json")  # a good file, elsewhere
    make, what = CASES[case]
    named = make(logs, outside)
    code, output = _import(logs, out)
    if what is None:  # imported: nothing written outside --out, nothing left beside it
        assert code == 0 and "error:" not in output, output
        assert [p.name for p in outside.iterdir()] == ["state.json"]
        assert not list(out.glob(".crash.*"))
        return
    assert_refused(code, output, shown(named), what)  # the file or folder, as it is named
    assert tree_digest(out) == digest  # the earlier import, byte for byte
    assert not list(out.glob(".crash.*"))  # no temporary folder left beside it


# ------------------------------------------------------------------ after a kill -9
def _stray(out: Path, pid: int) -> Path:
    from marketarena.core.files import owner_tag

    path = out / f".crash.{owner_tag(pid)}.0badf00d.tmp"
    (path / "data").mkdir(parents=True)
    return path


def test_the_next_import_removes_a_killed_imports_folder_but_not_a_running_ones(earlier, tmp_path):
    good, digest = earlier
    out = tmp_path / "ab"
    shutil.copytree(good, out)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    stale = _stray(out, dead.pid)
    dead.wait()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        running = _stray(out, sleeper.pid)
        code, output = _import(good.parent / "logs-data", out)
        assert code == 0, output
        assert not stale.exists() and running.is_dir()
        assert tree_digest(out) == digest
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_real_kill_during_an_import_leaves_a_folder_the_next_import_removes(earlier, tmp_path):
    good, digest = earlier
    out = tmp_path / "ab"
    shutil.copytree(good, out)
    logs = good.parent / "logs-data"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "marketarena.cli",
            "import-agent-bazaar",
            str(logs),
            "--out",
            str(out),
            "--market",
            "crash",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # the import to kill, once its temporary folder exists
        deadline = time.monotonic() + 120
        while not list(out.glob(".crash.*.tmp")) and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        proc.kill()
        proc.wait()
    left = list(out.glob(".crash.*.tmp"))
    assert left, "the import ended before it could be killed"
    assert tree_digest(out) == digest  # the kill left the earlier import whole
    code, output = _import(logs, out)
    assert code == 0, output
    assert not list(out.glob(".crash.*")) and tree_digest(out) == digest
