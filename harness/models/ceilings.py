"""How many users one server process can hold once threads are not the limit (chapter 7), before any data.

With a thread per request, the pool caps the requests in flight (chapter 3's spike simulation). With virtual threads
or an event loop every user's request is in flight at once, and the limits are the ones threads used to hide:

- open files: every connection is a file descriptor of the process, so a process holds at most its open-files limit
  minus the files it keeps for itself (jars, logs, sockets of its own);
- memory: each held connection costs the process some memory (its socket buffers and request objects), and a
  platform thread its stack besides; users × cost must fit in what the process may use;
- the load generator's own ceilings: each k6 process holds one socket per user within its own open-files limit, so a
  test of N users needs at least ⌈N / usable files⌉ k6 processes (execution segments), and memory for every user;
- accepting: one acceptor thread takes the connections in turn, so a spike of N users is held only after
  N / accept rate seconds.

`ceiling()` combines them and names the one that binds. Costs are inputs (chapter 2 measures them on this machine);
nothing here reads data.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

OPEN_FILES, MEMORY, USERS = "open files", "memory", "users"  # what binds: the users asked fit under both limits


@dataclass(frozen=True)
class CeilingPrediction:
    users: int  # the users the step asks for, each with one connection and one request in flight
    open_files_ceiling: int  # connections the process's open-files limit leaves room for
    memory_ceiling: int  # connections the process's memory leaves room for
    held: int  # the users the server holds: the least of the three
    refused: int  # users beyond what it holds
    binding: str  # OPEN_FILES, MEMORY or USERS
    load_processes: int  # k6 processes the test needs, each within its own open-files limit
    accept_s: float  # how long one acceptor takes to accept every held connection

    def as_dict(self) -> dict:
        return asdict(self)


def open_files_ceiling(nofile: int, reserve: int) -> int:
    """Connections a process can hold: its open-files limit minus the files it keeps for itself."""
    if nofile < 1 or reserve < 0:
        raise ValueError(f"need an open-files limit ≥ 1 and a reserve ≥ 0, got {nofile}, {reserve}")
    return max(nofile - reserve, 0)


def memory_ceiling(memory_bytes: int, per_connection_bytes: float, per_thread_bytes: float = 0.0) -> int:
    """Connections whose cost fits in `memory_bytes`: each costs `per_connection_bytes`, plus `per_thread_bytes` when it
    has a platform thread of its own (0 for virtual threads and an event loop)."""
    cost = per_connection_bytes + per_thread_bytes
    if memory_bytes < 0 or cost <= 0:
        raise ValueError(f"need memory ≥ 0 and a positive cost per connection, got {memory_bytes}, {cost}")
    return int(memory_bytes // cost)


def load_processes(users: int, nofile: int, reserve: int) -> int:
    """k6 processes a test of `users` needs: each holds one socket per user of its segment within its own limit."""
    room = open_files_ceiling(nofile, reserve)
    if room < 1:
        raise ValueError(f"an open-files limit of {nofile} leaves no room for a socket after {reserve} reserved")
    return max(1, math.ceil(users / room))


def ceiling(users: int, nofile: int, reserve: int, memory_bytes: int, per_connection_bytes: float,
            per_thread_bytes: float = 0.0, accept_per_s: float | None = None) -> CeilingPrediction:
    """What one server process holds of `users` arriving at once, and which limit stops it."""
    if users < 0:
        raise ValueError(f"users must be ≥ 0, got {users}")
    files = open_files_ceiling(nofile, reserve)
    memory = memory_ceiling(memory_bytes, per_connection_bytes, per_thread_bytes)
    held = min(users, files, memory)
    binding = USERS if held == users else (OPEN_FILES if files <= memory else MEMORY)
    accept_s = held / accept_per_s if accept_per_s else 0.0
    return CeilingPrediction(users, files, memory, held, users - held, binding,
                             load_processes(users, nofile, reserve) if users else 1, accept_s)
