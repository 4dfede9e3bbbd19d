"""Chapter 2's checks: what the book claims of its lab, each judged on the chapter's data, and what follows.
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from harness.book.chapters.ch2_lab import (
    MIB,
    SERIES,
    SPIKE_S,
    batch_table,
    first_overflow,
    memory_costs,
    memory_table,
    noise_summary,
    noise_table,
    overflow_table,
    recorded_machine,
    redeploy_table,
    runs_table,
    sampler_cost_table,
    series_knob,
    spike_limit,
    start_table,
    steps_with,
)
from harness.book.prose import words
from harness.book.verdict import Verdict
from harness.lab.samplers import SocketSampler
from harness.lab.store import ChapterData

# What the checks allow (named so the chapter can say them):
ISSUED_TOLERANCE = 0.15  # constant-vus issued against per-vu users started in 1 s: two runs, same machine


K6_MEMORY_SHARE = 0.25  # k6 is "no limit" while its peak stays under this share of the machine's memory


BATCH_SPREAD_GOAL_S = 2.0  # the lab's goal (issue 13): a spike's requests all in flight within 2 s in batch mode


REDEPLOY_GOAL_MS = 3000  # the lab's redeploy goal (issue 2): a chapter of 40 steps spends < 2 min starting


WAVE_SLACK_S = 0.25  # unsampled wave times may lie this far outside the sampled runs' range


FAILED_SLACK = 0.01  # … and failure counts this share of the requests


SAMPLER_BUDGET = {1000: 0.05, 15000: 0.15}  # share of one core the samplers may use, up to N connections


@dataclass(frozen=True)
class Check:
    claim: str  # what the book says of its lab
    measured: str  # the numbers behind it
    holds: bool

    def __post_init__(self):
        object.__setattr__(self, "holds", bool(self.holds))  # numpy's bool_ prints oddly in a table


def checks(data: ChapterData, headline_verdict: Callable[[ChapterData], Verdict]) -> list[Check]:
    """Every claim chapter 2 makes of the lab, with the numbers and whether they bear it out. `headline_verdict` is
    chapter 3's rule for its headline step (F000-f), judged here on each repeat of that step; it is passed in so
    that this chapter's module does not import chapter 3's."""
    starts = start_table(data)
    return [check_spike(starts), *batch_checks(data), check_constant_vus(starts), check_acceptor(data), check_k6_memory(data),
            check_files_before_memory(data), check_redeploy(data), *check_samplers(data),
            check_verdict_repeats(data, headline_verdict)]


def check_spike(starts: pd.DataFrame) -> Check:
    hold = starts[starts.series == SERIES["hold-"]].sort_values("users")
    limit = spike_limit(starts)
    spreads = ", ".join(f"{r.users:,}: {r.spread_s:.1f} s" for r in hold.itertuples())
    return Check(f"k6 starts every user of a spike within {SPIKE_S:.0f} s, at every N chapter 3 uses",
                 f"last user's first request after {spreads}; a spike up to N = {limit or 0:,}",
                 bool(len(hold)) and limit == hold["users"].max())


def batch_checks(data: ChapterData) -> list[Check]:
    """The batch mode's check, once its steps have run: before, the chapter makes no claim of it."""
    return [check_batch_spike(data)] if steps_with(data, "batch-") else []


def check_batch_spike(data: ChapterData) -> Check:
    table = batch_table(data).sort_values("users")
    spreads = ", ".join(f"{r.users:,}: {r.batch_spread_s:.1f} s (one VU per user: {r.vus_spread_s:.1f} s)"
                        for r in table.itertuples())
    return Check(f"with `http.batch`, k6 starts every user of a spike within {BATCH_SPREAD_GOAL_S:g} s, at every N",
                 f"last user's first request after {spreads or 'no batch step'}",
                 bool(len(table)) and bool((table["batch_spread_s"] <= BATCH_SPREAD_GOAL_S).all()))


def check_constant_vus(starts: pd.DataFrame) -> Check:
    """constant-vus for 1 s issues one request per user k6 started within that second (from the hold runs)."""
    cv = starts[starts.series == SERIES["cv-"]].set_index("users")
    hold = starts[starts.series == SERIES["hold-"]].set_index("users")
    both = cv.index.intersection(hold.index)
    pairs = [(n, int(cv.loc[n, "issued"]), int(hold.loc[n, "started_1s"])) for n in both]
    ok = bool(pairs) and all(abs(issued - started) <= ISSUED_TOLERANCE * started for _, issued, started in pairs)
    text = "; ".join(f"{n:,}: issued {i:,}, started in 1 s {s:,}" for n, i, s in pairs)
    return Check(f"constant-vus for 1 s issues as many requests as per-vu users start within 1 s (±{ISSUED_TOLERANCE:.0%})",
                 text, ok)


