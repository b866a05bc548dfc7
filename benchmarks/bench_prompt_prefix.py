"""How much of each market's LLM prompts repeats the seat's previous prompt (issue 47).

Providers bill the prompt tokens they serve from their prompt cache at a fraction of the input
price, and their cache holds prefixes: a prompt pays less the more of it repeats, from its first
token on, a prompt sent before. For every market of ``params.yaml`` (its default instance) with
one LLM seat added, the benchmark plays ``--sample`` of its episodes on the mock provider (the
estimate's dry run, ``estimate.py``) and prints, per market:

- the *prefix-repeat share*: the prompt tokens that repeat the previous request's prefix for the
  same seat, over all prompt tokens (``llm.prompt_cache.repeat_share``);
- the *cached share*: what a provider with OpenAI's automatic caching (prompts of 1,024 tokens
  and more, blocks of 128, any recent prompt's prefix: ``llm.prompt_cache.PrefixCache``) would serve
  from its cache;
- prompt tokens per call.

    .venv/bin/python benchmarks/bench_prompt_prefix.py [--sample 4] [--markets crash lemon]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import yaml

import marketarena  # noqa: F401 - first: pins numpy's CPU path (its docstring)
from marketarena.config import parse_params
from marketarena.estimate import estimate
from marketarena.pipeline import Paths, run_embed, run_personas, run_reference
from marketarena.simulate import load_inputs

ROOT = Path(__file__).resolve().parents[1]
#: the roster entry an LLM takes over in each market (None: added, an entrant or challenger)
SEAT = {
    "double_auction": None,
    "english_auction": None,
    "cournot": "myopic",
    "bertrand": "myopic",
    "crash": "myopic",
    "lemon": "naive",
    "supply_chain": "volume_s20",
}


def params_with_llm(kind: str, tmp: Path):
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    block = raw["markets"][kind]
    llm = {"name": "gpt", "kind": "llm", "model": "mock"}
    if SEAT[kind] is None:
        block["roster"].append(llm)
    else:
        block["roster"] = [
            {**llm, "name": SEAT[kind]} if e["name"] == SEAT[kind] else e for e in block["roster"]
        ]
    if kind == "double_auction":
        block["reference"]["games_per_distribution"] = 100  # the reference only feeds the metrics
    return parse_params(
        {
            "personas": raw["personas"],
            "embedding": {**raw["embedding"], "cache_dir": str(tmp / "emb")},
            "models": {"mock": {"model": "mock", "provider": "mock"}},
            "llm": {"cache_dir": str(tmp / "llm")},
            "markets": {kind: block},
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markets", nargs="*", default=list(SEAT))
    ap.add_argument("--sample", type=int, default=4, help="episodes played per market")
    args = ap.parse_args()
    print(f"{'market':16s} {'prefix-repeat':>13s} {'cached':>7s} {'tokens/call':>11s}")
    with tempfile.TemporaryDirectory(prefix="bench-prefix-") as tmp:
        paths = Paths(Path(tmp))
        paths.data.mkdir(parents=True, exist_ok=True)
        for kind in args.markets:
            params = params_with_llm(kind, Path(tmp))
            if kind == "supply_chain" and not paths.personas.exists():
                run_personas(params, paths)
                run_embed(params, paths)
            run_reference(kind, params, paths)
            _, resources = load_inputs(kind, params, paths.data)
            (m,) = estimate(kind, params, resources, sample=args.sample, reask_rate=0.0).models
            print(
                f"{kind:16s} {m.prefix_share:13.1%} {m.cached_prompt_tokens / m.prompt_tokens:7.1%}"
                f" {m.prompt_tokens / m.calls:11,.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
