"""Chapter 2's setup and narrative sentences, worded from the steps as they ran (step.json) and what they measured, so
that a re-run rewrites them. The checks' own sentences live in ch2_checks.
"""
from __future__ import annotations

import statistics

import pandas as pd

from harness.book.chapters.ch2_lab import (
    SERIES,
    SPIKE_S,
    batch_table,
    first_overflow,
    first_starts_s,
    noise_table,
    overflow_table,
    recorded_machine,
    repeated_users,
    runs_table,
    series_knob,
    spike_limit,
    start_table,
    steps_with,
)
from harness.book.prose import listed, span, words
from harness.lab.spec import SERVER_DEFAULTS
from harness.lab.store import ChapterData
from harness.lab.units import duration_ms


def _load(data: ChapterData, prefix: str, key: str):
    """A load setting as a series' steps ran it (the most common value)."""
    values = [data.steps[s]["config"]["load"].get(key) for s in steps_with(data, prefix)]
    return statistics.mode(values) if values else None


def _seconds(text: str | None) -> float:
    return duration_ms(text) / 1000 if text else float("nan")


def cores_sentence(data: ChapterData) -> str:
    return (f"The load generator, the server and the samplers all share the same {words(recorded_machine(data)['cores'])} "
            "cores, so each of them can bend what the others measure.")


def wave_s(data: ChapterData) -> float:
    """One wave of chapter 3's headline step (its sleep), from the repeats of that step run here."""
    runs = steps_with(data, "noise-") + steps_with(data, "unsampled-")
    return data.steps[runs[0]]["model"]["service_ms"] / 1000 if runs else SERVER_DEFAULTS["SLEEP_MS"] / 1000


def setup_list(data: ChapterData) -> str:
    """The series of steps, each with the numbers it ran with, and the model's prediction for hold-N."""
    hold = [data.steps[s]["config"]["load"]["vus"] for s in steps_with(data, "hold-")]
    sleep_s = series_knob(data, "hold-", "SLEEP_MS") / 1000
    spread = start_table(data).query("series == @SERIES['hold-']")["spread_s"].max()
    held = (f"longer than the {spread:.1f} s k6 needed at most to start every user, so at the peak the server holds all N at "
            "once, each on its own thread" if spread < sleep_s else
            f"shorter than the {spread:.1f} s k6 needed to start every user: at the largest N not every user is held at once")
    queue = series_knob(data, "queue-", "TOMCAT_MAX_THREADS")
    pool = "Spring Boot's " if queue == SERVER_DEFAULTS["TOMCAT_MAX_THREADS"] else ""
    items = [
        f"- **hold-N**: N users ({listed(hold)}), one request each (`{_load(data, 'hold-', 'executor')}`), on a server "
        f"with N threads and room for {series_knob(data, 'hold-', 'TOMCAT_MAX_CONNECTIONS'):,} connections. Each request "
        f"sleeps {sleep_s:g} s, {held}.",
        f"- **queue-N**: the same users on {pool}{queue:,} threads: the server holds every connection, but only {queue:,} "
        f"requests run; the rest wait inside Tomcat. k6 gives up after {_seconds(_load(data, 'queue-', 'request_timeout')):g} s. "
        f"The difference to hold-N is what the other N − {queue:,} threads cost.",
        *batch_item(data),
        f"- **cv-N**: the articles' executor, `constant-vus` for {_seconds(_load(data, 'cv-', 'duration')):g} s, on the "
        "hold-N server. A user that k6 has not started within that time sends nothing.",
    ]
    redeploy = steps_with(data, "redeploy-")
    if redeploy:
        starts = {data.steps[s]["config"].get("starts") for s in redeploy}
        items.append(f"- **{', '.join(redeploy)}**: no load; {' or '.join(words(n) for n in sorted(starts))} fresh servers "
                     "each, timed from the start of the JVM to Actuator's first `UP`, with the Class Data Sharing archive "
                     "that `invoke setup` trains and without.")
    items.append(repeats_item(data))
    return "\n".join(items) + (
        f"\n\nThe model's predictions for hold-N are simple: every user answered {sleep_s:g} s after it arrived.")


def batch_item(data: ChapterData) -> list[str]:
    """The batch-N series in the setup list (none when the chapter has no batch steps)."""
    table = batch_table(data)
    if table.empty:
        return []
    return [f"- **batch-N**: hold-N's spike at {listed(table['users'])} users, sent through `http.batch` "
            "(`spike_mode = \"batch\"`): a few k6 VUs each open their share of the users as parallel requests, one "
            f"connection each ({span(table['batch_k6_vus'], lambda v: f'{v:,}')} VUs instead of N)."]


