"""A step's load and server as Kubernetes manifests, for k6-operator (chapter 7: past one machine).

`invoke manifests <chapter> --step <id>` writes, for one step of a spec:
- a ConfigMap holding experiments/k6/lab.js, the lab's one load script, and the step's load plan beside it
  (k6-plan.json, as `invoke run` writes it into the step's folder);
- a TestRun (k6-operator's custom resource, apiVersion k6.io/v1alpha1): `parallelism` = the step's
  load.processes, which k6-operator turns into as many runner pods, each with its equal execution segment (the
  split `load.processes` makes here); the script from the ConfigMap; the plan's path and the target as the runners'
  environment (LAB_PLAN_FILE, TARGET: as `invoke run` passes them to k6), and k6's CSV output in the runner;
- the sample server as a Deployment (one replica: one server is what the book measures) with the step's server
  settings as its environment, JAVA_TOOL_OPTIONS as on both backends, and the step's [container] cpus and memory as
  its resources (requests = limits, so the scheduler gives it what the step asked), behind a Service;
Kubernetes sets no open-files limit per pod (the node's container runtime does), so [container] nofile has no field
here; the manifests say so in an annotation.

Addresses: locally the server and Actuator bind loopback (their default; the spec refuses any other SERVER_ADDRESS).
In a pod they bind the pod's IP, given by the downward API (status.podIP) as SERVER_ADDRESS and MANAGEMENT_ADDRESS:
the address the Service's endpoints and the kubelet's readiness probe connect to: one named address, as locally,
rather than every interface (0.0.0.0). The Service exposes the service port only; Actuator's port is declared on
the container for the probe, not on the Service. The cost: `kubectl port-forward`, which connects to the pod's
loopback, does not reach the server.

tests/test_kubernetes.py validates the TestRuns against k6-operator's own CRD schema (when ../shared/k6-operator/
holds it) and the other resources against the Kubernetes API's schemas (the kubernetes-validate package).

Getting results back: each runner writes k6's CSV and summary to /home/k6 inside its pod; they can be copied out
(`kubectl cp <runner-pod>:/home/k6/k6.csv k6-<n>.csv`), named as the lab names a split test's files, but no task reads
them back yet: the lab merges its own processes' files (harness.lab.load.k6.merge_parts) only inside `invoke run`.
That path is not exercised here: there is no cluster.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from harness import EXPERIMENTS, LabError
from harness.lab.services.base import SERVER
from harness.lab.services.kinds import SAMPLE_SERVER
from harness.lab.services.tomcat.knobs import server_env
from harness.lab.jdk import with_jvm_options
from harness.lab.load.plan import PLAN_FILE, k6_environment, plan_text
from harness.lab.store import home_expanded
from harness.lab.spec import Step, load_spec

API_VERSION = "k6.io/v1alpha1"  # k6-operator's TestRun
SCRIPT_FILE = "lab.js"
SCRIPT_DIR = "/test"  # where k6-operator mounts the script's ConfigMap, every file of it, in a runner
RUNNER_DIR = "/home/k6"  # the k6 image's working directory, where the runner writes its files
SERVER_IMAGE = "concurrency-lab/sample-server:latest"  # `invoke image`; push it where the cluster pulls from
SERVER_PORT_NAME = "http"
MANAGEMENT_PORT_NAME = "management"
POD_ADDRESS_VARIABLES = ("SERVER_ADDRESS", "MANAGEMENT_ADDRESS")  # the server's and Actuator's bind addresses


def resource_name(step: Step, suffix: str = "") -> str:
    name = re.sub(r"[^a-z0-9-]", "-", f"lab-{step.chapter}-{step.id}{suffix}".lower()).strip("-")
    return name[:63].rstrip("-")


def manifests(step: Step, server_image: str = SERVER_IMAGE) -> list[dict]:
    """The step's ConfigMap, TestRun, server Deployment and Service, in the order to apply them."""
    problems = unsupported(step)
    if problems:
        raise LabError(f"{step.chapter} step {step.id}: no manifests: " + "; ".join(problems))
    return [script_config_map(step), server_deployment(step, server_image), server_service(step), testrun(step)]


def unsupported(step: Step) -> list[str]:
    """Why the manifests cannot describe this step (empty: they can): they hold k6 and the sample server alone."""
    if step.kind != "load":
        return [f"a {step.kind} step runs no load, so there is nothing for k6-operator to run"]
    problems = []
    if step.load.get("tool", "k6") != "k6":
        problems.append(f"its load runs {step.load['tool']}, and k6-operator runs k6 only")
    others = {name: s for name, s in step.services.items() if not (name == SERVER and s["kind"] == SAMPLE_SERVER)}
    if others:
        names = ", ".join(f"{name} ({service['kind']})" for name, service in others.items())
        problems.append(f"it needs services the manifests do not deploy: {names}")
    return problems


def script_config_map(step: Step) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": resource_name(step, "-script")},
            "data": {SCRIPT_FILE: (EXPERIMENTS / "k6" / SCRIPT_FILE).read_text(), PLAN_FILE: plan_text(step.load)}}


