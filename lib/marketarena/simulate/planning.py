"""What a run is before any episode plays: its inputs, its planned episodes with their
fingerprints, and their seating.

Planning (``MarketRules.plan``): each episode has an id, a run index, a seed and its seats. By
default episode ``r`` is ``ep-<r:04d>`` with seed ``SeedSequence([seed, r]).generate_state(1)[0]``,
so adding runs never changes earlier ones.

Fingerprint: a finished episode is reused only if it would be reproduced exactly. Its fingerprint
hashes the instance's params (all but ``runs``, ``roster`` and the post-processing keys: see
``MarketParams.episode_params``), the global sections the market ``uses``, the simulator's code, the
content of every input file, and, per episode, its id, run, seed, the roster entries it seats and
the resolved model specs behind its LLM seats (everything that changes an answer or its logged
cost: model name, endpoint, sampling, schema mode, re-asks, prices; not timeouts, concurrency or
retries). So raising ``runs`` only adds episodes, editing a roster entry replays only the episodes
it sits in, and changing the model behind an alias replays that alias's episodes.

Inputs: every input file is read whole and the market's resources are loaded (:func:`read_inputs`)
before the plan, so a truncated embeddings file fails before any episode is touched.
"""

from __future__ import annotations

import functools
import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marketarena.config import Params
from marketarena.core import logs
from marketarena.core.registry import market_kind
from marketarena.core.types import InputError
from marketarena.simulate.context import RunContext

if TYPE_CHECKING:  # pragma: no cover
    from marketarena.core.rules import EpisodeSpec
    from marketarena.core.seating import Seating

#: the package's folder (``lib/marketarena``): the simulator's code is named from there
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
#: the code every episode depends on besides its market's folder: change it and episodes replay
SIMULATOR_CODE = ("core", "agents", "llm", "config.py", "embeddings.py", "personas.py", "simulate")
#: model-spec fields that cannot change an answer or what is logged about it
NON_ANSWER_FIELDS = frozenset(
    {"alias", "timeout_s", "max_concurrency", "max_retries", "api_key_env"}
)


@functools.cache  # a metadata lookup: once per process, not once per episode
def package_version() -> str:
    """The installed marketarena's version (``0+unknown`` when it is not installed)."""
    try:
        return version("marketarena")
    except PackageNotFoundError:
        return "0+unknown"


#: the parts of a market's folder an episode does not run (its analysis and its sources of
#: published games: ``core.registry``): editing them re-plays no episode
NOT_PLAYED = frozenset({"analysis", "sources", "__pycache__"})


def code_paths(kind: str) -> list[Path]:
    """The files and folders of code an episode of market ``kind`` runs (those that exist): the
    simulator's, its market's folder and ``markets/_shared`` (what several markets' rules share),
    each but its ``analysis/`` and ``sources/``."""
    played = [
        p
        for folder in (PACKAGE_ROOT / "markets" / "_shared", market_kind(kind).folder)
        for p in sorted(folder.iterdir())
        if p.name not in NOT_PLAYED and p.name not in logs.NOT_CODE
    ]
    return [p for p in [*(PACKAGE_ROOT / p for p in SIMULATOR_CODE), *played] if p.exists()]


def code_hash(kind: str) -> str:
    """The content hash of :func:`code_paths`: part of every episode's fingerprint."""
    return logs.hash_files(code_paths(kind))


def shared_sections(uses: tuple[str, ...], params: Params) -> dict[str, Any]:
    """The global params (dotted keys ``uses``: ``MarketKind.uses``) as JSON, for the
    fingerprint."""
    out = {}
    for key in uses:
        value: Any = params
        for part in key.split("."):
            value = getattr(value, part)
        out[key] = (
            value.model_dump(mode="json", by_alias=True) if hasattr(value, "model_dump") else value
        )
    return out


def model_fingerprint(params: Params, alias: str) -> dict[str, Any]:
    """The fields of model ``alias``'s spec that can change an answer or its logged cost."""
    spec = params.models[alias].model_dump(mode="json")
    return {k: v for k, v in spec.items() if k not in NON_ANSWER_FIELDS}