def batch_sentence(data: ChapterData, goal_s: float) -> str:
    """How much faster http.batch starts a spike than one VU per user, whether it meets the lab's goal at the largest N,
    and what the two cores were doing meanwhile (the mechanism when it does not)."""
    table = batch_table(data).sort_values("users")
    if table.empty:
        return ("*This chapter's data has no batch-N steps yet (hold-N's spike with `spike_mode = \"batch\"`): they "
                "join the spec with its next full run, so that both modes are measured on one machine, the same day.*")
    largest = table.iloc[-1]
    cores = recorded_machine(data)["cores"]
    busy = largest["k6_cores"] + largest["server_cores"]
    faster, slower = table[table.batch_spread_s < table.vus_spread_s], table[table.batch_spread_s >= table.vus_spread_s]
    pace = ("faster at every N" if slower.empty else "no faster at any N" if faster.empty else
            f"faster at {listed(faster['users'])} users and no faster at {listed(slower['users'])}")
    text = (f"Sent through `http.batch`, the same spikes start {pace}: at {int(largest['users']):,} users the last one "
            f"started after {largest['batch_spread_s']:.1f} s, against {largest['vus_spread_s']:.1f} s with one VU per "
            "user. ")
    if largest["batch_spread_s"] <= goal_s:
        return text + f"That is within the lab's goal of {goal_s:g} s for a spike."
    verdict = ("the machine was saturated: starting users faster needs more cores, not another way to start them"
               if busy >= 0.8 * cores else "the cores had room, so CPU is not what holds the start back")
    return text + (f"The lab's goal was {goal_s:g} s. While those users started, k6 used {largest['k6_cores']:.1f} and the "
                   f"server {largest['server_cores']:.1f} of the {words(cores)} cores. {verdict[0].upper()}{verdict[1:]}.")


def repeats_item(data: ChapterData) -> str:
    """The repeated headline step: what it is (from its recorded config) and how often it ran, sampled and not."""
    sampled, unsampled = steps_with(data, "noise-"), steps_with(data, "unsampled-")
    if not sampled:
        return "- **noise-*, unsampled-***: chapter 3's headline step, repeated (no runs yet)."
    config = data.steps[sampled[0]]["config"]
    server = config["server"]
    knob = {k: server.get(k, SERVER_DEFAULTS[k]) for k in ("TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS")}
    return (f"- **noise-1 … {len(sampled)}, unsampled-1 … {len(unsampled)}**: chapter 3's headline step "
            f"({config['load']['vus']:,} users, {knob['TOMCAT_MAX_THREADS']:,} threads, max-connections "
            f"{knob['TOMCAT_MAX_CONNECTIONS']:,}; `same_as = \"{config.get('same_as', '?')}\"` in the spec, so the two can "
            f"never drift apart), {words(len(sampled))} times as it is and {words(len(unsampled))} times with every sampler off.")


def starts_sentence(data: ChapterData) -> str:
    """How fast k6 started users: up to which N within a second, how long beyond, and where that outlasts a wave."""
    table = start_table(data)
    hold = table[table.series == SERIES["hold-"]].sort_values("users")
    if hold.empty:
        return "*No hold steps yet.*"
    limit, cores, wave = spike_limit(table), words(recorded_machine(data)["cores"]), wave_s(data)
    slow = hold[hold.spread_s > SPIKE_S]
    text = ("k6 starts a virtual user by giving it a goroutine and a JavaScript runtime, and each user's first request opens "
            "a TCP connection. ")
    if slow.empty:
        text += f"Up to {hold['users'].max():,} users that takes less than {SPIKE_S:g} s on {cores} cores."
    else:
        text += ((f"Up to {limit:,} users that takes less than {SPIKE_S:g} s on {cores} cores; beyond, " if limit else
                  f"Even at {hold['users'].min():,} users that takes more than {SPIKE_S:g} s on {cores} cores: ")
                 + f"the users arrive over {span(slow['spread_s'], lambda v: f'{v:.1f}')} s, because k6 shares the cores "
                 "with a server that is accepting the same connections.")
    ramps = hold[hold.spread_s > wave]
    if ramps.empty:
        return text + (f" No step's last user starts later than one wave of chapter 3 ({wave:g} s), so every hold step "
                       "is a spike as chapter 3's model sees one.")
    return text + (f" Where the last user starts later than one wave of chapter 3 ({wave:g} s), as at "
                   f"{listed(ramps['users'])} users, the first responses come back before the last requests go out: the "
                   "step is a ramp, not a spike, and only a model fed with the measured arrival times (chapter 3's model "
                   "is) can be compared with it.")


