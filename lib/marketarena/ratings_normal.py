"""The normal distribution of the ``trueskill`` package's default backend (``trueskill.backends``),
as scalars and with the same floating-point operations: its erfc approximation, erfcinv and ppf,
and from them :func:`draw_margin`, the draw margin that :mod:`marketarena.ratings` hands the
compiled kernel (``_trueskill_kernel.py``, whose cdf and pdf are the same backend's)."""

from __future__ import annotations

import math


def _erfc_scalar(x: float) -> float:
    z = abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    r = t * math.exp(
        -z * z
        - 1.26551223
        + t
        * (
            1.00002368
            + t
            * (
                0.37409196
                + t
                * (
                    0.09678418
                    + t
                    * (
                        -0.18628806
                        + t
                        * (
                            0.27886807
                            + t
                            * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))
                        )
                    )
                )
            )
        )
    )
    return 2.0 - r if x < 0 else r


def _erfcinv_scalar(y: float) -> float:
    if y >= 2:
        return -100.0
    elif y <= 0:
        return 100.0
    zero_point = y < 1
    if not zero_point:
        y = 2 - y
    t = math.sqrt(-2 * math.log(y / 2.0))
    x = -0.70711 * ((2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481)) - t)
    for _ in range(2):
        err = _erfc_scalar(x) - y
        x += err / (1.12837916709551257 * math.exp(-(x**2)) - x * err)
    return x if zero_point else -x


def _ppf_scalar(x: float) -> float:
    return 0 - 1 * math.sqrt(2) * _erfcinv_scalar(2 * x)


def draw_margin(draw_probability: float, beta: float, size: int = 2) -> float:
    """``trueskill.calc_draw_margin(draw_probability, size)`` for a performance spread ``beta``:
    2.2e-7 for probability 0."""
    return _ppf_scalar((draw_probability + 1) / 2.0) * math.sqrt(size) * beta
