"""Economics of the multi-product Cournot market (seed 003, DESIGN.md section 7.3): no simulator.

Model
-----
``n`` firms each choose a quantity ``q[i, m] >= 0`` of every product ``m`` (``M`` products), with a
per-firm capacity ``sum_m q[i, m] <= capacity[i]``. Products are independent markets with linear
inverse demand, clipped at zero::

    P_m(Q_m) = max(a_m - Q_m / b_m, 0),      Q_m = sum_i q[i, m]
    profit[i, m] = (P_m - c[i, m]) * q[i, m]

(``b`` is the demand *slope divisor*: one more unit sold lowers the price by ``1 / b``.) Defaults are
the seed's asymmetric experiment: a = 100, b = 2, costs firm 1 (40, 50), firm 2 (50, 40), capacity 100.
The seed's own code does not clip the price at zero; we do (DESIGN.md), which changes nothing at the
reference solutions below because they never lie where the unclipped price would be negative.

Quantity arrays are ``(..., n, M)``: firms on axis -2, products on the last axis, any leading batch
axes (rounds, episodes) broadcast. :func:`prices` returns ``(..., M)``, :func:`profits` returns the
per firm *and product* matrix ``(..., n, M)`` (sum the last axis for a firm's total).

References (the ``summary.json`` of ``reference@cournot``)
-----------------------------------------------------------
* :func:`best_response`: firm ``i``'s problem ``max_{q_i >= 0, sum q_i <= K_i} sum_m profit[i, m]``
  given the others' quantities, solved with scipy's SLSQP and the analytic gradient
  ``d profit / d q[i, m] = P_m - c[i, m] - q[i, m] / b_m`` where ``P_m > 0`` (``-c[i, m]`` where the
  price is clipped). Where prices are positive this is a concave QP; in rescaled variables whose
  Hessian is the identity, SLSQP's first step from ``q_i = 0`` solves it exactly (see the function's
  docstring for why not a warm start). Checked in the tests against the water-filling KKT solution.
* :func:`cournot_nash`: Gauss-Seidel iterative best response from the seed's start (capacity split
  evenly over products), firms updated in index order within a sweep, until the largest change of
  any quantity over a sweep is below ``tol``; otherwise :class:`RuntimeError` naming the config and the
  last change. Convergence is guaranteed in theory: linear Cournot with constant marginal costs is an
  exact potential game with the strictly concave potential
  ``sum_m [a_m Q_m - (Q_m^2 + sum_i q[i,m]^2) / (2 b_m)] - sum c * q`` (where prices are positive), so
  Gauss-Seidel best response is block coordinate ascent on it and the equilibrium is unique. The
  result is within about ``tol`` of the equilibrium (the sweep map contracts).
* :func:`monopoly`: full collusion, the firms jointly maximising total profit under *every* firm's
  own capacity constraint (SLSQP, analytic gradient, multi-start), then polished by solving the KKT
  equations exactly on the active set SLSQP found, then verified against the KKT conditions
  (:class:`RuntimeError` if violated). Product totals and total profit are unique; the split across
  firms is not when two firms have the same cost for a product (e.g. symmetric configurations): the
  polish then takes the minimum-norm split, i.e. equal shares for equal-cost firms, a deterministic
  convention (unless that split breaks a capacity: then the split closest to SLSQP's).
* :func:`specialisation_cv`: per firm, population SD / mean of its quantities across products
  (0 when the mean is 0), the seed's equation 4 (``marketarena.metrics.indices.cv``). At the
  default Nash it is 3/11 for both firms; at the
  default monopoly (each firm alone on its cheap product) it is 1.
* :func:`reference_summary`: all of the above as plain JSON-serialisable Python objects.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from marketarena.metrics import indices

__all__ = [
    "CournotConfig",
    "prices",
    "profits",
    "best_response",
    "cournot_nash",
    "monopoly",
    "specialisation_cv",
    "reference_summary",
]

_SLSQP_OPTIONS = {"ftol": 1e-14, "maxiter": 1000}


class CournotConfig(BaseModel):
    """A Cournot market: ``n`` firms (rows of ``costs``) x ``M`` products (its columns).

    ``a`` and ``b`` are scalars (same for every product) or one value per product; ``capacity`` is a
    scalar (same for every firm) or one value per firm, ``math.inf`` for no capacity limit.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    a: float | tuple[float, ...] = 100.0
    b: float | tuple[float, ...] = 2.0
    costs: tuple[tuple[float, ...], ...] = ((40.0, 50.0), (50.0, 40.0))
    capacity: float | tuple[float, ...] = 100.0

    @field_validator("costs")
    @classmethod
    def _costs_rectangular(cls, v: tuple[tuple[float, ...], ...]) -> tuple[tuple[float, ...], ...]:
        if len(v) == 0 or len(v[0]) == 0:
            raise ValueError("costs must have at least one firm and one product")
        if any(len(row) != len(v[0]) for row in v):
            raise ValueError("costs must be a rectangular n_firms x n_products table")
        if any(not math.isfinite(x) or x < 0 for row in v for x in row):
            raise ValueError("costs must be finite and >= 0")
        return v

    @model_validator(mode="after")
    def _shapes_and_signs(self) -> CournotConfig:
        n, m = len(self.costs), len(self.costs[0])
        for name, value, size, what in (
            ("a", self.a, m, "products"),
            ("b", self.b, m, "products"),
            ("capacity", self.capacity, n, "firms"),
        ):
            values = value if isinstance(value, tuple) else (value,)
            if isinstance(value, tuple) and len(value) != size:
                raise ValueError(f"{name} has {len(value)} entries but there are {size} {what}")
            if name == "capacity":
                if any(not (x > 0) for x in values):
                    raise ValueError("capacity must be > 0 (math.inf for no limit)")
            elif any(not math.isfinite(x) or x <= 0 for x in values):
                raise ValueError(f"{name} must be finite and > 0")
        return self

    @property
    def n_firms(self) -> int:
        return len(self.costs)

    @property
    def n_products(self) -> int:
        return len(self.costs[0])

    @property
    def a_vec(self) -> NDArray[np.float64]:
        """Demand intercepts, shape ``(M,)``."""
        return np.broadcast_to(np.asarray(self.a, dtype=float), (self.n_products,)).copy()

    @property
    def b_vec(self) -> NDArray[np.float64]:
        """Demand slope divisors, shape ``(M,)``."""
        return np.broadcast_to(np.asarray(self.b, dtype=float), (self.n_products,)).copy()

    @property
    def cost_matrix(self) -> NDArray[np.float64]:
        """Marginal costs, shape ``(n, M)``."""
        return np.asarray(self.costs, dtype=float)

    @property
    def capacity_vec(self) -> NDArray[np.float64]:
        """Capacities, shape ``(n,)`` (``inf`` = unlimited)."""
        return np.broadcast_to(np.asarray(self.capacity, dtype=float), (self.n_firms,)).copy()

    @property
    def quantity_upper_bounds(self) -> NDArray[np.float64]:
        """Per (firm, product) box used by the optimisers: ``min(capacity_i, a_m * b_m)``.

        Beyond ``a_m * b_m`` units the price is 0 whatever the others do, so selling more never pays.
        """
        return np.minimum(self.capacity_vec[:, None], (self.a_vec * self.b_vec)[None, :])


