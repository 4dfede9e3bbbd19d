"""What a reverse proxy costs per request, with and without upstream keep-alive (chapter 6, seed 003), before any data.

A closed loop of C clients, each sending its next request when the last is answered, through a proxy to a service.
One request's time is the round trips it needs plus the CPU it costs the proxy and the service:

    per request = RTT_client + RTT_upstream × (1 + h) + S + P + n × K

where h is the round trips a new upstream connection adds before the request can be sent (1: connect() returns once
the SYN-ACK is back, and the request rides with the handshake's last ACK; the article counts its three packets as
"3 x latency"), S the service's time, P the proxy's, n = 1 when the request opens a new upstream connection (0 with
keep-alive) and K the CPU both ends spend to open and close it. So X = C / per request, until a CPU saturates: the
busiest process's CPU per request bounds X ≤ cores / (CPU per request).

Without reuse, every request leaves a socket in TIME_WAIT for 60 s (Linux's fixed TCP_TIMEWAIT_LEN) on the side
that closed first. With `Connection: close` both ends close, the upstream once it has answered and the proxy once it
has read the answer, so which side keeps the TIME_WAIT is a race (the nginx kind's sampler counts the proxy's side,
the ss table the upstream's). On the proxy's side each new connection needs an ephemeral port that is not in TIME_WAIT
to the same upstream address and port, so new connections per second ≤ ports / 60 s for the share that lands there,
unless the kernel may reuse them (net.ipv4.tcp_tw_reuse: 1 everywhere, 2, the default, for loopback only).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

TIME_WAIT_S = 60.0  # TCP_TIMEWAIT_LEN in the Linux kernel: not a sysctl
HANDSHAKE_RTTS = 1  # round trips before a new connection can carry the request
ARTICLE_HANDSHAKE_LATENCIES = 3  # the article's "3 x 10ms = 30ms": one latency per packet of the handshake


@dataclass(frozen=True)
class ProxyPrediction:
    clients: int  # C, each with one request in flight
    per_request_ms: float  # one request's time, round trips and CPU
    tps: float  # the closed loop's throughput, before a CPU bound
    cpu_bound_tps: float | None  # cores / CPU per request of the busiest process, when given
    bound_tps: float  # min of the two
    binding: str  # "clients" (the loop's round trips) or "cpu"
    new_connections_per_s: float  # upstream connections opened a second: tps without keep-alive, ~0 with it

    def as_dict(self) -> dict:
        return asdict(self)


def per_request_ms(client_rtt_ms: float, upstream_rtt_ms: float, service_ms: float, proxy_ms: float = 0.0,
                   new_connection: bool = True, connection_ms: float = 0.0) -> float:
    """One request's time through the proxy: a new upstream connection adds HANDSHAKE_RTTS round trips and the CPU
    (`connection_ms`) of opening and closing it."""
    opened = 1 if new_connection else 0
    return client_rtt_ms + upstream_rtt_ms * (1 + HANDSHAKE_RTTS * opened) + service_ms + proxy_ms + opened * connection_ms


def predict(clients: int, per_request: float, cpu_ms_per_request: float | None = None, cores: float = 1.0,
            new_connection: bool = True) -> ProxyPrediction:
    """The closed loop's throughput for `per_request` ms a request, bounded by the busiest process's CPU when given."""
    if clients < 1 or per_request <= 0:
        raise ValueError(f"need clients ≥ 1 and a positive time per request, got {clients}, {per_request}")
    loop = clients / per_request * 1000
    cpu = cores / cpu_ms_per_request * 1000 if cpu_ms_per_request else None
    bound = min(loop, cpu) if cpu is not None else loop
    return ProxyPrediction(clients, per_request, loop, cpu, bound, "cpu" if cpu is not None and cpu < loop else "clients",
                           bound if new_connection else 0.0)


def ephemeral_ports(port_range: tuple[int, int]) -> int:
    """How many local ports net.ipv4.ip_local_port_range gives (both ends included)."""
    low, high = port_range
    if not 0 < low <= high <= 65535:
        raise ValueError(f"not a port range: {port_range}")
    return high - low + 1


def new_connection_ceiling(port_range: tuple[int, int], time_wait_s: float = TIME_WAIT_S) -> float:
    """New connections a second from one address to one upstream address and port when the proxy closes first and
    TIME_WAIT sockets cannot be reused: every port is held for TIME_WAIT after its connection."""
    return ephemeral_ports(port_range) / time_wait_s


def article_handshake_ms(latency_ms: float) -> float:
    """The article's cost of a new connection: "3 x 10ms = 30ms"."""
    return ARTICLE_HANDSHAKE_LATENCIES * latency_ms


def handshake_ms(rtt_ms: float) -> float:
    """What a new connection delays the request by: HANDSHAKE_RTTS round trips (the request rides with the last ACK)."""
    return HANDSHAKE_RTTS * rtt_ms
