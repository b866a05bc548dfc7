"""Agent Bazaar's published runs, as data: what the crash and lemon importers share.

Imported only by the two markets' sources (``crash/sources/agent_bazaar.py``,
``lemon/sources/agent_bazaar.py`` and the modules it splits into), never by their rules: it sits
in ``_shared`` because two markets read the same format (and, like all of ``_shared``, is part
of every played episode's code fingerprint, ``simulate/planning.py``).

The authors of Agent Bazaar (seed 001) published their LLM runs in their repository
(``github.com/sethkarten/AI-Bazaar``, branch ``Market-v1``, folder ``logs-data/``, MIT licence):

- ``exp1_<model>/<prefix>_stab_<S>_dlc<L>_seed<s>/``: crash runs
  (``markets/crash/sources/agent_bazaar.py``);
- ``exp2_<model>/<prefix>_k<K>_rep<r>_seed<s>[_base]/``: lemon runs
  (``markets/lemon/sources/agent_bazaar.py``);
- folders named ``(OLD) ...`` (superseded) and ``(gpt seller) ...`` (a variant with GPT sellers), and
  ``exp3_*`` (shocks), which neither importer reads: the import report lists them as left out.

A run folder holds ``state_t<N>.json`` for every step N it reached (written at the end of the
step), ``experiment_args.json`` (every argument of the run), ``firm_attributes.json`` (the firms'
system prompts), ``consumer_attributes.json``, ``<name>_token_usage.json`` (written when the run
ended, so missing when the process was killed) and, in some runs, the prompt log
(``crash_agent_prompts.jsonl`` / ``lemon_agent_prompts.jsonl``: every prompt and raw answer).
Files of 4 MiB or more may be missing from a repository snapshot (most prompt logs are): the
importers import what is there and the report says which runs lack what.

These are the authors' pre-release runs; they may differ from the paper's final ones, and every
page that shows them says so (each market's figures.yaml, ``sources``).

Every file is read through ``core.sources`` (regular files only, a link followed only within
the logs folder, sizes bounded by the bytes read). A model or run folder whose name is not UTF-8
text, or that is a link leading out of the logs folder, is refused naming it (the same in crash
and lemon); a model id of the arguments that makes no plain player name (``vendor/..``, markup,
a newline) is refused as a field of ``experiment_args.json``; two state files of one step
(``state_t1.json``, ``state_t01.json``) are refused naming both.

What is here: finding the runs (:func:`discover`), the run's arguments (:class:`RunArgs`), the
player name of a model (:func:`player_of`), reading state files strictly and fast
(:func:`read_states`: pydantic models validated straight from the JSON bytes, so a NaN, a
missing field or a truncated file is one error naming the file), the token usage, the prompt
log as our ``llm_messages`` table (:func:`prompt_messages`), and the driver that imports every run
in worker processes and writes them in order (:func:`import_runs`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, field_validator

from marketarena.core.sources import (
    MAX_FILE_BYTES,
    SourceError,
    check_inside,
    plain_name,
    read_bytes,
    read_json,
    shown,
    utf8_name,
)

#: which experiment folder each market reads, and its run folders' names
EXPERIMENT = {"crash": "exp1", "lemon": "exp2"}
RUN_NAME = {
    "crash": re.compile(
        r"^.+_stab_(?P<stabilizing>[0-9]{1,3})_dlc(?P<discovery_limit>[0-9]{1,3})"
        r"_seed(?P<seed>[0-9]{1,9})$"
    ),
    "lemon": re.compile(
        r"^.+_k(?P<sybil>[0-9]{1,3})_rep(?P<reputation_visible>[01])"
        r"_seed(?P<seed>[0-9]{1,9})(?P<base>_base)?$"
    ),
}  # [0-9], not \d: \d matches any Unicode digit, and int() reads "٨" as 8
STATE = re.compile(r"^state_t([0-9]{1,6})\.json$")
#: a state file larger than this is refused (the largest published: 1.2 MiB)
MAX_STATE_BYTES = 64 * 2**20
#: model ids the authors spelled two ways, to one player name
ALIASES = {"claude-sonnet-4-6": "claude-sonnet-4.6"}
#: characters of a prompt or answer kept in ``llm_messages`` (as our own runs log them)
TEXT_MAX_CHARS = 20_000

S = TypeVar("S", bound=BaseModel)


def player_of(model_id: str) -> str:
    """A model id of the authors' args (``anthropic/claude-sonnet-4-6``) as a player name: the part
    after the provider, the spellings of one model made one (:data:`ALIASES`), a plain name."""
    name = str(model_id).rsplit("/", 1)[-1].strip()
    return plain_name(ALIASES.get(name, name), "model")


class RunArgs(BaseModel):
    """The arguments of a run the importers use (``experiment_args.json``; the rest is ignored).
    Counts are bounded before anything of their size is built."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    llm: str = Field(min_length=1, max_length=200)
    buyer_llm: str | None = Field(default=None, max_length=200)
    seller_llm: str | None = Field(default=None, max_length=200)
    seed: int = Field(ge=0, le=2**32)
    max_timesteps: int = Field(ge=1, le=100_000)
    discovery_limit_consumers: int = Field(default=5, ge=0, le=1000)
    num_firms: int | None = Field(default=None, ge=1, le=1000)
    num_consumers: int | None = Field(default=None, ge=1, le=100_000)
    num_stabilizing_firms: int = Field(default=0, ge=0, le=1000)
    num_sellers: int | None = Field(default=None, ge=1, le=1000)
    num_buyers: int | None = Field(default=None, ge=1, le=1000)
    sybil_cluster_size: int = Field(default=0, ge=0, le=1000)
    no_buyer_rep: bool = False
    lemon_base_buyer: bool = False
    prompt_algo: str | None = Field(default=None, max_length=50)
    max_tokens: int | None = Field(default=None, ge=1, le=10_000_000)
    firm_initial_cash: float = Field(default=500.0, ge=0, le=1e12)
    overhead_costs: float = Field(default=14.0, ge=0, le=1e12)
    firm_tax_rate: float = Field(default=0.05, ge=0, lt=1)
    poisson_demand_lambda: float | None = Field(default=None, ge=0, le=1e6)
    reputation_initial: float | None = Field(default=None, ge=0, le=1)
    sybil_rho_min: float = Field(default=0.3, ge=0, le=1)
    log_crash_firm_prompts: bool = False
    log_buyer_prompts: bool = False
    log_seller_prompts: bool = False

    @field_validator("llm", "buyer_llm", "seller_llm")
    @classmethod
    def _player(cls, v: str | None) -> str | None:
        if v:  # a model id becomes a player name: refused here, naming the file, if it cannot
            player_of(v)
        return v