# --------------------------------------------------------------------------------------------------
# prices and profits
# --------------------------------------------------------------------------------------------------


def _as_quantities(q: ArrayLike, config: CournotConfig) -> NDArray[np.float64]:
    arr = np.asarray(q, dtype=float)
    if arr.ndim < 2 or arr.shape[-2:] != (config.n_firms, config.n_products):
        raise ValueError(
            f"quantities must have shape (..., {config.n_firms}, {config.n_products}) "
            f"(firms x products), got {arr.shape}"
        )
    return arr


def prices(q: ArrayLike, config: CournotConfig) -> NDArray[np.float64]:
    """Market-clearing prices ``max(a_m - Q_m / b_m, 0)``, shape ``(..., M)``."""
    arr = _as_quantities(q, config)
    total = arr.sum(axis=-2)
    return np.maximum(config.a_vec - total / config.b_vec, 0.0)


def profits(q: ArrayLike, config: CournotConfig) -> NDArray[np.float64]:
    """Profit per firm and product ``(P_m - c[i, m]) * q[i, m]``, shape ``(..., n, M)``."""
    arr = _as_quantities(q, config)
    p = prices(arr, config)
    return (p[..., None, :] - config.cost_matrix) * arr


# --------------------------------------------------------------------------------------------------
# best response and Nash
# --------------------------------------------------------------------------------------------------


