"""Your own server's page (chapters/a2-your-server.qmd): each capacity profile `invoke report` wrote
(data/report@<jar>/profile.json, harness.lab.profile), its limits in the order they bind with the model's number
beside the measured one, the setting that moves each and the chapter that explains it, and its ramp against Little's
law; the book's own sample server's limits (the answer page's) are shown beside them by the page."""
from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch0.sources import chapter_section
from harness.book.charts import connection_samples, rps_chart, timeline_chart
from harness.book.prose import and_list, percent
from harness.book.tables import markdown_table
from harness.book.verdict_tables import number
from harness.lab import store
from harness.lab.profile import BEFORE, BEYOND, KNEE, PROFILE_FILE, THREADS, Profile, read_profile

REPORTS = "*@*"  # the folders of runs on a reader's jar: report@<jar> (or <profile>@<jar>), chapterN@<jar>


def profiles() -> dict[str, Profile]:
    """Every profile in the data folder, by its folder's name (report@<jar>, or <profile>@<jar> for another template
    given with --profile), in name order: the folders of runs on a reader's jar that hold a profile.json."""
    folders = sorted(store.data_root().glob(REPORTS))
    return {f.name: read_profile(f) for f in folders if (f / PROFILE_FILE).is_file()}


def see(chapter: str) -> str:
    return f"@{chapter_section(chapter)}"


def limits_frame(profile: Profile) -> pd.DataFrame:
    """The profile's limits in the order they bind: measured, the model's number, the setting that moves it."""
    s, plateau = profile.settings, profile.plateau
    binds = {THREADS: "the worker threads bind first", BEFORE: "something binds before the threads (the CPU, a pool, "
             "a lock)", BEYOND: "more in service than there are threads: not one thread per request"}[profile.binding]
    rows = [
        ("Service time at one user (S)", number(profile.service_ms, "ms"), "–", "the endpoint's own work",
         see("chapter1")),
        ("Requests in service at once", f"{number(profile.in_service)} (the plateau × S, Little's law): {binds}",
         f"{number(s.threads)} (threads.max)",
         "server.tomcat.threads.max", see("chapter1")),
        ("Throughput plateau", f"{number(plateau.answered_per_s, 'requests/s')} ({percent(KNEE)} of it reached first "
         f"at {number(profile.knee.users)} users)", f"{number(profile.little, 'requests/s')} (threads.max / S)", "server.tomcat.threads.max, the "
         "endpoint's service time", see("chapter4")),
    ]
    if s.pool is not None:
        said = ([] if profile.pool_pending is None else [f"{number(profile.pool_pending)} waiting at the plateau"]) + \
            ([] if profile.pool_wait_ms is None else [f"{number(profile.pool_wait_ms, 'ms')} mean wait"])
        waiting = ", ".join(said) or "–"
        rows.append(("Database pool", waiting, f"{number(s.pool)} connections", "spring.datasource.hikari."
                     "maximum-pool-size", see("chapter5")))
    held = "not measured" if profile.ceiling_held is None else f"{number(profile.ceiling_held)} of " \
        f"{number(profile.ceiling_users)} users"
    rows.append(("Connections held at once", held, f"{number(s.ceiling)} (max-connections + accept-count + 1)",
                 "server.tomcat.max-connections, server.tomcat.accept-count", see("chapter3")))
    if profile.memory_per_connection_kib is not None:
        rows.append(("Memory per held connection", number(profile.memory_per_connection_kib, "KiB"), "–",
                     "the JVM's heap and thread stacks", see("chapter2")))
    return pd.DataFrame(rows, columns=["Limit", "Measured", "The model", "The setting that moves it", "Explained in"])


def sources_sentence(profile: Profile) -> str:
    """Where the limits the profile sized its steps by came from, and what it could not measure."""
    s = profile.settings
    said = and_list(f"{name.replace('_', '-')} {number(getattr(s, name))} from {source}"
                    for name, source in s.sources.items())
    notes = " ".join(n[:1].upper() + n[1:] + "." for n in profile.notes)
    return f"The steps were sized by {said}. {notes}".strip()


def ramp_chart(profile: Profile) -> alt.LayerChart:
    """Answered per second at each ramp step (points) on Little's law's line min(users, threads.max) / S."""
    table = pd.DataFrame([{"tool": "k6", "concurrency": p.users, "rps": p.answered_per_s, "rps_model": p.predicted_per_s,
                           "rps_error": p.answered_per_s / p.predicted_per_s - 1, "step": p.step} for p in profile.ramp])
    return rps_chart(table, 1000 / profile.service_ms, profile.settings.threads)


def ceiling_chart(folder: str, profile: Profile) -> alt.FacetChart:
    """The ceiling step's connections on the app's port over time (ss), against max-connections + accept-count + 1."""
    data = store.load_run(folder, "ceiling")
    ceiling = pd.DataFrame([{"step": "ceiling", "series": "ceiling (model)", "value": profile.settings.ceiling}])
    return timeline_chart(connection_samples(data), ceiling, data, "connections · SYNs dropped")


def profile_blocks(folder: str, profile: Profile) -> list:
    """What the page shows of one profile, in order: its heading and limits, then each chart after its caption."""
    jar = Path(profile.jar).name
    return [
        Markdown(f"**How many concurrent requests can {jar} handle?** Measured on `{profile.path}` (data in "
                 f"`data/{folder}/`).\n\n{markdown_table(limits_frame(profile))}\n\n{sources_sentence(profile)}"),
        Markdown(f"*{jar}: answered per second at each step of the ramp (points) against Little's law, "
                 "min(users, threads.max) / S (dashed).*"),
        ramp_chart(profile),
        Markdown(f"*{jar}: connections on its port while the ceiling step's users held theirs, against "
                 "max-connections + accept-count + 1 (dashed).*"),
        ceiling_chart(folder, profile),
    ]
