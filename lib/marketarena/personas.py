"""Buyer personas: tribe-templated texts (Market-Bench section 3.3 and appendix F).

Each tribe (thrifty, ethical, hype, quality by default) has phrase banks in
``templates/personas.yaml`` that carry its keywords. A persona is one combination of an opening
(age, occupation), a habit, a value statement and an aside, drawn without repetition with a seeded
generator, so the table is a pure function of ``params.personas``. Tribes not in the template file
(a user-defined tribe in params.yaml) are an error that names the tribe.

Output columns: persona_id, tribe, text, lambda (the tribe's slogan sensitivity), rho (patience),
weight (the tribe's share of buyers; metrics weight tribe similarities by it).
"""

from __future__ import annotations

from importlib import resources
from itertools import product

import numpy as np
import pandas as pd
import yaml

from marketarena.config import PersonasParams


def load_templates() -> dict:
    text = resources.files("marketarena").joinpath("templates/personas.yaml").read_text()
    return yaml.safe_load(text)


def _combinations(shared: dict, bank: dict) -> list[tuple]:
    return list(
        product(
            range(len(shared["opening"])),
            range(len(shared["age"])),
            range(len(shared["occupation"])),
            range(len(bank["habit"])),
            range(len(bank["value"])),
            range(len(bank["aside"])),
        )
    )


def generate_personas(params: PersonasParams) -> pd.DataFrame:
    templates = load_templates()
    shared = templates["shared"]
    rng = np.random.default_rng(params.seed)
    rows = []
    for tribe, spec in params.tribes.items():
        bank = templates["tribes"].get(tribe)
        if bank is None:
            raise ValueError(
                f"personas.tribes.{tribe}: no persona templates for this tribe "
                f"(templates exist for: {', '.join(templates['tribes'])})"
            )
        combos = _combinations(shared, bank)
        if params.per_tribe > len(combos):
            raise ValueError(
                f"personas.per_tribe: at most {len(combos)} distinct personas per tribe"
            )
        for n, idx in enumerate(rng.choice(len(combos), size=params.per_tribe, replace=False)):
            o, a, occ, h, v, s = combos[idx]
            age = shared["age"][a]
            opening = shared["opening"][o].format(
                age=age, occupation=shared["occupation"][occ], decade=age // 10 * 10
            )
            text = f"{opening} {bank['habit'][h]}. {bank['value'][v]}. {bank['aside'][s]}."
            rows.append(
                {
                    "persona_id": f"{tribe}-{n:03d}",
                    "tribe": tribe,
                    "text": text,
                    "lambda": spec.lam,
                    "rho": params.rho,
                    "weight": spec.weight,
                }
            )
    return pd.DataFrame(rows, columns=["persona_id", "tribe", "text", "lambda", "rho", "weight"])
