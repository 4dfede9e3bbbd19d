"""Chapter 7's sentences: every number computed from the step table (harness.book.chapters.ch7_steps) and the steps'
metadata, so a re-run cannot leave the text stale."""
from __future__ import annotations

import pandas as pd

from harness.book.chapters.ch7_steps import LOAD, MODELS, OPEN_FILES, SERVICE, pick
from harness.book.chapters.ch7_verdicts import held_users
from harness.book.prose import and_list
from harness.lab.spec import FD_RESERVE
from harness.lab.store import ChapterData

MIB = 2**20
CLOSE = 0.005  # the model's count of answered users "close" to the measured one: within this share of the users


def processes(n: int) -> str:
    return f"{n} k6 process" + ("es" if n > 1 else "")


def ch7_setup_sentence(data: ChapterData, table: pd.DataFrame) -> str:
    """The three servers as they ran: versions, threads, the machine's limits."""
    metas = {row.model: data.steps[row.step] for row in table.itertuples()}
    parts = []
    if "platform threads" in metas:
        meta = metas["platform threads"]
        parts.append(f"Tomcat with a pool of {meta['server_info']['tomcat']['maxThreads']:,} platform threads on "
                     f"Java {meta['versions']['java']}")
    if "virtual threads" in metas:
        parts.append(f"the same server on virtual threads, on Java {metas['virtual threads']['versions']['java']} "
                     "(virtual threads need 21 or later)")
    if "event loop" in metas:
        flux = metas["event loop"]["services"][SERVICE]
        parts.append(f"Spring WebFlux {flux['version']} on Reactor Netty {flux['reactor_netty']} with "
                     f"{flux['event_loop_threads']} event-loop threads, on Java {flux['java'].split('+')[0]}")
    machine = next(iter(metas.values()))["machine"] if metas else {}
    return (f"The three servers: {and_list(parts)}. Each is one process on this machine's {machine.get('cores')} cores, "
            f"with the same {machine.get('nofile_limit', 0):,} open files, and k6 runs beside them.")


def held_rows(table: pd.DataFrame) -> tuple[int, list[pd.Series]]:
    """The most users every model answered in full, and each model's step there."""
    users = held_users(table)
    return users, [r for m in MODELS if (r := pick(table, m, users)) is not None]


def ch7_knobs_sentence(data: ChapterData, table: pd.DataFrame) -> str:
    """The users, Tomcat's settings as the server reported them, the kernel's queue and the open-files limit."""
    tomcat = next((data.steps[r.step]["server_info"]["tomcat"] for r in table.itertuples()
                   if r.model == "platform threads"), None)
    if tomcat is None:
        return ""
    machine = data.steps[table.step.iloc[0]]["machine"]
    nofile, somaxconn = machine["nofile_limit"], machine["somaxconn"]
    return (f"{table.users.min():,} to {table.users.max():,} users arrive at once, one request each. The Tomcat steps "
            f"keep the article's F000-k settings: {tomcat['maxThreads']:,} threads, `max-connections` "
            f"{tomcat['maxConnections']:,} (how many sockets Tomcat keeps open at once) and an `accept-count` (the "
            f"kernel's queue of connections Tomcat has not yet taken) of {tomcat['acceptCount']:,}, not the article's "
            f"5000, which Linux would cap at its `net.core.somaxconn` of {somaxconn:,}; connections kept alive close after "
            f"{tomcat['keepAliveTimeout'] / 1000:g} s idle. Reactor Netty has no connection limit of its own; its "
            f"queue is the kernel's {somaxconn:,} too. Every process here may open {nofile:,} files, so past about "
            f"{nofile - FD_RESERVE:,} users one k6 process cannot open another socket.")


def ch7_waves_sentence(table: pd.DataFrame) -> str:
    """At the most users every model answered: how long each took, against the users' start."""
    users, rows = held_rows(table)
    if not rows:
        return "*No step of this chapter has been measured yet.*"
    spread = max(r.start_spread_s for r in rows)
    said = [f"{r.model} {r.succeeded:,.0f}, the last at second {r.last_ok_s:.0f}" for r in rows]
    return (f"At {users:,} users every server answered every user: {and_list(said)}. k6 needed up to "
            f"{spread:.0f} s to start them all, so no server saw them arrive in one instant.")


def ch7_threads_sentence(table: pd.DataFrame) -> str:
    users = held_users(table)
    rows = {m: pick(table, m, users) for m in MODELS}
    if any(r is None for r in rows.values()):
        return ""
    pool, virtual, loop = rows.values()
    return (f"The pool of platform threads answered in waves: its JVM ran {pool.peak_threads:,.0f} threads and the "
            f"last user waited until second {pool.last_ok_s:.0f}. On virtual threads the JVM ran "
            f"{virtual.peak_threads:,.0f} threads for {virtual.users:,} requests in flight, and the event loop "
            f"{loop.peak_threads:,.0f}: a request waiting on a virtual thread or a timer holds no thread of the "
            f"operating system.")