def _project_to_capacity(x: NDArray[np.float64], upper: NDArray[np.float64], cap: float) -> NDArray:
    """Clip into the box and, if the plan exceeds capacity, scale it down proportionally."""
    x = np.clip(x, 0.0, upper)
    total = x.sum()
    if math.isfinite(cap) and total > cap:
        x = x * (cap / total)
    return x


def _best_slsqp(
    objective, gradient, starts: list, bounds: list, constraints: list, finish, score, rtol: float
) -> tuple[NDArray[np.float64] | None, list[str]]:
    """SLSQP (analytic gradient, :data:`_SLSQP_OPTIONS`) from each of ``starts`` (scaled
    vectors): each converged point mapped back by ``finish`` and scored by ``score`` (higher is
    better), the best kept, an earlier start winning unless a later one beats it by more than
    ``rtol`` (relative); (None, the solver's messages) when no start converged. Scipy is imported
    here, not with the module: validating a cournot instance's params reads this module."""
    from scipy.optimize import minimize

    best, best_score, messages = None, -math.inf, []
    for y0 in starts:
        res = minimize(
            objective,
            y0,
            jac=gradient,
            method="SLSQP",
            bounds=bounds,
            constraints=constraints,
            options=_SLSQP_OPTIONS,
        )
        if res.status not in (0, 8):
            messages.append(f"exit mode {res.status}: {res.message}")
            continue
        x = finish(res.x)
        value = score(x)
        if best is None or value > best_score + rtol * max(1.0, abs(best_score)):
            best, best_score = x, value
    return best, messages


def best_response(i: int, q: ArrayLike, config: CournotConfig) -> NDArray[np.float64]:
    """Firm ``i``'s profit-maximising quantities ``(M,)`` given the others' rows of ``q`` (n x M).

    SLSQP with the analytic gradient on ``q_i >= 0``, ``sum(q_i) <= capacity_i``; row ``i`` of ``q``
    is only used as a fallback starting point. Raises :class:`RuntimeError` if no start succeeds.

    Numerics: the objective is -profit / ``scale_f`` (a profit scale, so ``ftol`` is relative) in the
    rescaled variables ``y_m = q_m / sqrt(b_m * scale_f / 2)``, in which its Hessian is the identity
    wherever the price is positive. SLSQP's first quasi-Newton model (the identity) is then the exact
    problem, so the first QP step from the start ``q_i = 0`` lands on the optimum, capacity and bounds
    included, to rounding error. (Started *near* the optimum, SLSQP stops as soon as the predicted
    decrease is below ``ftol``, leaving quantities ~1e-6 off, which would make a 1e-8 Nash tolerance
    meaningless: hence the zero start rather than a warm start.) The firm's current plan is a second,
    fallback start; the better result on the true objective is kept, the first winning ties. SLSQP's
    exit mode 8 ("positive directional derivative for linesearch": no progress possible at this
    precision) counts as success; any other failure of both starts raises :class:`RuntimeError`.
    """
    q = _as_quantities(q, config)
    if q.ndim != 2:
        raise ValueError(f"best_response takes one (n, M) quantity matrix, got shape {q.shape}")
    if not 0 <= i < config.n_firms:
        raise IndexError(f"firm index {i} out of range for {config.n_firms} firms")
    a, b = config.a_vec, config.b_vec
    c = config.cost_matrix[i]
    cap = float(config.capacity_vec[i])
    upper = config.quantity_upper_bounds[i]
    others = q.sum(axis=0) - q[i]
    m = config.n_products

    scale_f = max(1.0, float(np.sum(a * a * b)) / 4.0)  # order of magnitude of attainable profit
    scale_q = np.sqrt(b * scale_f / 2.0)  # q = scale_q * y: Hessian of objective(y) is the identity

    def neg_profit_q(x: NDArray[np.float64]) -> float:
        p = np.maximum(a - (others + x) / b, 0.0)
        return -float(np.sum((p - c) * x))

    def objective(y: NDArray[np.float64]) -> float:
        return neg_profit_q(scale_q * y) / scale_f

    def gradient(y: NDArray[np.float64]) -> NDArray[np.float64]:
        x = scale_q * y
        raw = a - (others + x) / b
        dq = np.where(raw > 0.0, -(raw - c - x / b), c)
        return dq * scale_q / scale_f

    constraints = []
    if math.isfinite(cap):
        constraints.append(
            {
                "type": "ineq",
                "fun": lambda y: (cap - float(np.dot(scale_q, y))) / cap,
                "jac": lambda y: -scale_q / cap,
            }
        )
    bounds = list(zip(np.zeros(m), upper / scale_q))
    # start 1: producing nothing (see Numerics); start 2, a fallback: the firm's current plan.
    starts = [np.zeros(m), _project_to_capacity(q[i], upper, cap)]
    best_x, messages = _best_slsqp(
        objective,
        gradient,
        [x0 / scale_q for x0 in starts],
        bounds,
        constraints,
        finish=lambda y: _project_to_capacity(scale_q * y, upper, cap),
        score=lambda x: -neg_profit_q(x),
        rtol=1e-12,
    )
    if best_x is None:
        raise RuntimeError(
            f"best_response: SLSQP failed for firm {i} of {config!r} "
            f"(others' quantities {others.tolist()}): {'; '.join(messages)}"
        )
    return best_x


