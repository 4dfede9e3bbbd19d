"""The kernel's own counters, read the cheap way: each sample at 15,000 connections must cost little CPU.

- TCP sockets of one local port counted per state through sock_diag (the netlink interface `ss` itself uses): the
  kernel filters by port, Python counts one byte per socket — no `ss` process, no text to format and parse. The
  older TCPDIAG_GETSOCK request dumps IPv4 and IPv6 sockets in one walk of the kernel's socket hash (a walk costs
  ~7 ms with tens of thousands of sockets on the machine); SOCK_DIAG_BY_FAMILY, one walk per family, is the fallback.
  What remains is the kernel's own cost of describing each socket of the port (~1.4 µs each here).
- The TCP counters `nstat` prints, read from /proc/net/netstat and /proc/net/snmp (what nstat reads), no process.
- Each CPU's busy and idle seconds from /proc/stat.
The parsers are pure functions of what the kernel gives, unit tested on captured samples.
"""
from __future__ import annotations

import os
import socket
import struct
from pathlib import Path

import numpy as np

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# ---- sockets of a port per state (sock_diag) -----------------------------------------------------
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
TCPDIAG_GETSOCK = 18  # the inet_diag_req (v1) dump: family AF_UNSPEC, both families in one walk
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
INET_DIAG_REQ_BYTECODE = 1
INET_DIAG_BC_S_GE, INET_DIAG_BC_S_LE, INET_DIAG_BC_D_GE, INET_DIAG_BC_D_LE = 2, 3, 4, 5
ALL_STATES = 0x1FFF  # every TCP state, as `ss -a` asks
# The kernel's TCP state numbers (include/net/tcp_states.h) → ss's names.
TCP_STATES = {1: "ESTAB", 2: "SYN-SENT", 3: "SYN-RECV", 4: "FIN-WAIT-1", 5: "FIN-WAIT-2", 6: "TIME-WAIT",
              7: "UNCONN", 8: "CLOSE-WAIT", 9: "LAST-ACK", 10: "LISTEN", 11: "CLOSING", 12: "SYN-RECV"}
LISTEN = 10
NLMSG_HEADER = struct.Struct("<IHHII")  # length, type, flags, sequence, port id
DIAG_STATE_AT = 17  # inet_diag_msg after the 16-byte header: family, state, …
DIAG_QUEUES_AT = 16 + 56  # its idiag_rqueue, idiag_wqueue (a listener: accept queue now, backlog)
QUEUES = struct.Struct("<II")


def port_filter(port: int, remote: bool = False) -> bytes:
    """inet_diag bytecode for `sport = :port` (or, `remote`, `dport = :port`: a client's sockets to that port):
    port ≥ port, then port ≤ port; a failed test jumps past the end."""
    ge, le = (INET_DIAG_BC_D_GE, INET_DIAG_BC_D_LE) if remote else (INET_DIAG_BC_S_GE, INET_DIAG_BC_S_LE)
    return struct.pack("<BBHBBH BBHBBH", ge, 8, 20, 0, 0, port, le, 8, 12, 0, 0, port)