def testrun(step: Step) -> dict:
    """k6-operator's TestRun for the step's load: one runner pod per process, the load plan as the lab passes it."""
    target = f"http://{resource_name(step, '-server')}:{step.port}"
    env = k6_environment(f"{SCRIPT_DIR}/{PLAN_FILE}", target)
    arguments = f"--out csv={RUNNER_DIR}/k6.csv --summary-export {RUNNER_DIR}/k6-summary.json"
    return {
        "apiVersion": API_VERSION, "kind": "TestRun",
        "metadata": {"name": resource_name(step), "annotations": _annotations(step)},
        "spec": {
            "parallelism": step.load.get("processes", 1),
            "script": {"configMap": {"name": resource_name(step, "-script"), "file": SCRIPT_FILE}},
            "arguments": arguments,
            "runner": {"env": [{"name": k, "value": v} for k, v in env.items()]},
        },
    }


def server_deployment(step: Step, image: str = SERVER_IMAGE) -> dict:
    name = resource_name(step, "-server")
    settings = {k: v for k, v in with_jvm_options(server_env(step.server), step.system).items()
                if k not in POD_ADDRESS_VARIABLES}
    pod_address = {"valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    container = {
        "name": "server", "image": image,
        "env": [{"name": k, "value": v} for k, v in settings.items()] + [{"name": k} | pod_address
                                                                         for k in POD_ADDRESS_VARIABLES],
        "ports": [{"name": SERVER_PORT_NAME, "containerPort": step.port},
                  {"name": MANAGEMENT_PORT_NAME, "containerPort": step.management_port}],
        # No host: the kubelet probes the pod's IP, where Actuator listens.
        "readinessProbe": {"httpGet": {"path": "/actuator/health", "port": MANAGEMENT_PORT_NAME}},
    }
    limits = {k: v for k, v in (("cpu", _cpu(step)), ("memory", _memory(step))) if v}
    if limits:
        container["resources"] = {"requests": limits, "limits": limits}
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels, "annotations": _annotations(step)},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}}


def server_service(step: Step) -> dict:
    name = resource_name(step, "-server")
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name},
                     "ports": [{"name": SERVER_PORT_NAME, "port": step.port, "targetPort": SERVER_PORT_NAME}]}}


def _annotations(step: Step) -> dict:
    notes = {"concurrency-lab/step": f"{step.chapter}/{step.id}", "concurrency-lab/why": step.why}
    if "nofile" in step.container:
        notes["concurrency-lab/nofile"] = (f"{step.container['nofile']}: set it on the nodes' container runtime; "
                                           "a pod spec has no open-files limit")
    return notes


def _cpu(step: Step) -> str | None:
    cpus = step.container.get("cpus")
    return f"{round(cpus * 1000)}m" if cpus else None


def _memory(step: Step) -> str | None:
    """Docker's notation ("768m", "2g") in Kubernetes's ("768Mi", "2Gi")."""
    memory = step.container.get("memory")
    if not memory:
        return None
    number, unit = re.fullmatch(r"(\d+)([bkmg]?)", str(memory).lower()).groups()
    return number + {"": "", "b": "", "k": "Ki", "m": "Mi", "g": "Gi"}[unit]


class _PlainDumper(yaml.SafeDumper):
    """Writes a value used twice (the labels, the pod's address) twice, not as a YAML anchor and alias."""

    def ignore_aliases(self, data) -> bool:
        return True


# Docker's grammar of an image reference (distribution/reference): [host[:port]/]name[/name…][:tag][@digest].
_NAME = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REFERENCE = re.compile(rf"(?:[A-Za-z0-9.-]+(?::\d+)?/)?{_NAME}(?:/{_NAME})*(?::\w[\w.-]{{0,127}})?"
                             rf"(?:@sha256:[0-9a-f]{{64}})?", re.ASCII)


def write_manifests(chapter: str, step_id: str, out: str | None = None, image: str | None = None) -> str:
    """The manifests of one step as YAML: written into `out` (one file, named after the step; the path is returned)
    or returned as text."""
    if image is not None and not IMAGE_REFERENCE.fullmatch(image):
        raise LabError(f"--image {image[:80]!r} is not an image reference like registry.example:5000/team/server:1.0 "
                       f"(lower-case name parts, an optional tag of letters, digits, '.', '_' and '-', or a digest)")
    step = load_spec(chapter).select([step_id])[0]
    text = yaml.dump_all(manifests(step, image or SERVER_IMAGE), Dumper=_PlainDumper, sort_keys=False)
    if out is None:
        return text
    folder = home_expanded(Path(out))
    path = folder / f"{resource_name(step)}.yaml"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except (OSError, ValueError) as err:  # a file where the folder should be, or under one; no permission; a NUL
        raise LabError(f"--out {out!r}: cannot write {path.name} there ({getattr(err, 'strerror', None) or err}): "
                       f"give a folder you can write") from None
    return f"wrote {path}: kubectl apply -f {path} (k6-operator installed, the server image pullable)"