def check_verdict_repeats(data: ChapterData, f000_f: Callable[[ChapterData], Verdict]) -> Check:
    """Chapter 3's headline verdict (F000-f), computed on each repeat of its step on its own: does noise flip it?"""
    pass

    runs = steps_with(data, "noise-")  # the unsampled runs have no `ss` counts, half of what F000-f judges
    verdicts = {step: f000_f(as_step(data, step, "f-10k-pv")).verdict for step in runs}
    counts = pd.Series(verdicts).value_counts()
    return Check("chapter 3's headline verdict (F000-f) comes out the same in every (sampled) repeat of its step",
                 ", ".join(f"{n} × {verdict}" for verdict, n in counts.items()) or "no repeats", len(counts) == 1)


def as_step(data: ChapterData, step: str, new_id: str) -> ChapterData:
    """One step of the data under another id (a repeat judged as the step it copies)."""
    one = data.only([step])
    tables = {name: getattr(one, name).assign(step=new_id) for name in ("requests", "ss", "actuator", "process", "startup")}
    return ChapterData(data.chapter, {new_id: one.steps[step] | {"id": new_id}}, **tables)


def check_acceptor(data: ChapterData) -> Check:
    """Chapter 3's model takes Tomcat's acceptor as instant: no overflow while max-connections has room."""
    table = overflow_table(data)
    hold = table[table.series == SERIES["hold-"]].sort_values("users")
    text = ", ".join(f"{r.users:,}: {r.listen_overflows:,}" for r in hold.itertuples())
    return Check("Tomcat accepts a spike as fast as it arrives while max-connections has room (chapter 3's model assumes so)",
                 f"accept-queue overflows (accept-count {series_knob(data, 'hold-', 'TOMCAT_ACCEPT_COUNT'):,}, max-connections "
                 f"{series_knob(data, 'hold-', 'TOMCAT_MAX_CONNECTIONS'):,}) per N: {text or 'no step'}",
                 bool(len(hold)) and first_overflow(table) is None)


def check_k6_memory(data: ChapterData) -> Check:
    table = memory_table(data)
    biggest = table.sort_values(["users", "k6_mib"]).iloc[-1] if len(table) else None
    memory = recorded_machine(data)["memory_bytes"] / MIB
    if biggest is None:
        return Check("k6's memory is no limit on this machine", "no hold or queue step", False)
    share = biggest["k6_mib"] / memory
    return Check(f"k6's memory is no limit here: its peak stays under {K6_MEMORY_SHARE:.0%} of the machine's memory",
                 f"{biggest['users']:,} users: k6 peaked at {biggest['k6_mib']:,.0f} MiB, {share:.1%} of {memory / 1024:.0f} GiB",
                 share < K6_MEMORY_SHARE)


def memory_bound_users(data: ChapterData) -> float:
    """How many users memory alone would allow: the machine's memory over k6's and the server's cost of one."""
    costs = memory_costs(memory_table(data))
    per_user_kib = costs["k6_per_user_kib"] + costs["server_per_connection_and_thread_kib"]
    return recorded_machine(data)["memory_bytes"] / 1024 / per_user_kib


def check_files_before_memory(data: ChapterData) -> Check:
    nofile = recorded_machine(data)["nofile_limit"]
    users = memory_bound_users(data)
    return Check("the open-files limit, not memory, caps how many users one machine can hold",
                 f"memory allows ≈ {users:,.0f} users at the measured cost (k6 + a server thread and connection each); "
                 f"open files allow < {nofile:,} per process", users > nofile)


def check_redeploy(data: ChapterData) -> Check:
    table = redeploy_table(data)
    cds = table[table.launch == "cds"]
    if cds.empty:
        return Check(f"a redeploy takes under {REDEPLOY_GOAL_MS / 1000:.0f} s (median, with CDS)", "no CDS redeploy step", False)
    median = float(cds["median_ms"].iloc[0])
    others = "; ".join(f"{r.launch}: median {r.median_ms:,.0f} ms" for r in table[table.launch != "cds"].itertuples())
    return Check(f"a redeploy takes under {REDEPLOY_GOAL_MS / 1000:.0f} s (median, with CDS)",
                 f"cds: median {median:,.0f} ms ({cds['min_ms'].iloc[0]:,.0f}–{cds['max_ms'].iloc[0]:,.0f}); {others}",
                 median < REDEPLOY_GOAL_MS)


def check_samplers(data: ChapterData) -> list[Check]:
    return [check_sampler_cost(data), check_sampling_changes_nothing(data)]


