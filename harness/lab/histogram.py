"""Log-bucketed latency histograms with a bounded relative error (HdrHistogram's idea, DDSketch's bucket rule).

A value v > 0 ms falls in bucket i = ceil(log_γ(v / MIN_MS)) with γ = (1 + α) / (1 − α), i.e. in (MIN_MS·γ^(i−1),
MIN_MS·γ^i]; the bucket's representative value 2·MIN_MS·γ^i / (γ + 1) is within α of every value in it. Values at or
below MIN_MS (1 µs, k6's CSV has µs-level precision) share bucket 0, read back as 0. With α = 1 % a latency of an
hour is bucket ~1,100, so a bucket index fits an int16 and a second's histogram is a few dozen (bucket, count) pairs.
Quantiles are nearest-rank over the buckets: the value at rank ⌈q·n⌉ of the sorted values, to within α.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

ALPHA = 0.01  # relative error bound
GAMMA = (1 + ALPHA) / (1 - ALPHA)
MIN_MS = 0.001  # everything at or below 1 µs is bucket 0 (value 0)
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}
_LOG_GAMMA = np.log(GAMMA)


def bucket_of(values_ms) -> np.ndarray:
    """The bucket index (int16) of each latency in ms; NaN and non-positive values go to bucket 0."""
    values = np.asarray(values_ms, dtype="float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        index = np.ceil(np.log(values / MIN_MS) / _LOG_GAMMA)
    return np.where(values > MIN_MS, index, 0).astype("int16")


def value_of(buckets) -> np.ndarray:
    """The representative latency (ms) of each bucket index: within ALPHA of every value that falls in it."""
    index = np.asarray(buckets, dtype="float64")
    return np.where(index > 0, 2 * MIN_MS * np.power(GAMMA, index) / (GAMMA + 1), 0.0)


def counts(seconds, values_ms) -> pd.DataFrame:
    """Per (second, bucket): how many values; the sparse histogram of one batch of samples."""
    frame = pd.DataFrame({"second": np.asarray(seconds, dtype="int32"), "bucket": bucket_of(values_ms)})
    return frame.groupby(["second", "bucket"], sort=False).size().rename("count").reset_index()


def merge(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Histograms of several batches → one, sorted by second and bucket, counts as int32."""
    if not parts:
        return pd.DataFrame({"second": pd.Series(dtype="int32"), "bucket": pd.Series(dtype="int16"),
                             "count": pd.Series(dtype="int32")})
    merged = pd.concat(parts, ignore_index=True).groupby(["second", "bucket"], sort=True)["count"].sum().reset_index()
    return merged.astype({"second": "int32", "bucket": "int16", "count": "int32"})


def quantiles(histogram: pd.DataFrame, by: str | None = "second", which: dict[str, float] = QUANTILES) -> pd.DataFrame:
    """p50/p90/p99/p99.9 (ms) from a histogram (`bucket`, `count` and optionally a `by` column such as `second` or
    `step`): one row per group, or one row in all when `by` is None; plus `requests`, the values counted."""
    frame = histogram if by else histogram.assign(_all=0)
    key = by or "_all"
    rows = []
    for group, one in frame.groupby(key, sort=True):
        one = one.groupby("bucket")["count"].sum().sort_index()
        cumulative = one.to_numpy().cumsum()
        total = int(cumulative[-1]) if len(cumulative) else 0
        row = {key: group, "requests": total}
        for name, q in which.items():
            rank = max(1, int(np.ceil(q * total - 1e-9)))
            row[name] = float(value_of(one.index[np.searchsorted(cumulative, rank)])) if total else float("nan")
        rows.append(row)
    out = pd.DataFrame(rows, columns=[key, "requests", *which])
    return out.drop(columns="_all") if by is None else out
