"""Economics of the logit Bertrand market (DESIGN.md section 7.3): demand, Nash, monopoly, collusion index.

Demand
------
``n`` firms each post a price for each of ``M`` products; every product is its own market (the
seed's appendix C: "both product types ... rely on the same type of demand function but are
independent of each other"). In one product market, firm ``i`` sells (Calvano et al. 2020, as
written by Fish et al. 2024 and DESIGN.md)::

    q_i = beta * exp((a_i - p_i / alpha) / mu) / (sum_j exp((a_j - p_j / alpha) / mu) + exp(a_0 / mu))

computed in log space (log-sum-exp over the firms and the outside option), so no exponent overflows
whatever the prices. Profit is ``(p_i - c_i) * q_i`` with ``c_i`` the marginal cost *in price units*.
Arrays are ``(..., n, M)``: firms on axis -2, products on the last axis, leading axes broadcast.
:func:`logit_demand` is the bare formula for any layout (firms on ``axis``).

Presets
-------
:meth:`BertrandConfig.calvano` (Calvano et al. 2020, Fish et al. 2024): a = 2, c = 1, mu = 1/4,
a_0 = 0, beta = 100, two firms, one product, alpha in {1, 3.2, 10} in Fish et al. (any alpha > 0 is
accepted). Fish et al. use alpha as a currency unit: demand depends on ``p / alpha`` and the marginal
cost is ``alpha * c``, so every price (Nash, monopoly, cost) scales by alpha, quantities do not, and
profits scale by alpha. The preset therefore stores ``costs = alpha * 1``. At alpha = 1 the Nash price
is 1.4729 and the monopoly (joint-profit) price 1.9249 (Calvano et al.: 1.473 and 1.925).

:meth:`BertrandConfig.startup` (seed 003, appendix C): two firms, two products, marginal cost 100 ->
80 -> 50 per product through two investments of 10,000 each (``cost_ladder``, ``investment_costs``),
initial funds 8,500. The seed's text says the authors "tuned the logit demand function's [a_i] to be
75" (the symbol is lost in our copy, but a_i is the only parameter for which "firms cannot price for
the whole market until they price below $75" makes sense: at p = 75 a firm's utility
``(a_i - p/alpha)/mu`` equals the outside option's), "tuned [mu] ... to soften the demand function" and
"chose to scale quantity size to a more realistic range" (beta) without giving the numbers. We take
them from the authors' released code (github.com/smojha/collusive-llm-agents, ``bertrand.ipynb``):
a_i = 75, a_0 = 0, mu = 8, alpha = 1, beta = 1000. Chosen here: products identical (same a, a_0, mu,
beta); ``costs`` follow each firm's investment levels (all at level 0, i.e. 100, by default;
:meth:`BertrandConfig.with_cost_levels`). Two rules of the authors' simulator belong to the later
market module, not here: a price below marginal cost sells nothing (it is treated as an infinite
price), and investments are paid from accumulated profit. (Their code also passes the competitor's
*investment count* where product B's competitor cost is expected; we do not reproduce that.)

References
----------
* :func:`best_response`: in one product market, firm ``i``'s profit is quasi-concave in its own price
  and its first-order condition is ``(p_i - c_i) (1 - s_i) = alpha * mu`` (``s_i = q_i / beta``),
  whose left side increases strictly in ``p_i`` for ``p_i >= c_i``: a unique root, found with Brent's
  method on an exact bracket.
* :func:`bertrand_nash`: all firms' first-order conditions solved together with
  ``scipy.optimize.root`` from ``p = c + alpha * mu``, then checked: every price must be a best
  response to the others within ``tol`` (relative); if not, Gauss-Seidel best-response sweeps
  continue, and failing that :class:`RuntimeError` names the config and the gap.
* :func:`monopoly_prices`: joint profit of all firms in a product market. Its first-order conditions
  give the same markup on every product, ``p_i - c_i = m`` with ``m * s_0(m) = alpha * mu`` (``s_0``
  the outside option's share); the left side increases strictly in ``m``, so the root (Brent) is the
  unique stationary point and the maximum.
* :func:`collusion_index`: ``clip((p_bar - p_N) / (p_M - p_N), 0, 1)``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "BertrandConfig",
    "CALVANO_ALPHAS",
    "logit_demand",
    "quantities",
    "profits",
    "best_response",
    "bertrand_nash",
    "monopoly_prices",
    "collusion_index",
    "reference_summary",
]

CALVANO_ALPHAS: tuple[float, ...] = (1.0, 3.2, 10.0)
"""The price scalings of Fish et al. (2024)."""

Matrix = tuple[tuple[float, ...], ...]


class BertrandConfig(BaseModel):
    """A logit Bertrand market: ``n`` firms (rows of ``costs``) x ``M`` independent products.

    ``a`` is a scalar or an ``n x M`` table of quality indices; ``costs`` are marginal costs in price
    units. ``cost_ladder``, ``investment_costs`` and ``initial_funds`` describe the start-up market's
    investments (``None`` elsewhere); they do not enter the demand.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    costs: Matrix
    a: float | Matrix = 2.0
    a0: float = 0.0
    mu: float = 0.25
    alpha: float = 1.0
    beta: float = 100.0
    cost_ladder: tuple[float, ...] | None = None
    investment_costs: tuple[float, ...] | None = None
    initial_funds: float | None = None

    @model_validator(mode="after")
    def _check(self) -> BertrandConfig:
        if len(self.costs) == 0 or len(self.costs[0]) == 0:
            raise ValueError("costs must have at least one firm and one product")
        if any(len(row) != len(self.costs[0]) for row in self.costs):
            raise ValueError("costs must be a rectangular n_firms x n_products table")
        if not isinstance(self.a, float | int) and (
            len(self.a) != len(self.costs) or any(len(r) != len(self.costs[0]) for r in self.a)
        ):
            raise ValueError("a must be a scalar or have the shape of costs (n_firms x n_products)")
        values = [*np.ravel(self.costs), *np.ravel(self.a), self.a0]
        if not all(math.isfinite(v) for v in values):
            raise ValueError("costs, a and a0 must be finite")
        for name in ("mu", "alpha", "beta"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be finite and > 0, got {v}")
        if (self.cost_ladder is None) != (self.investment_costs is None):
            raise ValueError("cost_ladder and investment_costs go together")
        if self.cost_ladder is not None and len(self.investment_costs) != len(self.cost_ladder) - 1:
            raise ValueError("investment_costs needs one entry per step of cost_ladder")
        return self

    # ---- presets -------------------------------------------------------------------------------

    @classmethod
    def calvano(cls, alpha: float = 1.0, n_firms: int = 2) -> BertrandConfig:
        """Calvano et al. (2020) / Fish et al. (2024): a = 2, c = alpha * 1, mu = 1/4, a_0 = 0, beta = 100."""
        if not (math.isfinite(alpha) and alpha > 0):
            raise ValueError(f"alpha must be finite and > 0, got {alpha}")
        return cls(
            costs=tuple((float(alpha),) for _ in range(n_firms)),
            a=2.0,
            a0=0.0,
            mu=0.25,
            alpha=float(alpha),
            beta=100.0,
        )

    @classmethod
    def startup(cls, cost_levels: tuple[tuple[int, ...], ...] = ((0, 0), (0, 0))) -> BertrandConfig:
        """The seed's start-up market (appendix C), firms at the given investment levels (0, 1, 2).

        a_i = 75, a_0 = 0, mu = 8, alpha = 1, beta = 1000 (authors' code, see the module docstring);
        marginal cost 100 / 80 / 50 at level 0 / 1 / 2; each level costs 10,000; funds 8,500.
        """
        base = cls(
            costs=((100.0, 100.0), (100.0, 100.0)),
            a=75.0,
            a0=0.0,
            mu=8.0,
            alpha=1.0,
            beta=1000.0,
            cost_ladder=(100.0, 80.0, 50.0),
            investment_costs=(10_000.0, 10_000.0),
            initial_funds=8_500.0,
        )
        return base.with_cost_levels(cost_levels)

    def with_cost_levels(self, cost_levels: ArrayLike) -> BertrandConfig:
        """A copy whose ``costs[i][m] = cost_ladder[cost_levels[i][m]]``."""
        if self.cost_ladder is None:
            raise ValueError("this config has no cost_ladder (only the start-up preset has one)")
        levels = np.asarray(cost_levels)
        if levels.shape != (self.n_firms, self.n_products):
            raise ValueError(
                f"cost_levels must have shape {(self.n_firms, self.n_products)}, got {levels.shape}"
            )
        if (
            not np.issubdtype(levels.dtype, np.integer)
            or levels.min() < 0
            or levels.max() >= len(self.cost_ladder)
        ):
            raise ValueError(f"cost levels must be integers in 0..{len(self.cost_ladder) - 1}")
        ladder = np.asarray(self.cost_ladder)
        costs = tuple(tuple(float(x) for x in row) for row in ladder[levels])
        return self.model_copy(update={"costs": costs})

    # ---- shapes --------------------------------------------------------------------------------

    @property
    def n_firms(self) -> int:
        return len(self.costs)

    @property
    def n_products(self) -> int:
        return len(self.costs[0])

    @property
    def cost_matrix(self) -> NDArray[np.float64]:
        return np.asarray(self.costs, dtype=float)

    @property
    def a_matrix(self) -> NDArray[np.float64]:
        return np.broadcast_to(
            np.asarray(self.a, dtype=float), (self.n_firms, self.n_products)
        ).copy()


# --------------------------------------------------------------------------------------------------
# demand and profit
# --------------------------------------------------------------------------------------------------


def _logsumexp(x, axis=None):
    """scipy's ``logsumexp``, imported at the first call: validating an instance's params reads
    this module (its ``BertrandConfig``), and needs no scipy."""
    from scipy.special import logsumexp

    return logsumexp(x, axis=axis)


def _brentq(f, a, b, **kw):
    from scipy.optimize import brentq

    return brentq(f, a, b, **kw)


def _log_shares(prices: NDArray, a: ArrayLike, a0: float, mu: float, alpha: float, axis: int):
    """Log inside shares and log outside share; firms along ``axis``."""
    u = (np.asarray(a, dtype=float) - prices / alpha) / mu
    u0 = a0 / mu
    log_total = np.logaddexp(_logsumexp(u, axis=axis), u0)
    return u - np.expand_dims(log_total, axis), u0 - log_total


def logit_demand(
    prices: ArrayLike,
    *,
    a: ArrayLike,
    a0: float,
    mu: float,
    alpha: float,
    beta: float,
    axis: int = 0,
) -> NDArray[np.float64]:
    """``beta * exp((a_i - p_i/alpha)/mu) / (sum_j exp((a_j - p_j/alpha)/mu) + exp(a0/mu))``.

    Firms along ``axis`` of ``prices`` (any other axes are independent markets); ``a`` broadcasts
    against ``prices``. Prices may be ``inf`` (that firm sells nothing).
    """
    p = np.asarray(prices, dtype=float)
    if p.ndim == 0:
        raise ValueError("prices need a firm axis")
    p, a_arr = np.broadcast_arrays(p, np.asarray(a, dtype=float))
    log_s, _ = _log_shares(p, a_arr, a0, mu, alpha, axis)
    return beta * np.exp(log_s)


def _as_prices(prices: ArrayLike, config: BertrandConfig) -> NDArray[np.float64]:
    p = np.asarray(prices, dtype=float)
    if p.ndim < 2 or p.shape[-2:] != (config.n_firms, config.n_products):
        raise ValueError(
            f"prices must have shape (..., {config.n_firms}, {config.n_products}) (firms x products), got {p.shape}"
        )
    return p


def quantities(prices: ArrayLike, config: BertrandConfig) -> NDArray[np.float64]:
    """Units sold per firm and product, shape ``(..., n, M)``."""
    p = _as_prices(prices, config)
    return logit_demand(
        p,
        a=config.a_matrix,
        a0=config.a0,
        mu=config.mu,
        alpha=config.alpha,
        beta=config.beta,
        axis=-2,
    )


def profits(prices: ArrayLike, config: BertrandConfig) -> NDArray[np.float64]:
    """``(p - c) * q`` per firm and product, shape ``(..., n, M)`` (0 for an infinite price)."""
    p = _as_prices(prices, config)
    q = quantities(p, config)
    with np.errstate(invalid="ignore"):  # inf price * 0 units
        return np.where(q > 0, (p - config.cost_matrix) * q, 0.0)


# --------------------------------------------------------------------------------------------------
# best response, Nash, monopoly
# --------------------------------------------------------------------------------------------------


def _one_minus_share(p_col: NDArray, i: int, a_col: NDArray, config: BertrandConfig) -> float:
    """``1 - s_i`` at prices ``p_col`` (one product market), computed without cancellation."""
    log_s, log_s0 = _log_shares(p_col, a_col, config.a0, config.mu, config.alpha, axis=0)
    others = np.delete(log_s, i)
    return float(np.exp(np.logaddexp(_logsumexp(others) if others.size else -np.inf, log_s0)))


def best_response(i: int, prices: ArrayLike, config: BertrandConfig) -> NDArray[np.float64]:
    """Firm ``i``'s profit-maximising price for every product ``(M,)`` given the others' prices.

    Solves ``h(p) = (p - c_i)(1 - s_i(p)) - alpha mu = 0`` on the bracket
    ``[c_i, c_i + alpha mu / (1 - s_i(c_i + alpha mu))]`` (``h`` increases strictly on it, is
    ``-alpha mu`` at the left end and ``>= 0`` at the right end) with Brent's method. Row ``i`` of
    ``prices`` is ignored.
    """
    p = _as_prices(prices, config)
    if p.ndim != 2:
        raise ValueError(f"best_response takes one (n, M) price matrix, got shape {p.shape}")
    if not 0 <= i < config.n_firms:
        raise IndexError(f"firm index {i} out of range for {config.n_firms} firms")
    am = config.alpha * config.mu
    a, c = config.a_matrix, config.cost_matrix
    out = np.empty(config.n_products)
    for k in range(config.n_products):
        col = p[:, k].copy()
        ci = c[i, k]

        def h(x: float, col: NDArray = col, k: int = k, ci: float = ci) -> float:
            col[i] = x
            return (x - ci) * _one_minus_share(col, i, a[:, k], config) - am

        col[i] = ci + am
        hi = ci + am / _one_minus_share(col, i, a[:, k], config)
        if not math.isfinite(hi):
            raise RuntimeError(
                f"best_response: no finite bracket for firm {i}, product {k} of {config!r}"
            )
        out[k] = (
            hi
            if h(hi) == 0.0
            else _brentq(h, ci, hi, xtol=1e-14 * max(1.0, abs(hi)), rtol=4 * np.finfo(float).eps)
        )
    return out


def _foc_residual(flat: NDArray, config: BertrandConfig) -> NDArray:
    """``(p_i - c_i)(1 - s_i) - alpha mu`` for every firm and product, divided by ``alpha mu``."""
    p = flat.reshape(config.n_firms, config.n_products)
    log_s, log_s0 = _log_shares(p, config.a_matrix, config.a0, config.mu, config.alpha, axis=0)
    one_minus = -np.expm1(log_s)
    return ((p - config.cost_matrix) * one_minus / (config.alpha * config.mu) - 1.0).ravel()


def _best_response_gap(p: NDArray[np.float64], config: BertrandConfig) -> float:
    return max(
        float(np.max(np.abs(best_response(i, p, config) - p[i]))) for i in range(config.n_firms)
    )


def bertrand_nash(
    config: BertrandConfig, tol: float = 1e-10, max_iter: int = 500
) -> NDArray[np.float64]:
    """Bertrand-Nash prices ``(n, M)``: every firm's price is a best response to the others'.

    The stacked first-order conditions are solved with ``scipy.optimize.root`` (hybr) from
    ``p = c + alpha mu``. Acceptance is decided by a direct check, not by the solver's flag: the
    largest gap between a firm's price and its :func:`best_response` must be at most
    ``tol * max(1, max |p|)``. If it is not, Gauss-Seidel best-response sweeps (at most ``max_iter``)
    continue from the solver's point; if the check still fails, :class:`RuntimeError` names the
    config, the solver's message and the gap.
    """
    n, m = config.n_firms, config.n_products
    am = config.alpha * config.mu
    start = config.cost_matrix + am
    from scipy.optimize import root

    sol = root(_foc_residual, start.ravel(), args=(config,), method="hybr", options={"xtol": 1e-12})
    p = sol.x.reshape(n, m)
    if not np.all(np.isfinite(p)) or np.any(p < config.cost_matrix):
        p = start.copy()

    def threshold(prices: NDArray[np.float64]) -> float:
        return tol * max(1.0, float(np.max(np.abs(prices))))

    gap = _best_response_gap(p, config)
    sweeps = 0
    while gap > threshold(p) and sweeps < max_iter:
        for i in range(n):
            p[i] = best_response(i, p, config)
        gap = _best_response_gap(p, config)
        sweeps += 1
    if gap > threshold(p):
        raise RuntimeError(
            f"bertrand_nash did not converge for {config!r}: largest best-response gap {gap:.3e} "
            f"(tol {tol:.1e}) after the root solver ({sol.message.strip()}) and {sweeps} best-response "
            f"sweeps; prices {p.tolist()}"
        )
    return p


def monopoly_prices(config: BertrandConfig) -> NDArray[np.float64]:
    """Joint-profit-maximising prices ``(n, M)`` (all firms of a product market acting as one).

    Per product, the common markup ``m`` solving ``m * s_0(c + m) = alpha mu`` (Brent on the exact
    bracket ``[0, alpha mu / s_0(c + alpha mu)]``); prices ``c + m``.
    """
    am = config.alpha * config.mu
    a, c = config.a_matrix, config.cost_matrix
    out = np.empty((config.n_firms, config.n_products))
    for k in range(config.n_products):

        def outside_share(markup: float, k: int = k) -> float:
            _, log_s0 = _log_shares(
                c[:, k] + markup, a[:, k], config.a0, config.mu, config.alpha, axis=0
            )
            return float(np.exp(log_s0))

        def g(markup: float) -> float:
            return markup * outside_share(markup) - am

        hi = am / outside_share(am)
        if not math.isfinite(hi):
            raise RuntimeError(f"monopoly_prices: no finite bracket for product {k} of {config!r}")
        markup = (
            hi
            if g(hi) == 0.0
            else _brentq(g, 0.0, hi, xtol=1e-14 * max(1.0, hi), rtol=4 * np.finfo(float).eps)
        )
        out[:, k] = c[:, k] + markup
    return out


@lru_cache(maxsize=512)
def references(config: BertrandConfig) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(Nash prices, monopoly prices) ``(n, M)`` of one cost configuration (cached: the market and
    the scripted firms ask for the same few configurations every period)."""
    return bertrand_nash(config), monopoly_prices(config)


def collusion_index(
    mean_price: ArrayLike, p_nash: ArrayLike, p_mono: ArrayLike
) -> NDArray[np.float64] | float:
    """``clip((p_bar - p_N) / (p_M - p_N), 0, 1)``: 0 at (or below) Nash, 1 at (or above) monopoly.

    Broadcasts; a float for scalar inputs. :class:`ValueError` unless ``p_M > p_N`` everywhere.
    """
    p_bar, p_n, p_m = (np.asarray(x, dtype=float) for x in (mean_price, p_nash, p_mono))
    gap = p_m - p_n
    if np.any(~(gap > 0)):
        raise ValueError("collusion_index needs p_mono > p_nash")
    index = np.clip((p_bar - p_n) / gap, 0.0, 1.0)
    return float(index) if index.ndim == 0 else index


def reference_summary(config: BertrandConfig) -> dict[str, Any]:
    """Nash and monopoly prices, quantities and profits per firm and product, JSON-serialisable."""

    def block(p: NDArray[np.float64]) -> dict[str, Any]:
        pr = profits(p, config)
        return {
            "prices": p.tolist(),
            "quantities": quantities(p, config).tolist(),
            "profits": pr.tolist(),
            "firm_profits": pr.sum(axis=1).tolist(),
            "total_profit": float(pr.sum()),
        }

    return {
        "market": "bertrand",
        "config": config.model_dump(mode="json"),
        "n_firms": config.n_firms,
        "n_products": config.n_products,
        "nash": block(bertrand_nash(config)),
        "monopoly": block(monopoly_prices(config)),
    }
