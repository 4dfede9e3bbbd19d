"""The article's own numbers (seed 004): its eleven runs as it reports them (data/chapter4/article-table.csv, described
in article-table.md), and what Little's law makes of them."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness import DATA

ARTICLE_TABLE = DATA / "chapter4" / "article-table.csv"  # the article's eleven runs; its source: article-table.md


def article_table(path: Path = ARTICLE_TABLE) -> pd.DataFrame:
    """The article's eleven runs as it reports them (columns: article-table.md)."""
    return pd.read_csv(path)


def little_table(article: pd.DataFrame) -> pd.DataFrame:
    """Per run: the VUs (claimed, and as its setup lists them), TPS, the reported mean latency, Little's law's
    latency VUs / TPS for each, the ratio reported / Little's, and the users in flight TPS × latency implies."""
    table = article[["run", "vus_claimed", "vus_setup", "tps", "mean_latency_ms"]].rename(
        columns={"mean_latency_ms": "reported_ms"})
    table["little_ms"] = table["vus_claimed"] / table["tps"] * 1000
    table["ratio"] = table["reported_ms"] / table["little_ms"]
    table["little_setup_ms"] = (table["vus_setup"] / table["tps"] * 1000).where(table["vus_setup"] != table["vus_claimed"])
    table["ratio_setup"] = table["reported_ms"] / table["little_setup_ms"]
    table["users_in_flight"] = table["tps"] * table["reported_ms"] / 1000
    return table


@dataclass(frozen=True)
class Article:
    """The article's setup and its table's headline numbers, for the chapter's sentences."""

    runs: int
    pods: int
    minutes: int
    fewest_users: int
    most_users: int
    first_tps: int
    best_tps: int
    best_run: int
    last_tps: int  # the lowest after the best
    most_threads: int
    first_ms: float
    last_ms: float
    small_pod_cores: int
    big_pod_cores: int
    scale_from_tps: int  # the run before the pods were scaled up
    scale_to_tps: int
    scale_run: int
    jvm_threads_500: int  # the JVM's peak live threads at 500 users on threads.max 800
    jvm_threads_most: int
    cpu_pct: float  # the pods' CPU at its highest (run 11)
    doubtful_run: int  # the run whose setup lists other users than it claims
    doubtful_claimed: int
    doubtful_setup: int

    @property
    def scale_gain(self) -> float:
        return self.scale_to_tps / self.scale_from_tps


def article(table: pd.DataFrame) -> Article:
    runs = table.set_index("run")
    best = int(runs["tps"].idxmax())
    scaled = int(runs.index[runs["pod_cores"] > runs["pod_cores"].min()][0])
    doubtful = runs[runs["vus_setup"] != runs["vus_claimed"]].iloc[0]
    at_500 = runs[(runs["vus_claimed"] == 500) & runs["jvm_threads_peak"].notna()]
    return Article(len(runs), int(runs["pods"].iloc[0]), int(runs["duration_min"].iloc[0]),
                   int(runs["vus_claimed"].min()), int(runs["vus_claimed"].max()), int(runs["tps"].iloc[0]),
                   int(runs.loc[best, "tps"]), best, int(runs.loc[best + 1:, "tps"].min()), int(runs["threads_max"].max()),
                   float(runs["mean_latency_ms"].iloc[0]), float(runs["mean_latency_ms"].max()),
                   int(runs["pod_cores"].min()), int(runs["pod_cores"].max()), int(runs.loc[scaled - 1, "tps"]),
                   int(runs.loc[scaled, "tps"]), scaled, int(at_500["jvm_threads_peak"].iloc[0]),
                   int(runs["jvm_threads_peak"].max()), float(runs["pod_cpu_max_avg_pct"].max()), int(doubtful.name),
                   int(doubtful["vus_claimed"]), int(doubtful["vus_setup"]))


@dataclass(frozen=True)
class Little:
    """The article's runs against Little's law: reported mean latency over users / throughput."""

    low: float  # the runs whose setup lists the users they claim: their least ratio
    high: float
    claimed: float  # the doubtful run under the users it claims
    setup: float  # under the users its setup lists


def little(table: pd.DataFrame) -> Little:
    rows = little_table(table)
    plain, doubtful = rows[rows["vus_setup"] == rows["vus_claimed"]], rows[rows["vus_setup"] != rows["vus_claimed"]].iloc[0]
    return Little(float(plain["ratio"].min()), float(plain["ratio"].max()), float(doubtful["ratio"]),
                  float(doubtful["ratio_setup"]))