def _initial_plan(config: CournotConfig) -> NDArray[np.float64]:
    """The seed's start: each firm splits its capacity evenly across products (box-clipped)."""
    cap = config.capacity_vec
    share = np.where(np.isfinite(cap), cap, config.quantity_upper_bounds.sum(axis=1))
    start = np.repeat((share / config.n_products)[:, None], config.n_products, axis=1)
    return np.minimum(start, config.quantity_upper_bounds)


def cournot_nash(
    config: CournotConfig, tol: float = 1e-8, max_iter: int = 1000
) -> NDArray[np.float64]:
    """Cournot-Nash quantities ``(n, M)`` by Gauss-Seidel iterative best response.

    Sweeps firms ``0..n-1`` (each best-responding to the latest plans of the others) until the largest
    absolute change of any quantity over a sweep is ``< tol``. Raises :class:`RuntimeError` naming the
    config and the last change if that has not happened after ``max_iter`` sweeps.
    """
    if tol <= 0 or max_iter < 1:
        raise ValueError("tol must be > 0 and max_iter >= 1")
    q = _initial_plan(config)
    change = math.inf
    for _ in range(max_iter):
        previous = q.copy()
        for i in range(config.n_firms):
            q[i] = best_response(i, q, config)
        change = float(np.max(np.abs(q - previous)))
        if change < tol:
            return q
    raise RuntimeError(
        f"cournot_nash did not converge for {config!r}: largest quantity change in the last of "
        f"{max_iter} sweeps was {change:.3e} (tol {tol:.1e})"
    )


# --------------------------------------------------------------------------------------------------
# monopoly (full collusion)
# --------------------------------------------------------------------------------------------------


def _joint_profit(q: NDArray[np.float64], config: CournotConfig) -> float:
    return float(profits(q, config).sum())


