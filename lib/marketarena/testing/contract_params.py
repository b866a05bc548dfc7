"""The contract's check of a market's params at their extremes (``contract.py`` registers it).

Every numeric param of a market's model, pushed to the extremes the model allows (its declared
bound, or a huge value where it declares none): either validation refuses it naming the key, or
one episode plays (its reference computed first where the simulation reads one) without an
exception, without a numpy overflow on the way and without an infinity in any log table (inf - inf
then makes NaN). So a value cannot pass ``validate`` and then crash or write inf / NaN, and every
numeric field must carry a bound that says what the market can compute. Fields marked as sizes
(``core.params.size``: the work of an episode scales with them) must declare an upper bound; they
are played at their lower bound only. Post-processing keys do not reach the episodes.
"""

from __future__ import annotations

import copy
import types
from typing import Annotated, Union, get_args, get_origin

import numpy as np
import pandas as pd
from pydantic import BaseModel

from marketarena.config import ParamsError
from marketarena.core.registry import market_kind
from marketarena.pipeline import Paths, run_reference
from marketarena.simulate import load_inputs
from marketarena.testing.tiny import World, expect, play

HUGE_INT, HUGE_FLOAT = 10**30, 1e308


def _bounds(metadata) -> tuple:
    lo = hi = None
    for m in metadata:
        for name, side, strict in (
            ("ge", "lo", False),
            ("gt", "lo", True),
            ("le", "hi", False),
            ("lt", "hi", True),
        ):
            value = getattr(m, name, None)
            if value is not None:
                if side == "lo":
                    lo = (value, strict)
                else:
                    hi = (value, strict)
    return lo, hi


def _numeric(annotation) -> tuple[type | None, list]:
    """(int or float, constraint metadata) when ``annotation`` is a number (or a list / tuple /
    optional of numbers, whose items are tested), else (None, [])."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        kind, meta = _numeric(args[0])
        return kind, meta + list(args[1:]) + [
            m for a in args[1:] for m in getattr(a, "metadata", [])
        ]
    if origin in (Union, types.UnionType, list, tuple):
        for arg in args:
            kind, meta = _numeric(arg)
            if kind is not None:
                return kind, meta
        return None, []
    if annotation is int or annotation is float:
        return annotation, []
    return None, []


def numeric_leaves(model, value: dict, path=()):
    """(path, kind, lo, hi, size) of every numeric param reachable in ``value`` (a dump of
    ``model``); for lists the first item stands for all."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        if not path and key in getattr(model, "post_keys", ()) | {
            "runs",
            "shard_episodes",
            "roster",
        }:
            continue
        current = value.get(key)
        ann = field.annotation
        sub = _submodel(ann)
        if sub is not None:
            if (
                isinstance(current, dict)
                and current
                and all(isinstance(v, dict) for v in current.values())
                and not set(current) & set(sub.model_fields)
            ):
                first = next(iter(current))  # a mapping of name -> model (tiers, tribes)
                yield from numeric_leaves(sub, current[first], (*path, key, first))
            elif isinstance(current, dict):
                yield from numeric_leaves(sub, current, (*path, key))
            elif isinstance(current, list) and current:
                yield from numeric_leaves(sub, current[0], (*path, key, 0))
            continue
        kind, meta = _numeric(ann)
        if kind is None:
            continue
        lo, hi = _bounds(list(field.metadata) + meta)
        leaf = (*path, key)
        while isinstance(current, list):  # a list (of lists) of numbers: its first item
            leaf, current = (*leaf, 0), current[0] if current else None
        size = (
            bool((field.json_schema_extra or {}).get("size"))
            if isinstance(field.json_schema_extra, dict)
            else False
        )
        yield leaf, kind, lo, hi, size


def _submodel(annotation):
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


def extremes(kind, lo, hi):
    """The two ends a model allows: a declared bound (just inside a strict one), else huge."""

    def inside(bound, up):
        value, strict = bound
        if not strict:
            return value
        if kind is int:
            return value - 1 if up else value + 1
        return float(np.nextafter(value, -np.inf if up else np.inf))

    top = inside(hi, True) if hi is not None else (HUGE_INT if kind is int else HUGE_FLOAT)
    bottom = inside(lo, False) if lo is not None else (-HUGE_INT if kind is int else -HUGE_FLOAT)
    return [("upper", top), ("lower", bottom)]


def set_leaf(block: dict, leaf: tuple, value) -> dict:
    out = copy.deepcopy(block)
    node = out
    for k in leaf[:-1]:
        node = node[k]
    node[leaf[-1]] = value
    return out


def infinities(result, table) -> list[str]:
    """Log columns holding an infinity (an overflow; NaN is how the logs say "missing", e.g. the
    price of an order no firm could fill)."""
    problems = []
    for name, frame in {"agents": table, **result.log_tables()}.items():
        for col in frame.columns:
            values = frame[col]
            if values.dtype == object:
                values = pd.to_numeric(values, errors="coerce")
            if pd.api.types.is_float_dtype(values) and np.isinf(values.to_numpy()).any():
                problems.append(f"{name}.{col}: inf")
    return problems


def _names_key(exc: Exception, leaf: tuple) -> bool:
    return any(str(part) in str(exc) for part in leaf if isinstance(part, str))


def every_numeric_param_at_its_extremes(kind: str, w: World) -> None:
    """Each numeric param of the tiny instance at each end its model allows: refused naming the
    key, or one episode plays finite (module docstring). Every failure is listed."""
    rules = market_kind(kind).rules
    dumped = w.mp.model_dump(mode="json", by_alias=True)
    failures = []
    for leaf, number, lo, hi, size in numeric_leaves(rules.params_model, dumped):
        key = ".".join(map(str, leaf))
        for end, value in extremes(number, lo, hi):
            try:
                case = w.with_block(set_leaf(dumped, leaf, value))
            except ParamsError as exc:
                if not _names_key(exc, leaf):
                    failures.append(f"{key}={value!r}: refused without naming the key: {exc}")
                continue
            if size and end == "upper":
                if hi is None:
                    failures.append(f"{key}: a size without an upper bound")
                continue
            try:
                sub = w.paths.root / f"case-{key}-{end}"
                sub.mkdir()
                p2 = Paths(sub)
                p2.data.mkdir()
                w.copy_personas(p2.data)
                if rules.input_files(case.markets[kind], p2.data):
                    run_reference(kind, case, p2)
                _, r2 = load_inputs(kind, case, p2.data)
                with np.errstate(over="raise"):  # an overflow on the way counts, even if clipped
                    out, tab, _, _, _ = play(kind, case, r2)
            except ParamsError as exc:  # refused where it can be told: a reference not computable
                if not _names_key(exc, leaf):
                    failures.append(f"{key}={value!r}: refused without naming the key: {exc}")
                continue
            except Exception as exc:  # noqa: BLE001 - accepted by validate, then crashed
                failures.append(
                    f"{key}={value!r}: accepted, then {type(exc).__name__}: {str(exc)[:200]}"
                )
                continue
            bad = infinities(out, tab)
            if bad:
                failures.append(f"{key}={value!r}: accepted, then {', '.join(bad[:4])}")
    expect(not failures, "\n" + "\n".join(failures))