def ch7_memory_sentence(table: pd.DataFrame) -> str:
    users, rows = held_rows(table)
    if not rows:
        return ""
    said = [f"{r.model} {r.per_connection_bytes / 1024:,.0f} KiB ({r.rss_peak / MIB:,.0f} MiB at its peak)"
            for r in rows]
    k6 = table[table.users == users].per_user_k6_bytes
    return (f"What each held connection cost the serving process at {users:,} users (its resident memory's growth "
            f"from before the load to the moment it held the most connections, over those connections; garbage not "
            f"yet collected counts too): {and_list(said)}. A k6 user cost k6 {k6.min() / 1024:,.0f}–"
            f"{k6.max() / 1024:,.0f} KiB.")


def ch7_limit_sentence(table: pd.DataFrame) -> str:
    """Past the open files: what each model did at the most users, named from data."""
    most = table.users.max()
    rows = [r for m in MODELS if (r := pick(table, m, most)) is not None]
    if not rows or not any(r.limit in (OPEN_FILES, LOAD) for r in rows):
        return ""
    said = [f"{r.model} answered {r.succeeded:,.0f} of {r.asked:,.0f} (most connections {r.peak_connections:,.0f}, "
            f"most open files {r.peak_open_files:,.0f}); {r.dial_timeouts:,.0f} users never connected and "
            f"{r.request_timeouts:,.0f} connected but got no answer in time" for r in rows]
    at_files = [r.model for r in rows if r.limit == OPEN_FILES]
    logged = [f"{r.model} {r.emfile_logged:,}" for r in rows]
    return (f"At {most:,} users ({processes(rows[0].processes)}): " + "; ".join(said) + ". "
            + (f"The limit the data names for {and_list(at_files)} is the process's open files: at "
               f"{rows[0].nofile:,} it can accept no more sockets, whatever its max-connections. How often each "
               f"logged \"Too many open files\": {and_list(logged)}." if at_files else ""))


def ch7_model_sentence(table: pd.DataFrame) -> str:
    """How the model's count of answered users compares with the measured ones."""
    if table.empty:
        return ""
    def fit(column: str) -> tuple[int, pd.Series]:
        gap = (table.succeeded - table[column]).abs() / table.asked
        return int((gap <= CLOSE).sum()), table.loc[gap.idxmax()]
    (at_once, worst), (arrived, worst_arrived) = fit("predicted_ok"), fit("arrivals_ok")
    missed = table[(table.succeeded - table.arrivals_ok).abs() / table.asked > CLOSE]
    more = missed[missed.arrivals_ok > missed.succeeded]
    return (f"Predicted before the run, with every user arriving at once, the model's count of answered users was "
            f"within {CLOSE:.1%} of the users in {at_once} of {len(table)} steps; the furthest was {worst.step} "
            f"({worst.succeeded:,.0f} answered, {worst.predicted_ok:,.0f} predicted). k6 takes seconds to start tens "
            f"of thousands of users, and a user who arrives after Tomcat's keep-alive timeout has freed a slot gets "
            f"in: fed the measured arrivals, the model was that close in {arrived} of {len(table)}, the furthest "
            f"{worst_arrived.step} ({worst_arrived.arrivals_ok:,.0f} predicted). Of the {len(missed)} it still "
            f"misses, it predicted more answers than came in {len(more)}"
            + (f" ({and_list(more.step)}): at the open-files limit Tomcat's acceptor does not retry at once but "
               "waits, longer after each failure, and the users queued behind it wait with it" if len(more) else "")
            + ".")


def ch7_generator_sentence(table: pd.DataFrame) -> str:
    biggest = table.loc[table.users.idxmax()]
    return (f"The load generator has the same limit: k6 holds one socket per user, so {biggest.users:,} users took "
            f"{processes(biggest.processes)}, each with its own {biggest.nofile:,} open files and its own source "
            f"address, and {biggest.k6_rss_peak / 2**30:,.1f} GiB of memory between them.")


def ch7_queue_sentence(table: pd.DataFrame) -> str:
    """Chapter 3's ceiling (max-connections + accept-count + 1) with max-connections past the open files."""
    users = held_users(table)
    above = table[table.users > users]
    if above.empty:
        return ""
    full = above[above.accept_queue_max >= above.backlog]
    most = above.loc[(above.peak_connections + above.accept_queue_max).idxmax()]
    return (f"Above {users:,} users the kernel's accept queue filled to its backlog ({above.backlog.max():,.0f}, and "
            f"one more) in {len(full)} of {len(above)} steps. In chapter 3's ceiling, max-connections + accept-count "
            f"+ 1, the open files take max-connections' place: the most a server held and queued was "
            f"{most.peak_connections + most.accept_queue_max:,.0f} ({most.step}; each the most sampled, not always at "
            f"the same instant), against {most.nofile + most.backlog + 1:,.0f} open files + accept-count + 1.")