def check_sampler_cost(data: ChapterData) -> Check:
    table = sampler_cost_table(data)
    parts, ok = [], bool(len(table))
    lower = 0
    for upto, budget in sorted(SAMPLER_BUDGET.items()):
        rows = table[(table.connections > lower) & (table.connections <= upto)]
        worst = rows["core_share"].max() if len(rows) else None
        ok &= worst is not None and worst <= budget
        parts.append(f"≤ {upto:,} connections: " + (f"at most {worst:.1%}" if worst is not None else "no step"))
        lower = upto
    return Check("the samplers cost little CPU: " + ", ".join(f"≤ {b:.0%} of a core up to {u:,} connections"
                                                          for u, b in sorted(SAMPLER_BUDGET.items())),
                 "; ".join(parts), ok)


def check_sampling_changes_nothing(data: ChapterData) -> Check:
    table = noise_table(data)
    claim = "sampling does not change the results: runs without samplers fall within the sampled runs' range"
    if table.empty or table["sampled"].all() or (~table["sampled"]).all():
        return Check(claim, "needs noise-* and unsampled-* runs", False)
    runs = runs_table(table)
    on, off = runs[runs.sampled], runs[~runs.sampled]
    asked = statistics.median(meta["requests"]["asked"] for step, meta in data.steps.items() if step in set(runs.step))
    slack = FAILED_SLACK * asked
    failed_ok = off["failed"].between(on["failed"].min() - slack, on["failed"].max() + slack).all()
    waves = noise_summary(table).dropna()
    waves_ok = ((waves["unsampled_min_s"] >= waves["min_s"] - WAVE_SLACK_S)
                & (waves["unsampled_max_s"] <= waves["max_s"] + WAVE_SLACK_S)).all()
    measured = (f"failed: sampled {on['failed'].min():,}–{on['failed'].max():,}, unsampled {off['failed'].min():,}–"
                f"{off['failed'].max():,} (slack {slack:,.0f}); wave times outside the sampled range by at most "
                f"{_worst_outside(waves):.2f} s (slack {WAVE_SLACK_S} s)")
    return Check(claim, measured, bool(failed_ok and waves_ok))


def _worst_outside(waves: pd.DataFrame) -> float:
    below = (waves["min_s"] - waves["unsampled_min_s"]).clip(lower=0)
    above = (waves["unsampled_max_s"] - waves["max_s"]).clip(lower=0)
    return float(max(below.max(), above.max(), 0.0)) if len(waves) else 0.0


def meaning_sentences(data: ChapterData) -> str:
    """The consequences for the other chapters, each worded from the number it rests on."""
    starts = start_table(data)
    hold = starts[starts.series == SERIES["hold-"]].sort_values("users")
    limit = spike_limit(starts)
    costs = memory_costs(memory_table(data))
    sampler = sampler_cost_table(data)
    redeploy = redeploy_table(data)
    machine = recorded_machine(data)
    lines = []
    if len(hold):
        last = hold.iloc[-1]
        if limit == last["users"]:
            lines.append(f"- **Every spike is a spike**: k6 starts all {last['users']:,} users within {SPIKE_S:g} s.")
        else:
            lines.append(f"- **Spikes are spikes up to {limit or 0:,} users.** Beyond, k6 needs up to {last['spread_s']:.1f} s "
                         f"to start {last['users']:,}; chapter 3 feeds its model the measured arrival times and shows both "
                         "executors for that reason.")
    overflow = first_overflow(overflow_table(data))
    if overflow is not None:
        lines.append(f"- **Tomcat's acceptor is slower than a spike from {overflow:,} users on.** With max-connections far "
                     f"away, the kernel's accept queue (accept-count {series_knob(data, 'hold-', 'TOMCAT_ACCEPT_COUNT'):,}) still "
                     f"overflowed: the one acceptor thread shares {words(machine['cores'])} cores with k6 and thousands of "
                     "workers. Those clients' SYNs were dropped and sent again 1, 3 or 7 s later. Chapter 3's model accepts "
                     "instantly, so where it predicts no overflow its times are a lower bound.")
    per_user = costs["k6_per_user_kib"] + costs["server_per_connection_and_thread_kib"]
    bound = "open files, not memory," if memory_bound_users(data) > machine["nofile_limit"] else "memory, before open files,"
    lines.append(f"- **{bound.capitalize()} limit how many users one machine holds**: {costs['k6_per_user_kib']:,.0f} KiB per "
                 f"k6 user and {costs['server_per_connection_and_thread_kib']:,.0f} KiB per server thread with its connection "
                 f"({per_user:,.0f} KiB a user) against {machine['memory_bytes'] / 2**30:.0f} GiB, and "
                 f"{machine['nofile_limit']:,} open files per process.")
    budgeted = sampler[sampler.socket_counts != "every tick"] if len(sampler) else sampler
    sampler = budgeted if len(budgeted) else sampler  # the samplers as the lab runs them now, when measured
    if len(sampler):
        worst = sampler.loc[sampler["core_share"].idxmax()]
        effect = check_sampling_changes_nothing(data)
        lines.append(f"- **The samplers take at most {worst['core_share']:.1%} of a core** (at {worst['connections']:,.0f} "
                     "connections); the runs without them " + ("land inside the sampled runs' spread." if effect.holds
                                                              else "do not all land inside the sampled runs' spread: "
                                                              "see the checks before trusting a sampled count."))
    if len(redeploy):
        best = redeploy.sort_values("median_ms").iloc[0]
        lines.append(f"- **A fresh server per step costs {best['median_ms'] / 1000:.1f} s** ({best['launch']}, median): "
                     f"{40 * best['median_ms'] / 60000:.1f} minutes of a forty-step chapter go into starting servers.")
    return "\n".join(lines)