def overflow_sentence(data: ChapterData) -> str:
    """Whether the hold-N server's accept queue overflowed although max-connections had room."""
    room = series_knob(data, "hold-", "TOMCAT_MAX_CONNECTIONS")
    first = first_overflow(overflow_table(data))
    if first is None:
        return f"The hold-N server has room for {room:,} connections, and the kernel counted no accept-queue overflows:"
    return (f"The hold-N server has room for {room:,} connections, yet from {first:,} users on the kernel counted "
            "accept-queue overflows:")


def acceptor_sentence(data: ChapterData) -> str:
    """Why the accept queue overflows (one acceptor thread on few cores), and the constant-vus requests k6 cut off."""
    table = overflow_table(data)
    if first_overflow(table) is None:
        return ""
    accept = series_knob(data, "hold-", "TOMCAT_ACCEPT_COUNT")
    text = ("Tomcat takes connections off the kernel's accept queue with one acceptor thread. When thousands of connections "
            f"arrive within a second, on {words(recorded_machine(data)['cores'])} cores shared with k6 and with thousands "
            f"of worker threads, that thread falls behind, the queue of accept-count + 1 ({accept + 1:,}) fills, and the "
            "kernel drops further SYNs; the clients send them again 1, 3 and 7 s later. Those users arrive at the server "
            "later than k6 started them.")
    cut = table[(table.series == SERIES["cv-"]) & (table.interrupted > 0)]
    if cut.empty:
        return text
    stop = _seconds(_load(data, "cv-", "graceful_stop"))
    return text + (f" The {listed(cut['interrupted'])} requests cut off by k6 (`interrupted`) in "
                   f"{'the constant-vus step' if len(cut) == 1 else 'constant-vus steps'} at {listed(cut['users'])} users "
                   f"are such users: they got a thread too late to finish within the {stop:g} s `gracefulStop`.")


def repeats_intro(data: ChapterData) -> str:
    users = repeated_users(data)
    if users is None:
        return "No constant-vus step ran again yet."
    again = steps_with(data, "again-cv-")
    return f"At {users:,} users, cv-{users} ran {words(len(again))} more times to separate the executor from chance:"


def sampler_setup_sentence(data: ChapterData) -> str:
    """What the samplers do, how often, and how often the headline step ran without them."""
    interval = statistics.mode(m["config"]["system"].get("sample_interval_ms") for m in data.steps.values())
    off = len(steps_with(data, "unsampled-"))
    return (f"Every {interval:,} ms the samplers run `ss` and `nstat`, scrape Actuator and read `/proc` for the server and "
            "k6. `ss` lists every socket on the port, so its cost grows with the connections held; so does counting a "
            f"process's open files. On {words(recorded_machine(data)['cores'])} cores, CPU the samplers take is CPU k6 and "
            "Tomcat do not get, so the question is whether it changes the result. Chapter 3's headline step answers it, "
            f"run {words(off)} times with every sampler off:")


def lag_sentence(data: ChapterData) -> str:
    """How far measured waves lag the model's, beside how long k6 took to start the users of those runs."""
    table = noise_table(data)
    if table.empty:
        return "*No noise runs yet.*"
    lag = (table["t_s"] - table["model_s"]).dropna()
    starts = pd.Series([first_starts_s(data, s).max() for s in runs_table(table)["step"]])
    users = data.steps[table["step"].iloc[0]]["config"]["load"]["vus"]
    sampled = int(runs_table(table)["sampled"].sum())
    return (f"The same chart is the answer to the fifth question. The model here knows only the spec, not when k6 made each "
            f"user arrive, so measured waves lag its {wave_s(data):g} s steps, by {span(lag, lambda v: f'{v:.1f}')} s "
            f"(median {lag.median():.1f} s), while k6 took {span(starts, lambda v: f'{v:.1f}')} s to start the {users:,} "
            f"users of these runs. Per wave, the median and range over the {words(sampled)} sampled runs:")