def diag_request(family: int, port: int, seq: int = 1, remote: bool = False) -> bytes:
    """A SOCK_DIAG_BY_FAMILY dump request for the TCP sockets of one local (or remote) port, in every state."""
    bytecode = port_filter(port, remote)
    body = struct.pack("<BBBBI", family, socket.IPPROTO_TCP, 0, 0, ALL_STATES) + bytes(48)  # any socket id
    attribute = struct.pack("<HH", 4 + len(bytecode), INET_DIAG_REQ_BYTECODE) + bytecode
    length = NLMSG_HEADER.size + len(body) + len(attribute)
    return NLMSG_HEADER.pack(length, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body + attribute


def compat_request(port: int, seq: int = 1, remote: bool = False) -> bytes:
    """A TCPDIAG_GETSOCK dump request (struct inet_diag_req) for the TCP sockets of one local (or remote) port, IPv4
    and IPv6."""
    bytecode = port_filter(port, remote)
    body = bytes(4) + bytes(48) + struct.pack("<II", ALL_STATES, 0)  # family, lengths, ext; socket id; states, dbs
    attribute = struct.pack("<HH", 4 + len(bytecode), INET_DIAG_REQ_BYTECODE) + bytecode
    length = NLMSG_HEADER.size + len(body) + len(attribute)
    return NLMSG_HEADER.pack(length, TCPDIAG_GETSOCK, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body + attribute


def count_diag(data: bytes, counts: list[int], listener: list[int]) -> bool:
    """Count one netlink reply buffer's sockets per state into `counts`; a listener's queues into `listener`.

    Returns True at the end of the dump. Nothing but the state byte is read from an ordinary socket; a run of
    messages of one length (the usual case: the sockets of one port look alike) is counted at once with numpy."""
    offset, end, unpack = _count_uniform(data, counts, listener), len(data), NLMSG_HEADER.unpack_from
    while offset < end:
        length, kind, _, _, _ = unpack(data, offset)
        if kind == NLMSG_DONE:
            return True
        if kind == NLMSG_ERROR:
            code = -struct.unpack_from("<i", data, offset + 16)[0]
            raise OSError(code, f"sock_diag: {os.strerror(code)}")
        state = data[offset + DIAG_STATE_AT]
        counts[state] += 1
        if state == LISTEN:
            listener[:] = QUEUES.unpack_from(data, offset + DIAG_QUEUES_AT)
        offset += (length + 3) & ~3
    return False


def _count_uniform(data, counts: list[int], listener: list[int]) -> int:
    """Count the leading messages that all have the first one's length and type; returns where the rest starts."""
    if len(data) < NLMSG_HEADER.size:
        return 0
    length, kind = NLMSG_HEADER.unpack_from(data, 0)[:2]
    if kind in (NLMSG_DONE, NLMSG_ERROR) or length % 4 or length < DIAG_QUEUES_AT + QUEUES.size:
        return 0
    n = len(data) // length
    words = np.frombuffer(data, dtype="<u4", count=n * length // 4).reshape(n, length // 4)
    same = (words[:, 0] == length) & ((words[:, 1] & 0xFFFF) == kind)
    n = n if same.all() else int(np.argmin(same))  # the first message that differs ends the run
    if n == 0:
        return 0
    states = np.frombuffer(data, dtype=np.uint8, count=n * length)[DIAG_STATE_AT::length]
    for state, k in enumerate(np.bincount(states, minlength=16)):
        counts[state] += int(k)
    listening = np.flatnonzero(states == LISTEN)
    if listening.size:
        listener[:] = QUEUES.unpack_from(data, int(listening[-1]) * length + DIAG_QUEUES_AT)
    return n * length


class SocketCounter:
    """Counts the TCP sockets of one local port per state (IPv4 and IPv6) on one netlink socket kept open; `remote`:
    the sockets connected to that port instead (a proxy's connections to its upstream)."""

    def __init__(self, port: int, remote: bool = False):
        self.port, self.remote = port, remote
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.buffer = bytearray(1 << 16)
        self.seq = 0
        self.compat = True  # one walk for both families, until the kernel refuses it

    def counts(self) -> tuple[list[int], list[int]]:
        """[sockets per kernel state number], [accept queue, backlog] of the listener (zeros when none)."""
        if self.compat:
            try:
                return self._dump([compat_request(self.port, self.seq + 1, self.remote)])
            except OSError:
                self.compat = False
        return self._dump([diag_request(family, self.port, self.seq + 1, self.remote)
                           for family in (socket.AF_INET, socket.AF_INET6)])

    def _dump(self, requests: list[bytes]) -> tuple[list[int], list[int]]:
        counts, listener = [0] * 16, [0, 0]
        view = memoryview(self.buffer)
        for request in requests:
            self.seq += 1
            self.sock.send(request)
            while True:
                size = self.sock.recv_into(self.buffer)
                if count_diag(view[:size], counts, listener):
                    break
        return counts, listener

    def close(self) -> None:
        self.sock.close()


def ss_row(counts: list[int], listener: list[int], columns: dict[str, str]) -> dict:
    """Per-state counts → ss.parquet's columns (the same values `parse_ss` reads from `ss -tan` output)."""
    named: dict[str, int] = {}
    for state, n in enumerate(counts):
        if n and state != LISTEN:
            name = TCP_STATES.get(state, "UNKNOWN")
            named[name] = named.get(name, 0) + n
    row = {"accept_queue": listener[0], "accept_backlog": listener[1]}
    for state, column in columns.items():
        row[column] = named.pop(state, 0)
    row["other_states"] = sum(named.values())
    return row


# ---- TCP counters (what nstat prints) ------------------------------------------------------------

def parse_net_counters(*texts: str) -> dict[str, int]:
    """/proc/net/netstat and /proc/net/snmp → {nstat's name: value}, e.g. TcpExtListenOverflows, TcpAttemptFails.

    Both files hold pairs of lines, names then values, each starting with a prefix (`TcpExt:`, `Tcp:`)."""
    values = {}
    for text in texts:
        lines = text.splitlines()
        for names, numbers in zip(lines[::2], lines[1::2], strict=False):
            prefix, *keys = names.split()
            for key, value in zip(keys, numbers.split()[1:], strict=False):
                values[prefix[:-1] + key] = int(value)
    return values


def read_net_counters() -> dict[str, int]:
    """The calling thread's network namespace's counters (/proc/net would be the process's main thread's)."""
    net = Path("/proc/thread-self/net")
    return parse_net_counters((net / "netstat").read_text(), (net / "snmp").read_text())


# ---- processes and CPUs --------------------------------------------------------------------------

def proc_stat_fields(pid: int | str) -> list[str]:
    """/proc/<pid>/stat's fields after the command name (which may hold spaces and parentheses): [0] the state,
    [1] the parent pid, [11] utime, [12] stime, [13] cutime, [14] cstime, in clock ticks. OSError once it ended."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2:].split()


def executable_name(pid: int) -> str:
    """What a process runs: its executable's name, else (root without CAP_SYS_PTRACE, as in a container, may not read
    the link of another user's process: the servers') its command name."""
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name
    except PermissionError:
        return Path(f"/proc/{pid}/comm").read_text().strip()


def count_fds(pid: int) -> int:
    """Open file descriptors of a process: since Linux 6.2 the size of /proc/<pid>/fd is their number (no listing
    of 15,000 entries per sample); older kernels report 0 there, and then the directory is listed."""
    return os.stat(f"/proc/{pid}/fd").st_size or len(os.listdir(f"/proc/{pid}/fd"))


def parse_proc_stat(text: str) -> list[dict]:
    """/proc/stat → one row per CPU: cumulative busy (user + nice + system + irq + softirq), idle (with iowait) and
    steal seconds since boot; the differences between two samples say how busy each CPU was in between."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *ticks = line.split()
        user, nice, system, idle, iowait, irq, softirq, steal = (int(t) / CLOCK_TICKS for t in ticks[:8])
        rows.append({"cpu": int(name[3:]), "busy_seconds": user + nice + system + irq + softirq,
                     "user_seconds": user + nice, "system_seconds": system + irq + softirq,
                     "idle_seconds": idle + iowait, "steal_seconds": steal})
    return rows