class TokenUsage(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    input_tokens: int = Field(ge=0, le=10**13)
    output_tokens: int = Field(ge=0, le=10**13)
    requests: int = Field(ge=0, le=10**10)


@dataclass
class Run:
    """One run folder: where it is, its cell (from its folder name) and its arguments."""

    path: Path
    market: str
    model_folder: str
    cell: dict[str, Any]
    args: RunArgs | None = None
    lacks: list[str] = field(default_factory=list)  # files it should have and has not
    root: Path | None = None  # the logs folder: a link in the run is followed only within it

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def where(self) -> str:
        return f"{self.model_folder}/{self.name}"


def _listdir(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError as exc:
        raise SourceError(folder, f"cannot be listed ({exc.strerror or exc})") from None


def discover(root: Path, market: str) -> tuple[list[Run], list[dict[str, str]]]:
    """Every run folder of ``market`` under ``root`` (the ``logs-data`` folder), sorted by model
    folder and name, and what was left out, with why (a variant or another experiment's folder,
    a run folder whose name is not the experiment's). A ``root`` that holds no run of the
    market's experiment is a :class:`SourceError` saying what it expected."""
    root = Path(root)
    if not root.is_dir():
        raise SourceError(
            root, "not a folder (the logs-data folder of sethkarten/AI-Bazaar, branch Market-v1)"
        )
    experiment, pattern = EXPERIMENT[market], RUN_NAME[market]
    runs, left_out, others = [], [], {}
    for folder in _listdir(root):
        if not (root / folder).is_dir():
            continue
        if not folder.startswith(f"{experiment}_"):
            folder = shown(folder)  # a name the report records: its bad bytes escaped
            bare = folder.split(") ", 1)[-1]
            if bare.startswith(f"{experiment}_"):  # "(OLD) exp2_...", "(gpt seller) exp2_..."
                why = (
                    "superseded by the authors"
                    if folder.startswith("(OLD)")
                    else "a variant of the experiment, not its grid"
                )
                left_out.append({"folder": folder, "why": why})
            elif re.match(r"^exp\d+_", bare):
                others[bare.split("_", 1)[0]] = others.get(bare.split("_", 1)[0], 0) + 1
            continue
        _usable(root / folder, root)
        for name in _listdir(root / folder):
            path = root / folder / name
            if not path.is_dir():
                continue
            m = pattern.match(name)
            if m is None:
                left_out.append(
                    {"folder": shown(f"{folder}/{name}"), "why": f"not a {market} run folder name"}
                )
                continue
            _usable(path, root)
            cell = {
                k: (v == "1" if k == "reputation_visible" else bool(v) if k == "base" else int(v))
                for k, v in m.groupdict().items()
                if k != "base" or v
            }
            runs.append(Run(path, market, folder, cell, root=root))
    if not runs:
        raise SourceError(
            root,
            f"holds no {experiment}_<model>/<run> folders of {market} runs "
            "(the logs-data folder of sethkarten/AI-Bazaar, branch Market-v1)",
        )
    left_out += [
        {
            "folder": f"{exp}_* ({n} folders)",
            "why": "another experiment"
            + (" (the other market's)" if exp in EXPERIMENT.values() else ""),
        }
        for exp, n in sorted(others.items())
    ]
    return runs, left_out


def _usable(folder: Path, root: Path) -> None:
    """A model or run folder to import: its name UTF-8 text (recorded in the tables), not a link
    out of the logs folder; else :class:`SourceError` naming it."""
    utf8_name(folder)
    check_inside(folder, root)


def read_model(
    model: type[S], path: Path, max_bytes: int = MAX_FILE_BYTES, root: Path | None = None
) -> S:
    """``path`` validated as ``model`` straight from its JSON bytes (strict: NaN, Infinity, a
    missing or mistyped field, a truncated file are refused), or :class:`SourceError` naming the
    file and the key. Read by ``core.sources.read_bytes`` (``root``: the logs folder)."""
    data = read_bytes(path, max_bytes, root)
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"].startswith("json"):
            raise SourceError(path, f"not valid JSON: {err['msg']}") from None
        value = err.get("input")
        got = "" if isinstance(value, (dict, list)) else f" (got {str(value)[:60]!r})"
        raise SourceError(path, f"{loc + ': ' if loc else ''}{err['msg']}{got}") from None


def present(path: Path) -> bool:
    """Whether ``path`` is there at all (a FIFO, a folder or a broken link too: reading it then
    says what it is, rather than taking it for absent)."""
    return os.path.lexists(path)


def read_args(run: Run, model: type[S] = RunArgs) -> S:
    """The run's ``experiment_args.json`` as ``model`` (:class:`RunArgs` or a market's own)."""
    path = run.path / "experiment_args.json"
    if not present(path):
        raise SourceError(path, "missing: every run folder has its experiment_args.json")
    return read_model(model, path, root=run.root)


def state_files(run: Run) -> list[tuple[int, Path]]:
    """(step, path) of every ``state_t<N>.json`` of the run, by step; two files of one step
    (``state_t1.json``, ``state_t01.json``) are refused, naming both."""
    found: dict[int, Path] = {}
    for name in _listdir(run.path):
        m = STATE.match(name)
        if m:
            step = int(m.group(1))
            if step in found:
                raise SourceError(
                    run.path / name,
                    f"a second state file of step {step}, beside "
                    f"{found[step].name} (remove one of the two)",
                )
            found[step] = run.path / name
    return sorted(found.items())


def read_states(run: Run, model: type[S]) -> list[tuple[int, S]]:
    """The run's states from step 0 on, as long as they follow each other (a missing step ends
    them: what follows is reported, not read); each state's ``timestep`` must be its file's."""
    states = []
    for expected, (t, path) in enumerate(state_files(run)):
        if t != expected:
            run.lacks.append(f"state_t{expected}.json (the states after it are not read)")
            break
        state = read_model(model, path, MAX_STATE_BYTES, run.root)
        if getattr(state, "timestep", t) != t:
            raise SourceError(path, f"timestep {state.timestep} in the file of step {t}")
        states.append((t, state))
    return states


def read_tokens(run: Run) -> dict[str, TokenUsage] | None:
    """The run's token usage, by role (``total`` for a crash run; ``total``, ``buyers``,
    ``sellers`` for lemon), or None when the file is missing (a killed process)."""
    files = [p for p in _listdir(run.path) if p.endswith("_token_usage.json")]
    if not files:
        run.lacks.append("token usage (the process did not end normally)")
        return None
    raw = read_json(run.path / files[0], root=run.root)  # bounded; regular files only
    if not isinstance(raw, dict):
        raise SourceError(run.path / files[0], "not a JSON object")
    roles = raw if "total" in raw else {"total": raw}
    out = {}
    for role, usage in roles.items():
        try:
            out[str(role)] = TokenUsage.model_validate(usage)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise SourceError(
                run.path / files[0], f"{role}.{'.'.join(map(str, err['loc']))}: {err['msg']}"
            ) from None
    return out


class PromptRecord(BaseModel):
    """One line of a prompt log: one request of one agent and its raw answer."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    role: str = Field(max_length=100)
    agent: str = Field(max_length=200)
    call: str = Field(max_length=100)
    timestep: int = Field(ge=0, le=100_000)
    depth: int = Field(default=0, ge=0, le=10_000)
    system_prompt: str = ""
    user_prompt: str = ""
    response: str | None = ""


def prompt_records(run: Run, filename: str, wanted: bool) -> tuple[list[PromptRecord], int]:
    """The prompt log's records and the number of lines that could not be read. The authors'
    logs were appended to by several threads at once, and a few lines are interleaved: such a
    line is skipped and counted (the import report names the run and the count), not fatal, as
    a prompt log is evidence beside the states, not the states. ``wanted``: the run's args say
    it logged prompts; the log's absence is then reported."""
    path = run.path / filename
    if not present(path):
        if wanted:
            run.lacks.append(
                f"{filename} (logged by the run, absent here: files of 4 MiB or "
                "more may be missing from a snapshot)"
            )
        return [], 0
    records, bad = [], 0
    for line in read_bytes(path, root=run.root).split(b"\n"):
        if not line.strip():
            continue
        try:
            records.append(PromptRecord.model_validate_json(line))
        except ValidationError:
            bad += 1
    if bad:
        run.lacks.append(f"{bad} unreadable line(s) of {filename} (interleaved appends)")
    return records, bad


def capped(text: str | None) -> str:
    """A prompt or answer as kept in our tables: at most :data:`TEXT_MAX_CHARS` characters, a cut
    marked (the viewer escapes it; a prompt of ours never quotes it)."""
    text = text or ""
    return text if len(text) <= TEXT_MAX_CHARS else text[:TEXT_MAX_CHARS] + " [cut]"


class FirmAttribute(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(max_length=128)
    system_prompt: str = ""


class FirmAttributes(RootModel[list[FirmAttribute]]):
    """``firm_attributes.json``: the sellers (crash firms, lemon sellers) at construction."""


def imported_records(
    records: list[PromptRecord], steps: int, seats: set[str]
) -> list[PromptRecord]:
    """The prompt log's records of what was imported: the first ``steps`` steps (a run cut or
    stopped early keeps no prompt of a day it does not have) and agents with a seat."""
    return [r for r in records if r.timestep < steps and r.agent in seats]


def prompt_messages(
    records: list[PromptRecord],
    phase_of: Callable[[PromptRecord], str],
    round_of: Callable[[PromptRecord], int] | None = None,
) -> pd.DataFrame:
    """The prompt log (:func:`imported_records`) as our ``llm_messages`` table (``core.runner``):
    one row per request, keyed by (step = the log's timestep, round ``round_of(record)`` (default
    0: a market with one decision point a step), phase ``phase_of(record)``, the agent's id, the
    same in our tables, attempt 0), ``call`` numbering the requests of one decision, ``reask`` =
    the log's retry depth, ``messages`` the system and user prompts, ``answer`` the raw answer."""
    from marketarena.core.runner import LLM_MESSAGE_COLUMNS

    rows, calls = [], {}
    for r in records:
        phase = phase_of(r)
        key = (r.timestep, phase, r.agent)
        call = calls[key] = calls.get(key, -1) + (r.depth == 0)
        messages = json.dumps(
            [
                {"role": "system", "content": capped(r.system_prompt)},
                {"role": "user", "content": capped(r.user_prompt)},
            ],
            ensure_ascii=False,
        )
        rows.append(
            (
                r.timestep,
                round_of(r) if round_of else 0,
                phase,
                r.agent,
                0,
                r.call,
                max(call, 0),
                r.depth,
                messages,
                capped(r.response),
                "",
            )
        )
    frame = pd.DataFrame(rows, columns=LLM_MESSAGE_COLUMNS)
    return frame.astype(
        {"step": "int64", "round": "int64", "attempt": "int64", "call": "int64", "reask": "int64"}
    )


def prompt_calls(messages: pd.DataFrame, model: str) -> pd.DataFrame:
    """Our ``llm_calls`` table for :func:`prompt_messages`' rows: one row per call of a decision
    (what the viewer lists a decision's prompts and answers by), purpose ``act``, the run's
    ``model``, ``attempts`` = 1 + the deepest retry of the call; the logs hold no token counts
    per request (NaN) and no hash; ``valid`` True (a market that re-parses the answers sets it)."""
    from marketarena.core.runner import CALL_KEYS, LLM_CALL_COLUMNS

    if messages.empty:
        return pd.DataFrame(columns=LLM_CALL_COLUMNS)
    calls = (
        messages.groupby([*CALL_KEYS, "call"], sort=False)["reask"]
        .max()
        .reset_index()
        .sort_values([*CALL_KEYS, "call"], kind="stable")
    )
    return pd.DataFrame(
        {
            **{k: calls[k].to_numpy() for k in CALL_KEYS},
            "purpose": "act",
            "model": model,
            "request_hash": "",
            "prompt_tokens": float("nan"),
            "completion_tokens": float("nan"),
            "attempts": calls["reask"].to_numpy() + 1,
            "valid": True,
        },
        columns=LLM_CALL_COLUMNS,
    )


def import_runs(
    runs: list[Run],
    convert: Callable[[Run], tuple[str, dict, dict, dict] | None],
    out: Path,
    workers: int,
) -> list[dict]:
    """Convert every run (``convert(run)`` -> episode id, tables, meta, report row; None: nothing
    to import, with its report row in ``run.lacks``) and write it into ``out`` as an episode
    folder (``core.logs.write_episode``; run ``k`` of ``runs`` gets run index ``k``), in
    ``workers`` processes that end with this call (``core.lifetime.pool_map``): each converts and
    writes its own runs, so no table crosses a process boundary. Returns the report rows, one per
    run, in run order; two runs of one episode id are an error (the import is discarded)."""
    from marketarena.core.lifetime import pool_map

    numbered = list(enumerate(runs))
    chunks = [numbered[i::workers] for i in range(max(1, workers))]  # a few big jobs
    converted = pool_map(
        _convert_all,
        [convert] * len(chunks),
        chunks,
        [Path(out)] * len(chunks),
        workers=workers,
        start_method="fork",
    )
    rows = [row for _, row in sorted((r for part in converted for r in part), key=lambda kr: kr[0])]
    first: dict[str, str] = {}
    for row, run in zip(rows, runs):
        if "episode_id" not in row:
            continue
        held = first.setdefault(row["episode_id"], run.where)
        if held != run.where:
            raise SourceError(
                run.path,
                f"holds the same run as {held} (episode "
                f"{row['episode_id']}: one model, cell and seed): remove one of "
                "the two",
            )
    return rows


def report(rows: list[dict], left_out: list[dict]) -> dict:
    """The import report (``core.sources.REPORT``): runs found, imported and lacking something, by
    model; what each run lacks; what was left out and why."""
    imported = [r for r in rows if "episode_id" in r]
    by_model: dict[str, dict[str, int]] = {}
    for r in imported:
        m = by_model.setdefault(r["model"], {"runs": 0})
        m["runs"] += 1
        m[r.get("status", "imported")] = m.get(r.get("status", "imported"), 0) + 1
    return {
        "format": "agent_bazaar",
        "runs_found": len(rows),
        "runs_imported": len(imported),
        "runs_without_states": len(rows) - len(imported),
        "runs_lacking_something": sum(bool(r["lacks"]) for r in rows),
        "models": len(by_model),
        "by_model": by_model,
        "lacks": {r["run"]: r["lacks"] for r in rows if r["lacks"]},
        "left_out": left_out,
        "note": "the authors' pre-release runs (AI-Bazaar, branch Market-v1); they may differ "
        "from the paper's final ones",
    }


def _convert_all(convert, runs: list[tuple[int, Run]], out: Path) -> list[tuple[int, dict]]:
    from marketarena.core import logs

    done = []
    for k, run in runs:
        result = convert(run)
        row = {"run": run.where, **run.cell, "lacks": list(run.lacks)}
        if result is None:
            done.append((k, row))
            continue
        episode_id, tables, meta, extra = result
        plan = logs.PlannedEpisode(episode_id, k, 0, logs.sha256_text(f"agent_bazaar:{episode_id}"))
        logs.write_episode(out, plan, tables, meta)
        done.append((k, {**row, "episode_id": episode_id, **extra, "lacks": list(run.lacks)}))
    return done


def check_their_code(mp: Any, root: Path, check: Any) -> None:
    """A joint instance's entries on their agent's code (the ``agent_bazaar`` harness) find it in
    their folder and it renders a prompt (``check``: lemon's buyer, crash's firm); else one
    ``SourceError`` naming the file and the params key to set."""
    from marketarena.core.sources import check_joint_entries, publisher_root

    check_joint_entries(
        mp,
        root,
        "agent_bazaar",
        "code",
        publisher_root(mp.source.model_dump()),
        check,
        (SourceError,),
        "the root of your copy of sethkarten/AI-Bazaar, branch Market-v1",
    )


def published_episodes(setting: pd.DataFrame, column: str) -> frozenset[str] | None:
    """The imported runs' episodes of an instance's ``setting`` table: those whose ``column`` (a
    field only an imported run fills: lemon's ``run``, crash's ``status``) is set; None when every
    episode is one (an instance that is not joint)."""
    if column not in setting:
        return frozenset()
    mask = setting[column].notna() & (setting[column].astype(str) != "")
    return None if mask.all() else frozenset(setting.loc[mask, "episode_id"])