def _monopoly_kkt_violation(q: NDArray[np.float64], config: CournotConfig) -> float:
    """Largest violation of the joint problem's KKT conditions, in price units.

    With marginal revenue ``MR_m = a_m - 2 Q_m / b_m`` and ``g[i, m] = MR_m - c[i, m]``, ``q`` is
    optimal iff every firm has a shadow price ``lambda_i >= 0`` of its capacity (0 if it has slack)
    with ``g[i, m] <= lambda_i`` everywhere and ``g[i, m] = lambda_i`` where ``q[i, m] > 0`` (the
    problem is concave, so these conditions are sufficient).
    """
    a, b, c = config.a_vec, config.b_vec, config.cost_matrix
    total = q.sum(axis=0)
    g = (a - 2.0 * total / b)[None, :] - c
    eps_q = 1e-7 * max(1.0, float(np.max(config.quantity_upper_bounds)))
    worst = 0.0
    for i, cap in enumerate(config.capacity_vec):
        support = q[i] > eps_q
        if math.isfinite(cap) and cap - q[i].sum() <= eps_q:
            lam = max(0.0, float(g[i].max()))
        else:
            lam = 0.0
            worst = max(worst, float(np.max(g[i] - lam)))
        if support.any():
            worst = max(worst, float(np.max(np.abs(g[i, support] - lam))))
    return worst


def _solve_on_active_set(
    support: list[tuple[int, int]], binding: list[int], x0: NDArray, config: CournotConfig
) -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """The KKT equations on one active set: two candidate ``(q, lambda)`` pairs, best first.

    Unknowns: the support's quantities, the binding firms' shadow prices. Equations: ``a_m - 2 Q_m /
    b_m - c[i, m] - lambda_i = 0`` for ``(i, m)`` in the support, ``sum_m q[i, m] = K_i`` for a binding
    firm. 1. the minimum-norm solution (equal-cost firms share evenly); 2. the one closest to ``x0``.
    """
    a, b, c, cap = config.a_vec, config.b_vec, config.cost_matrix, config.capacity_vec
    firm, prod = (np.array(axis, dtype=int) for axis in zip(*support))
    bind, s = np.array(binding, dtype=int), len(support)
    mat = np.zeros((s + len(bind), s + len(bind)))
    mat[:s, :s] = (prod[:, None] == prod[None, :]) * (2.0 / b[prod])[:, None]
    mat[:s, s:] = firm[:, None] == bind[None, :]
    mat[s:, :s] = bind[:, None] == firm[None, :]
    rhs = np.concatenate([a[prod] - c[firm, prod], cap[bind]])
    out = []
    for sol in (
        np.linalg.lstsq(mat, rhs, rcond=None)[0],
        x0 + np.linalg.lstsq(mat, rhs - mat @ x0, rcond=None)[0],
    ):
        q, lam = np.zeros((config.n_firms, config.n_products)), np.zeros(config.n_firms)
        q[firm, prod], lam[bind] = sol[:s], sol[s:]
        out.append((q, lam))
    return out


def _polish_monopoly(q: NDArray[np.float64], config: CournotConfig) -> NDArray[np.float64] | None:
    """Solve the KKT equations exactly, starting from the active set SLSQP identified.

    SLSQP can stop on a neighbouring active set where the objective is flat to its tolerance (a
    firm at capacity making a product that a firm with slack makes 1e-7 cheaper). The active set is
    then corrected a step at a time (primal-dual active set): a binding firm with a negative shadow
    price is freed, a negative quantity leaves the support, so does one whose equation cannot hold
    (marginal profit below its firm's shadow price), a firm over capacity binds, a quantity whose
    marginal profit exceeds its firm's shadow price joins. Returns the first candidate meeting the KKT
    conditions within ``1e-10 max(1, max a)``, else the least violating one if it beats ``q``.
    """
    n, m = config.n_firms, config.n_products
    a, b, c, cap = config.a_vec, config.b_vec, config.cost_matrix, config.capacity_vec
    eps_q = 1e-7 * max(1.0, float(np.max(config.quantity_upper_bounds)))
    tol = 1e-10 * max(1.0, float(np.max(a)))
    support = [(i, k) for i in range(n) for k in range(m) if q[i, k] > eps_q]
    binding = [i for i in range(n) if math.isfinite(cap[i]) and cap[i] - q[i].sum() <= eps_q]
    best, best_violation = None, _monopoly_kkt_violation(q, config)
    seen: set[tuple[tuple[tuple[int, int], ...], tuple[int, ...]]] = set()
    while support and (tuple(support), tuple(binding)) not in seen:
        seen.add((tuple(support), tuple(binding)))
        x0 = np.array([q[i, k] for i, k in support] + [0.0] * len(binding))
        candidates = _solve_on_active_set(support, binding, x0, config)
        for sol, lam in candidates:
            if sol.min() < -eps_q or np.any(sol.sum(axis=1) > cap + eps_q) or lam.min() < -tol:
                continue
            upper = config.quantity_upper_bounds
            sol = np.stack(
                [_project_to_capacity(sol[i], upper[i], float(cap[i])) for i in range(n)]
            )
            violation = _monopoly_kkt_violation(sol, config)
            if violation < best_violation:
                best, best_violation = sol, violation
            if violation <= tol:
                return best
        cand, lam = candidates[0]
        gap = (a - 2.0 * cand.sum(axis=0) / b)[None, :] - c - lam[:, None]  # g - lambda
        over = [i for i in range(n) if i not in binding and cand[i].sum() > cap[i] + eps_q]
        outside = [(gap[i, k], (i, k)) for i in range(n) for k in range(m) if (i, k) not in support]
        if binding and lam[binding].min() < -tol:
            binding.remove(min(binding, key=lambda i: lam[i]))
        elif cand.min() < -eps_q:
            support.remove(min(support, key=lambda ik: cand[ik]))
        elif min(gap[ik] for ik in support) < -tol:
            support.remove(min(support, key=lambda ik: gap[ik]))
        elif over:
            binding = sorted([*binding, over[0]])
        elif outside and max(outside)[0] > tol:
            support = sorted([*support, max(outside)[1]])
        else:
            break
    return best