def plan(run: RunContext, inputs: list[Path]) -> list[tuple[EpisodeSpec, logs.PlannedEpisode]]:
    """Every planned episode of the run's instance with its fingerprint (``inputs``: the input
    files it read, hashed into every fingerprint)."""
    rules, mp, params = run.rules, run.market, run.params
    common = logs.sha256_text(
        logs.canonical_json(
            {
                "market": mp.market,
                "params": mp.episode_params(),
                "shared": shared_sections(run.uses, params),
                "code": code_hash(mp.market),
                "inputs": logs.hash_files(inputs) if inputs else "",
            }
        )
    )
    planned = []
    for spec in rules.plan(mp):
        seats = [
            {
                "agent_id": s.agent_id,
                "role": s.role,
                "actor": s.actor_id,
                "harness": rules.harness_of(s.entry),
                "entry": s.entry.model_dump(mode="json", exclude={"player"}),
            }
            for s in spec.seats
        ]
        aliases = sorted({s.entry.model for s in spec.seats if s.entry.kind == "llm"})
        fp = logs.sha256_text(
            logs.canonical_json(
                {
                    "common": common,
                    "episode": spec.episode_id,
                    "run": spec.run,
                    "seed": spec.seed,
                    "seats": seats,
                    "setting": [list(kv) for kv in spec.setting],
                    "models": {a: model_fingerprint(params, a) for a in aliases},
                }
            )
        )
        planned.append(
            (spec, logs.PlannedEpisode(spec.episode_id, spec.run, spec.seed, fp, llm=bool(aliases)))
        )
    return planned


def checked_seating(
    run: RunContext, specs: list[EpisodeSpec] | None = None, source: str = ""
) -> Seating:
    """Every roster entry seated, in roles it can play (``core/seating.py``), or ``ParamsError``
    naming the key (after ``source``, the params file, when given). ``specs``: the planned
    episodes when at hand (``simulate``), else the seating is computed from the plan
    (``seating.of_plan``)."""
    from marketarena.config import ParamsError
    from marketarena.core import seating

    rules, mp = run.rules, run.market
    try:
        found = seating.of_plan(rules, mp) if specs is None else seating.seating(mp, specs)
        return seating.check(rules, mp, found, lambda name: _harness_roles(name, rules))
    except ValueError as exc:
        where = f"{source}: " if source else ""
        raise ParamsError(f"{where}markets.{run.instance}.{exc}") from None


def _harness_roles(name: str, rules: Any) -> frozenset[str] | None:
    """The roles LLM harness ``name`` can play (None: any): the harnesses are imported at the
    first LLM seat checked, never for a scripted instance."""
    from marketarena.agents.harnesses import harness_class

    return harness_class(name, rules).roles


def check_seating(
    instance: str, params: Params, specs: list[EpisodeSpec] | None = None, source: str = ""
) -> Seating:
    """:func:`checked_seating` of ``instance`` (``marketarena validate``, ``play``, tests).
    Returns the :class:`~marketarena.core.seating.Seating`."""
    return checked_seating(RunContext.of(instance, params), specs, source)


def build(
    instance: str, params: Params, run: int = 0, resources: Any = None, llm: Any = None
) -> tuple[Any, Any, Any, EpisodeSpec]:
    """Episode ``run`` of ``instance`` built exactly as ``simulate`` builds it: (market,
    agents, agents table, its ``EpisodeSpec``). ``resources``: what ``load_resources`` returns
    (tests and ``marketarena play`` pass their own); ``llm``: an ``LLMRuntime``."""
    context = RunContext.of(instance, params)
    spec = context.rules.episode(context.market, run)
    market, agents, table = context.rules.build_episode(context.market, resources, spec, llm=llm)
    return market, agents, table, spec


def check_input(path: Path) -> None:
    """Read an input file whole, so a truncated or corrupt one fails here (Parquet, JSON)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.read_table(path)
    elif path.suffix == ".json":
        json.loads(path.read_text(encoding="utf-8"))
    else:
        path.read_bytes()


def read_inputs(run: RunContext) -> tuple[list[Path], Any]:
    """Check and load what the run's episodes read: (the input files, the market's resources);
    ``InputError`` before anything is touched."""
    rules, mp, params = run.rules, run.market, run.params
    inputs = rules.input_files(mp, run.data_dir)
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        raise InputError(
            f"{run.instance}: missing input files {missing}; run the stages that "
            "write them first (dvc repro)"
        )
    shared = {key.split(".")[0]: getattr(params, key.split(".")[0]) for key in run.uses}
    try:
        for path in inputs:
            check_input(path)
        resources = rules.load_resources(mp, run.data_dir, shared)
    except Exception as exc:
        raise InputError(
            f"{run.instance}: cannot load its input files "
            f"({', '.join(map(str, inputs)) or 'none'}): {type(exc).__name__}: {exc}; "
            "no episode was touched"
        ) from exc
    return inputs, resources


def load_inputs(instance: str, params: Params, data_dir: Path) -> tuple[list[Path], Any]:
    """:func:`read_inputs` of ``instance``'s run in ``data_dir`` (``marketarena play``,
    ``estimate``, tests, benchmarks)."""
    return read_inputs(RunContext.of(instance, params, data_dir))
