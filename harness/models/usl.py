"""The Universal Scalability Law (Neil Gunther) fitted to measured throughput against users:

    X(N) = λN / (1 + α(N − 1) + βN(N − 1))

λ is what one user alone gets (requests per second), the slope of perfect scaling. α is contention: the share of
the work that queues for something only one request can use at a time (a lock, a connection, the CPU's run queue),
which flattens the curve into a plateau of λ/α. β is coherence: a cost every pair of requests in flight pays each
other (cache lines and locks handed between cores, context switches, GC scanning more stacks), growing with N², which
bends the curve down past a peak at N* = √((1 − α) / β). The operational bounds (harness.models.bounds) have neither:
their plateau is flat and starts sharply at the knee.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

MIN_LEVELS = 3  # three parameters need at least three distinct user counts


# α or β this small is the solver's rounding, not a cost: β = 1e-12 would put the peak at a million users.
NEGLIGIBLE = 1e-12


@dataclass(frozen=True)
class USLFit:
    lambda_: float  # λ: requests per second of one user alone
    alpha: float  # α ≥ 0: contention (queueing for a shared resource)
    beta: float  # β ≥ 0: coherence (crosstalk between requests in flight, ∝ N²)
    r_squared: float  # of the fitted X(N) against the measured throughput (1.0: exact)
    points: int  # measurements fitted

    def throughput(self, users) -> np.ndarray | float:
        """X(N): the fitted throughput at these user counts (a number for a number)."""
        return usl_throughput(users, self.lambda_, self.alpha, self.beta)

    @property
    def peak_users(self) -> float | None:
        """N* = √((1 − α) / β), where throughput is highest; None when it never turns down (β = 0, α < 1)."""
        if self.alpha >= 1:
            return 1.0  # contention alone already costs more than a second user brings
        return math.sqrt((1 - self.alpha) / self.beta) if self.beta > 0 else None

    @property
    def peak_tps(self) -> float:
        """The highest throughput: X(N*), or λ/α, the plateau approached when β = 0."""
        if self.peak_users is not None:
            return self.throughput(self.peak_users)
        return self.lambda_ / self.alpha if self.alpha > 0 else math.inf


def fit_usl(users, tps) -> USLFit:
    """Fit λ, α, β to measured (N, X) points, with α, β ≥ 0.

    Why this way, without scipy: N / X = (1 + α(N − 1) + βN(N − 1)) / λ is linear in (1/λ, α/λ, β/λ), so ordinary
    least squares solves it exactly. Each row is divided by its own N / X, so the fit weighs relative errors alike
    (throughput's noise is a few % at every N; unweighted, the large-N rows would decide alone). A negative α or β
    (superlinear scaling, or noise) has no meaning here, so the fit keeps the best of the least-squares solutions
    with α, β, both or neither held at 0 that are non-negative: for two constrained coefficients that enumeration is
    the exact non-negative least-squares answer.
    """
    n, x = _points(users, tps)
    y = n / x
    best = None
    for free_alpha, free_beta in itertools.product((True, False), repeat=2):
        candidate = _solve(n, y, free_alpha, free_beta)
        if candidate is not None and (best is None or candidate[0] < best[0]):
            best = candidate
    _, lambda_, alpha, beta = best  # the α = β = 0 solution (λ from the mean of X / N) is always feasible
    return USLFit(lambda_, alpha, beta, r_squared(x, usl_throughput(n, lambda_, alpha, beta)), len(n))


def usl_throughput(users, lambda_: float, alpha: float, beta: float) -> np.ndarray | float:
    """X(N) = λN / (1 + α(N − 1) + βN(N − 1)) at these user counts (a number for a number)."""
    n = np.asarray(users, dtype=float)
    x = lambda_ * n / (1 + alpha * (n - 1) + beta * n * (n - 1))
    return float(x) if x.ndim == 0 else x


def _points(users, tps) -> tuple[np.ndarray, np.ndarray]:
    n, x = np.asarray(users, dtype=float), np.asarray(tps, dtype=float)
    if n.shape != x.shape or n.ndim != 1:
        raise ValueError(f"users and tps must be two lists of the same length, got shapes {n.shape} and {x.shape}")
    if not (np.isfinite(n).all() and np.isfinite(x).all() and (n > 0).all() and (x > 0).all()):
        raise ValueError("users and tps must be finite and > 0 (a step with no answered request has no place in a fit)")
    if len(np.unique(n)) < MIN_LEVELS:
        raise ValueError(f"the USL needs at least {MIN_LEVELS} distinct user counts, got {sorted(set(n.tolist()))}")
    return n, x


def _solve(n: np.ndarray, y: np.ndarray, free_alpha: bool, free_beta: bool) -> tuple[float, float, float, float] | None:
    """Weighted least squares of y = N / X on 1, (N − 1), N(N − 1), with α or β held at 0 where not free:
    (weighted squared error, λ, α, β), or None when the answer is not feasible (λ ≤ 0, or α or β < 0)."""
    columns = [np.ones_like(n)] + [n - 1] * free_alpha + [n * (n - 1)] * free_beta
    design = np.column_stack(columns) / y[:, None]
    target = np.ones_like(y)  # y / y: every row weighed by 1 / y
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    error = float(((design @ coef - target) ** 2).sum())
    rest = iter(coef[1:])
    a, b, c = coef[0], next(rest) if free_alpha else 0.0, next(rest) if free_beta else 0.0
    if a <= 0 or b < 0 or c < 0:
        return None
    alpha, beta = (float(v / a) if v / a > NEGLIGIBLE else 0.0 for v in (b, c))
    return error, float(1 / a), alpha, beta


def r_squared(measured, fitted) -> float:
    """1 − residual / total sum of squares. All measurements equal: 1.0 when the fit hits them, else 0.0."""
    measured, fitted = np.asarray(measured, dtype=float), np.asarray(fitted, dtype=float)
    residual = float(((measured - fitted) ** 2).sum())
    total = float(((measured - measured.mean()) ** 2).sum())
    if total == 0:
        return 1.0 if math.isclose(residual, 0, abs_tol=1e-12) else 0.0
    return 1 - residual / total