def monopoly(config: CournotConfig, kkt_tol: float = 1e-6) -> NDArray[np.float64]:
    """Full-collusion quantities ``(n, M)``: maximise total profit under every firm's capacity.

    1. SLSQP on the joint profit with the analytic gradient (``d/dq[i, m] = a_m - 2 Q_m / b_m - c[i, m]``
       where the price is positive), in the same per-product rescaled variables as
       :func:`best_response`, from three starts: the seed's equal capacity split; each product's
       single-plant monopoly quantity given to its cheapest firm, projected onto capacity; a small
       interior point. The best result on the true objective is kept, the earliest start winning ties.
       Exit mode 8 counts as success (see :func:`best_response`).
    2. Polish: the joint Hessian is singular (total profit depends on a product only through its total
       and linear costs), so SLSQP can stop up to ~1e-5 away from the optimum. The KKT equations are
       then solved exactly on the active set it found (positive quantities, binding capacities),
       corrected step by step where SLSQP stopped on a neighbouring one (:func:`_polish_monopoly`),
       taking the minimum-norm solution where the split between equal-cost firms is free (or, when
       that split does not fit the capacities, the solution closest to SLSQP's point).
    3. Check: :class:`RuntimeError` if the result violates the KKT conditions by more than
       ``kkt_tol`` (price units, relative to ``max(1, max a)``).

    Product totals and total profit are unique; the split across firms is only unique when costs
    differ (see the module docstring); ties are split evenly between equal-cost firms in the support.
    """
    n, m = config.n_firms, config.n_products
    a, b, c = config.a_vec, config.b_vec, config.cost_matrix
    cap = config.capacity_vec
    upper = config.quantity_upper_bounds
    scale_f = max(1.0, float(np.sum(a * a * b)) / 4.0)
    scale_q = np.tile(np.sqrt(b * scale_f / 2.0), n)  # q.ravel() = scale_q * y

    def objective(y: NDArray[np.float64]) -> float:
        return -_joint_profit((scale_q * y).reshape(n, m), config) / scale_f

    def gradient(y: NDArray[np.float64]) -> NDArray[np.float64]:
        q = (scale_q * y).reshape(n, m)
        total = q.sum(axis=0)
        raw = a - total / b
        marginal_revenue = np.where(raw > 0.0, raw - total / b, 0.0)
        return -(marginal_revenue[None, :] - c).ravel() * scale_q / scale_f

    constraints = []
    for i in range(n):
        if math.isfinite(cap[i]):
            row = np.zeros((n, m))
            row[i] = 1.0
            row = row.ravel() * scale_q / cap[i]
            constraints.append(
                {
                    "type": "ineq",
                    "fun": lambda y, row=row: 1.0 - float(np.dot(row, y)),
                    "jac": lambda y, row=row: -row,
                }
            )
    bounds = list(zip(np.zeros(n * m), upper.ravel() / scale_q))

    def project(plan: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.stack([_project_to_capacity(plan[i], upper[i], float(cap[i])) for i in range(n)])

    cheapest = np.zeros((n, m))
    for k in range(m):
        j = int(np.argmin(c[:, k]))
        cheapest[j, k] = max(b[k] * (a[k] - c[j, k]) / 2.0, 0.0)
    starts = [_initial_plan(config), project(cheapest), np.minimum(np.full((n, m), 1.0), upper)]

    best_q, messages = _best_slsqp(
        objective,
        gradient,
        [q0.ravel() / scale_q for q0 in starts],
        bounds,
        constraints,
        finish=lambda y: project((scale_q * y).reshape(n, m)),
        score=lambda q: _joint_profit(q, config),
        rtol=1e-9,
    )
    if best_q is None:
        raise RuntimeError(
            f"monopoly: SLSQP failed from every start for {config!r}: {'; '.join(messages)}"
        )
    polished = _polish_monopoly(best_q, config)
    if polished is not None:
        best_q = polished
    violation = _monopoly_kkt_violation(best_q, config)
    if violation > kkt_tol * max(1.0, float(np.max(a))):
        raise RuntimeError(
            f"monopoly: no solution satisfying the optimality (KKT) conditions for {config!r}: "
            f"best plan {best_q.tolist()} violates them by {violation:.3e}"
        )
    return best_q


# --------------------------------------------------------------------------------------------------
# specialisation and the reference summary
# --------------------------------------------------------------------------------------------------


def specialisation_cv(q: ArrayLike) -> NDArray[np.float64] | float:
    """Coefficient of variation of each firm's quantities across products (last axis).

    Population SD (``ddof=0``) / mean, 0 where the mean is 0: ``marketarena.metrics.indices.cv``
    (``eps=0``), the one CV of the project. ``(..., n, M) -> (..., n)``; a single firm's ``(M,)``
    vector gives a float. For two products, CV = |q_A - q_B| / (q_A + q_B): 0 for an even split, 1
    for producing one product only.
    """
    arr = np.asarray(q, dtype=float)
    if arr.ndim == 0 or arr.shape[-1] == 0:
        raise ValueError(
            f"specialisation_cv needs quantities across products on the last axis, got {arr.shape}"
        )
    return indices.cv(arr, eps=0.0, axis=-1)


def _solution_summary(q: NDArray[np.float64], config: CournotConfig) -> dict[str, Any]:
    per_product = profits(q, config)
    return {
        "quantities": q.tolist(),
        "product_totals": q.sum(axis=0).tolist(),
        "prices": prices(q, config).tolist(),
        "profits": per_product.tolist(),
        "firm_profits": per_product.sum(axis=1).tolist(),
        "total_profit": float(per_product.sum()),
        "cv": np.atleast_1d(specialisation_cv(q)).tolist(),
    }


def reference_summary(
    config: CournotConfig, tol: float = 1e-8, max_iter: int = 1000
) -> dict[str, Any]:
    """Nash and monopoly references as plain JSON-serialisable data (the ``summary.json`` shape).

    ``quantities`` and ``profits`` are ``[firm][product]`` lists, ``prices`` and ``product_totals``
    are per product, ``firm_profits`` and ``cv`` per firm.
    """
    nash = cournot_nash(config, tol=tol, max_iter=max_iter)
    mono = monopoly(config)
    return {
        "market": "cournot",
        "config": {
            "a": config.a_vec.tolist(),
            "b": config.b_vec.tolist(),
            "costs": config.cost_matrix.tolist(),
            "capacity": [c if math.isfinite(c) else None for c in config.capacity_vec.tolist()],
        },
        "n_firms": config.n_firms,
        "n_products": config.n_products,
        "nash_tol": tol,
        "nash": _solution_summary(nash, config),
        "monopoly": _solution_summary(mono, config),
    }