def memory_sentence(data: ChapterData) -> str:
    costs = memory_costs(memory_table(data))
    users = memory_bound_users(data)
    batch = costs["k6_per_batch_user_kib"]
    batch_text = ("" if batch != batch else  # NaN: no batch steps
                  f" (**{batch:,.0f} KiB** when `http.batch` carries the users: a user is then a request, not a VU)")
    return (f"Measured here: k6 needs **{costs['k6_per_user_kib']:,.0f} KiB per user**{batch_text}; the server "
            f"**{costs['server_per_connection_kib']:,.0f} KiB per held connection** and "
            f"**{costs['server_per_thread_kib']:,.0f} KiB more** when the connection has a thread of its own. "
            f"At that cost the machine's memory would hold about {users:,.0f} users with a thread each, "
            f"{'more' if users > recorded_machine(data)['nofile_limit'] else 'fewer'} than the "
            f"{recorded_machine(data)['nofile_limit']:,} open files one process may have.")


def noise_sentence(data: ChapterData) -> str:
    table = noise_table(data)
    runs = runs_table(table)
    sampled = runs[runs.sampled]
    if sampled.empty:
        return "*No noise runs yet.*"
    waves = noise_summary(table)
    failed = sampled["failed"]
    return (f"Over {len(sampled)} runs the failures range from {failed.min():,} to {failed.max():,} "
            f"(median {failed.median():,.0f}; the model says {int(sampled['model_failed'].iloc[0]):,}), a spread of "
            f"{(failed.max() - failed.min()) / max(failed.median(), 1):.0%} of the median; a wave's time varies by at most "
            f"{waves['range_s'].max():.2f} s. The book quotes a repeated step's median and range; whether chapter 3's "
            f"verdict on this step survives the spread is the last check below.")


def sampler_sentence(data: ChapterData) -> str:
    """The samplers' cost at the largest step, against its budget, and whether switching them off changed anything."""
    table = sampler_cost_table(data)
    if table.empty:
        return "*No sampled steps yet.*"
    worst = table.loc[table["core_share"].idxmax()]
    cost, effect = check_sampler_cost(data), check_sampling_changes_nothing(data)
    return (f"At {worst['connections']:,.0f} connections the samplers took {worst['core_share']:.1%} of one core "
            f"({'within' if cost.holds else 'over'} the budget the check below sets); `ss`, which lists every socket, and `nstat` took "
            f"{worst['ss_cpu_s']:.1f} of its {worst['ss_cpu_s'] + worst['actuator_cpu_s'] + worst['process_cpu_s']:.1f} CPU s. "
            + ("The runs without samplers land inside the sampled runs' spread, in failures and in wave times: the cost "
               "does not show in the result at this size." if effect.holds else
               "The runs without samplers do not all land inside the sampled runs' spread: the samplers may move the result.")
            + budgeted_sampler_sentence(table))


def budgeted_sampler_sentence(table: pd.DataFrame) -> str:
    """What the steps run with the socket sampler's CPU budget cost; where none were, that the lab has one now."""
    budgeted = table[table.socket_counts != "every tick"]
    if budgeted.empty:
        return (f" These steps counted every socket at every tick. The lab now counts them through sock_diag and keeps "
                f"the socket sampler within {SocketSampler.cpu_budget:.0%} of one core, skipping ticks when a count is "
                "costly; steps run that way show here with their own cost.")
    if len(budgeted) == len(table):
        return ""
    worst = budgeted.loc[budgeted["core_share"].idxmax()]
    return (f" Those steps counted every socket at every tick. The lab now counts them through sock_diag and keeps the "
            f"socket sampler {worst['socket_counts']}, skipping ticks when a count is costly: in the "
            f"{words(len(budgeted))} step{'s' if len(budgeted) > 1 else ''} run that way the samplers took at most {worst['core_share']:.1%} of one core "
            f"(at {worst['connections']:,.0f} connections).")
