"""The limits chapter 7's data shows, for the answer page (harness.book.faces.Limit), each with its number from the
data and the section that shows it: what virtual threads and an event loop change (the pool no longer caps the
requests in service), then the limits they leave, in the order they bind as users grow: the open files of each
process (the server's and k6's), then each server model's memory per connection."""
from __future__ import annotations

from harness.book.chapters.ch7 import claims, values
from harness.book.chapters.ch7.runs import CHAPTER, LOOP, MODELS, PLATFORM, VIRTUAL, steps_table
from harness.book.faces import Limit
from harness.book.prose import count, printed_alike
from harness.book.verdict_tables import book_verdicts, number
from harness.lab import store

WAYS_OUT, FILES, MEMORY = 2, 8, 9  # after the thread pool (1); the open files bind before memory on this machine
ANCHORS = {WAYS_OUT: "sec-one-wait-instead-of-waves", FILES: "sec-past-the-open-files-limit",
           MEMORY: "sec-what-a-thread-costs"}


def limits() -> list[Limit]:
    if not (store.data_root() / CHAPTER).is_dir() or not store.complete_steps(CHAPTER):
        return []
    data = store.load(CHAPTER)
    table = steps_table(data)
    if set(MODELS) - set(table.model.astype(str)):
        return []
    setup = values.setup(data, table)
    book = {j.rule.claim: j for j in book_verdicts(CHAPTER, claims.judge())}
    return [ways_out(setup.threads, values.pooled(book)), open_files(setup, table), *memory(table)]


def ways_out(threads: int, pooled: values.Pooled) -> Limit:
    """Virtual threads' requests in service at once (this edition's run), beside the event loop's and the pool's, and
    the same claims as the findings table states them (`pooled`)."""
    c = values.concurrency()
    low, high = values.claims.JUDGED_USERS
    sentence = (f"Virtual threads and an event loop take the thread pool's cap away: at {low:,} and {high:,} users "
                f"{c.virtual:,.0f} requests were in service at once on virtual threads ({c.virtual_threads:,.0f} JVM "
                f"threads) and {c.loop:,.0f} on the event loop ({c.loop_threads:,.0f}), where {threads:,} platform "
                f"threads served at most {c.pool:,.0f}{pooled_clause(c, pooled)}.")
    return Limit(WAYS_OUT, "past a thread per request (virtual threads)", float(c.virtual),
                 "requests in service at once", sentence, CHAPTER, ANCHORS[WAYS_OUT])


def pooled_clause(c: values.Concurrency, pooled: values.Pooled) -> str:
    """Where the findings table pools other runs than this edition's: which numbers are which ("" where they are the
    same runs)."""
    own, book = (c.virtual, c.loop, c.pool), (pooled.virtual, pooled.loop, pooled.pool)
    if printed_alike(own, book):
        return ""
    over = f"pooled over its {pooled.passes} kept passes" if pooled.passes > 1 else "on its kept pass"
    return (f" in this edition's run; the chapter's verdicts, {over}, read {count(pooled.virtual)}, "
            f"{count(pooled.loop)} and {count(pooled.pool)}")


def open_files(s: values.Setup, table) -> Limit:
    p = values.past_limit(table)
    sentence = (f"Every connection is a file, and a process may open {s.nofile:,}: past about {s.usable_files:,} "
                f"connections held at once the server cannot accept another until one closes (it reached "
                f"{p.most_open_files:,} open files, and at {p.users:,} users answered {p.pool_answered:,} on platform "
                f"threads, {p.virtual_answered:,} on virtual threads, "
                f"{p.loop_answered:,} on the event loop), and one k6 process cannot connect another: {p.users:,} "
                f"users took {p.processes} k6 processes.")
    return Limit(FILES, "open files", float(s.nofile), "connections per process", sentence, CHAPTER, ANCHORS[FILES])


NAMED = {PLATFORM: "platform threads", VIRTUAL: "virtual threads", LOOP: "the event loop"}


def memory(table) -> list[Limit]:
    users = max(values.claims.JUDGED_USERS)
    r = values.resident(table, users)
    cost = values.thread_cost()
    found = []
    for model, kib, java in ((PLATFORM, r.pool_kib, r.pool_java), (VIRTUAL, r.virtual_kib, r.virtual_java),
                             (LOOP, r.loop_kib, r.loop_java)):
        sentence = (f"On {NAMED[model]} each held connection cost the server at most {number(kib)} KiB of resident memory "
                    f"at {users:,} users (Java {java}; garbage not yet collected counts)")
        if model == PLATFORM and cost:
            sentence += (f"; a pool with a thread for every connection would add about {cost.kib:,.0f} KiB a thread "
                         "(chapter 2)")
        found.append(Limit(MEMORY, f"memory per connection ({model})", float(kib), "KiB per connection", sentence + ".",
                           CHAPTER, ANCHORS[MEMORY]))
    return found
