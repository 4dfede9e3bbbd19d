"""Every kind of service the lab knows, found by looking: each module of this package that describes a kind exports
it as `KIND` (an instance of harness.lab.services.base.ServiceKind), so adding a kind is adding its module. The
package's own machinery (INFRASTRUCTURE) is not searched: it imports this module."""
from __future__ import annotations

import importlib
import pkgutil

import harness.lab.services as package
from harness.lab.services.base import ServiceKind


INFRASTRUCTURE = {"base", "graph", "kinds", "deploy"}


def _discover() -> dict[str, ServiceKind]:
    found: dict[str, ServiceKind] = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name not in INFRASTRUCTURE):
        kind = getattr(importlib.import_module(f"{package.__name__}.{module}"), "KIND", None)
        if isinstance(kind, ServiceKind):
            found[kind.name] = kind
    return found


KINDS: dict[str, ServiceKind] = _discover()  # what `kind = "…"` may name
SERVER_KINDS = [name for name, kind in KINDS.items() if kind.serves_as_server]  # may be the service `server`
# The sample server: the kind the spec's [server] section sets (tomcat), the service `server` when no other is declared.
SAMPLE_SERVER = next(name for name, kind in KINDS.items() if kind.section == "server")
