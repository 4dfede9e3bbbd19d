"""Chapter 7's tables: what the model predicted for every step before any data, then every step from the client's
side and from the server's (first runs), with the limit the data names; and the step table as a reader downloads it."""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.tables import markdown_table

SHORT = {"platform threads": "platform", "virtual threads": "virtual", "event loop": "event loop"}
COUNT = "{:,.0f}"  # counts, seconds, MiB and KiB alike: whole numbers with separators


def _people(table: pd.DataFrame, columns: dict[str, pd.Series]) -> Markdown:
    """Users and server first, then `columns`: numbers as whole counts with separators, words as they are."""
    frame = pd.DataFrame({"users": table.users, "server": table.model.astype(str).map(SHORT)} | columns)
    numbers = [name for name in frame.columns if pd.api.types.is_numeric_dtype(frame[name])]
    return Markdown(markdown_table(frame, dict.fromkeys(numbers, COUNT)))


def predictions_table(table: pd.DataFrame) -> Markdown:
    """The model's prediction for every step, as step.json recorded it before the load: users answered (every user
    arriving at once) and when the last answer comes."""
    return _people(table, {"k6 processes": table.processes, "answered (model)": table.predicted_ok,
                           "failed (model)": table.asked - table.predicted_ok,
                           "last answer, s (model)": table.predicted_last_s})


def client_table(table: pd.DataFrame) -> Markdown:
    """Every step from the client's side: what came back against the model's two predictions."""
    return _people(table, {
        "answered": table.succeeded, "model, all at once": table.predicted_ok,
        "model, measured arrivals": table.arrivals_ok, "never connected": table.dial_timeouts,
        "no answer in time": table.request_timeouts, "other errors": table.other_errors,
        "last answer, s": table.last_ok_s})


def server_table(table: pd.DataFrame) -> Markdown:
    """Every step from the server's side: what it held, its files, threads and memory, and the limit the data names."""
    return _people(table, {
        "Java": table.java, "most connections held (kernel's count)": table.peak_connections,
        "most in accept queue": table.accept_queue_max, "most open files": table.peak_open_files,
        "“Too many open files” logged": table.emfile_logged, "JVM threads": table.peak_threads,
        "MiB at peak": table.rss_peak / 2**20, "KiB per connection": table.per_connection_bytes / 1024,
        "limit": table.limit})


DOWNLOAD_COLUMNS = {  # the step table's columns as a CSV gives them, named for a reader
    "step": "step", "model": "server", "users": "users", "processes": "k6_processes", "asked": "asked",
    "issued": "issued", "succeeded": "answered", "failed": "failed", "dial_timeouts": "never_connected",
    "request_timeouts": "no_answer_in_time", "other_errors": "other_errors", "predicted_ok": "answered_model",
    "arrivals_ok": "answered_model_measured_arrivals", "start_spread_s": "start_spread_s",
    "first_ok_s": "first_answer_s", "last_ok_s": "last_answer_s", "peak_connections": "most_connections",
    "accept_queue_max": "most_in_accept_queue", "peak_open_files": "most_open_files", "nofile": "open_files_limit",
    "peak_threads": "jvm_threads", "rss_peak": "rss_peak_bytes", "per_connection_bytes": "bytes_per_connection",
    "k6_rss_peak": "k6_rss_peak_bytes", "emfile_logged": "too_many_open_files_logged", "java": "java",
    "limit": "limit"}


def download_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The step table for a reader's CSV: the columns the chapter's tables show, named in words."""
    return table[list(DOWNLOAD_COLUMNS)].rename(columns=DOWNLOAD_COLUMNS)
