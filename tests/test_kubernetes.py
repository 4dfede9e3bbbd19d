"""k6-operator manifests of a step (harness.lab.load.kubernetes): the TestRun splits the load as load.processes does
here and carries the same load plan, the server's Deployment the step's settings and limits, and binds the pod's
address; every TestRun is valid under k6-operator's own CRD schema (../shared/k6-operator/, when present) and the
other resources under the Kubernetes API's (kubernetes-validate, strict: unknown fields are errors, as for
`kubectl apply`). No cluster here: the manifests are checked, not applied."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from harness import ROOT, LabError
from harness.lab.load import kubernetes
from harness.lab.load.options import load_plan
from harness.lab.spec import load_spec, parse_spec

from conftest import LIMITS

CRD = ROOT.parent / "shared" / "k6-operator" / "k6.io_testruns.yaml"
KUBERNETES_VERSION = "1.37"  # the newest API kubernetes-validate (pinned) ships; the fields used here are all older
NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")  # an RFC 1035 label: valid for every kind's name (a Service's too)
CHAPTERS = ("chapter1", "chapter3", "chapter4", "chapter7", "smoke")


def step_of(raw: dict):
    return parse_spec("chapter7", raw, Path("chapter7.toml"), LIMITS).steps[0]


def describable_steps():
    """Every step of CHAPTERS the manifests can describe (k6 load, no services), chapter 7's multi-process ones too."""
    steps = [s for chapter in CHAPTERS for s in load_spec(chapter, LIMITS | {"nofile": 10**6}).steps
             if not kubernetes.unsupported(s)]
    assert len(steps) > 40 and {s.load.get("processes", 1) for s in steps} >= {1, 2, 3}
    return steps


def kubernetes_problems(resource: dict) -> list[str]:
    try:
        kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as err:
        return [f"{'.'.join(map(str, err.absolute_path))}: {err.message}"]
    return []


# --- k6-operator's CRD schema as JSON Schema --------------------------------------------------------------------
# The CRD's openAPIV3Schema is OpenAPI v3 (draft-4 keywords) plus Kubernetes's extensions and structural rules,
# which a plain JSON Schema validator would ignore. Each one is made explicit, or refused, so none passes unchecked.
HANDLED = {
    "x-kubernetes-int-or-string",  # carried by its anyOf: integer | string (checked below that it is there)
    "x-kubernetes-list-type",  # set: items unique; map: items unique by x-kubernetes-list-map-keys; atomic: no rule
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",  # how server-side apply merges the object; nothing to validate
    "x-kubernetes-preserve-unknown-fields",  # the object keeps fields its schema does not name
}


def structural(node: dict) -> dict:
    """A JSON Schema equal to what the API server checks of `node`: an object's unnamed fields are errors (the
    server prunes them, and `kubectl apply`'s default strict field validation rejects them) unless it preserves
    them; a set's items are unique. Any other x-kubernetes-* extension (CEL rules, embedded resources) fails here.
    A bare `type: object` stays open: the one the manifests fill, the root's metadata, is checked as ObjectMeta."""
    unknown = {k for k in node if k.startswith("x-kubernetes-")} - HANDLED
    assert not unknown, f"the CRD uses {sorted(unknown)}, which this test does not check yet"
    out = dict(node)
    if node.get("x-kubernetes-int-or-string"):
        assert {"type": "integer"} in node.get("anyOf", []) and {"type": "string"} in node["anyOf"], node
    if "properties" in node:
        out["properties"] = {name: structural(child) for name, child in node["properties"].items()}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = structural(node["additionalProperties"])
    if "items" in node:
        out["items"] = structural(node["items"])
    if "anyOf" in node:
        out["anyOf"] = [structural(branch) for branch in node["anyOf"]]
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    return out


def _unique_map_keys(validator, keys, items, schema):
    seen = []
    for item in items if validator.is_type(items, "array") else []:
        key = {k: item.get(k) for k in keys}
        if key in seen:
            yield jsonschema.ValidationError(f"duplicate entries for {key}")
        seen.append(key)


CrdValidator = jsonschema.validators.extend(jsonschema.Draft4Validator, {"x-kubernetes-list-map-keys": _unique_map_keys})
FORMATS = jsonschema.FormatChecker(formats=())  # int32/int64 as their ranges; date-time appears in .status only
FORMATS.checks("int32")(lambda n: not isinstance(n, int) or -2**31 <= n < 2**31)
FORMATS.checks("int64")(lambda n: not isinstance(n, int) or -2**63 <= n < 2**63)


@pytest.fixture(scope="module")
def testrun_schema():
    if not CRD.is_file():
        pytest.skip(f"k6-operator's TestRun CRD is not at {CRD} (a clone without ../shared/k6-operator/): "
                    "the TestRuns are not checked against its schema")
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == kubernetes.API_VERSION.split("/")[1])
    schema = structural(version["schema"]["openAPIV3Schema"])
    CrdValidator.check_schema(schema)
    return CrdValidator(schema, format_checker=FORMATS)


def crd_problems(validator, testrun: dict) -> list[str]:
    """The schema's errors, and metadata's: a custom resource's metadata is checked as every kind's ObjectMeta."""
    problems = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(testrun)]
    return problems + kubernetes_problems({"apiVersion": "v1", "kind": "ConfigMap", "metadata": testrun["metadata"]})


# --- the tests -----------------------------------------------------------------------------------------------------
def test_every_testrun_the_manifests_write_is_valid_under_k6_operators_crd(testrun_schema):
    for step in describable_steps():
        testrun = kubernetes.manifests(step)[-1]
        assert crd_problems(testrun_schema, testrun) == [], f"{step.chapter} {step.id}"


@pytest.mark.parametrize("break_it, where", [
    (lambda t: t["spec"].update(parallelism="3"), "spec.parallelism: '3' is not of type 'integer'"),
    (lambda t: t["spec"].update(parallelism=2**31), "spec.parallelism: 2147483648 is not a 'int32'"),
    (lambda t: t["spec"]["runner"].update(envs=[]), "spec.runner: Additional properties are not allowed ('envs'"),
    (lambda t: t["spec"]["script"]["configMap"].pop("name"), "spec.script.configMap: 'name' is a required property"),
    (lambda t: t["spec"]["runner"]["env"].insert(0, {"name": "N", "value": 3}), "spec.runner.env.0.value: 3 is not"),
    (lambda t: t["spec"]["runner"].update(resources={"claims": [{"name": "a"}, {"name": "a"}]}),
     "spec.runner.resources.claims: duplicate entries for {'name': 'a'}"),
    (lambda t: t["spec"]["runner"].update(resources={"limits": {"cpu": 1.5}}), "spec.runner.resources.limits.cpu: 1.5"),
    (lambda t: t["metadata"].update(labels={"step": 3}), "metadata.labels.step: 3 is not of type"),
])
def test_the_crd_check_rejects_a_testrun_k6_operator_would_not_accept(testrun_schema, break_it, where):
    good = kubernetes.testrun(step_of({"defaults": {"load": {"vus": 10}}, "step": [{"id": "s"}]}))
    assert crd_problems(testrun_schema, good) == []
    bad = copy.deepcopy(good)
    break_it(bad)
    problems = crd_problems(testrun_schema, bad)
    assert len(problems) == 1 and problems[0].startswith(where), problems


def test_every_step_makes_one_runner_per_process_and_valid_kubernetes_resources():
    for step in describable_steps():
        config_map, deployment, service, testrun = kubernetes.manifests(step)
        for resource in (config_map, deployment, service):
            assert kubernetes_problems(resource) == [], f"{step.chapter} {step.id} {resource['kind']}"
        assert all(NAME.match(r["metadata"]["name"]) for r in (config_map, deployment, service, testrun))
        assert testrun["spec"]["parallelism"] == step.load.get("processes", 1)
        assert testrun["spec"]["script"]["configMap"] == {"name": config_map["metadata"]["name"], "file": "lab.js"}
        env = {e["name"]: e["value"] for e in testrun["spec"]["runner"]["env"]}
        assert env["LAB_PLAN_FILE"] == "/test/k6-plan.json"  # where k6-operator mounts the ConfigMap's files
        assert json.loads(config_map["data"]["k6-plan.json"]) == load_plan(step.load)  # what `invoke run` gives k6
        assert env["TARGET"] == f"http://{service['metadata']['name']}:{step.port}"
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"] == labels == service["spec"]["selector"]
        assert "const" in config_map["data"]["lab.js"]  # the lab's script itself


@pytest.mark.parametrize("break_it, where", [
    (lambda c: c["ports"][0].update(containerPort="8080"), ".ports.0.containerPort: '8080' is not of type 'integer'"),
    (lambda c: c.update(readinessprobe=c.pop("readinessProbe")), ": Additional properties are not allowed ('readinessprobe' was unexpected)"),
    (lambda c: c["env"].insert(0, {"name": "X", "value": 1}), ".env.0.value: 1 is not of type 'string'"),
])
def test_the_kubernetes_check_rejects_a_container_the_api_would_not_accept(break_it, where):
    deployment = kubernetes.server_deployment(step_of({"defaults": {"load": {"vus": 10}}, "step": [{"id": "s"}]}))
    bad = copy.deepcopy(deployment)
    break_it(bad["spec"]["template"]["spec"]["containers"][0])
    [problem] = kubernetes_problems(bad)
    assert problem.startswith("spec.template.spec.containers.0" + where), problem


def test_the_server_binds_the_pods_address_and_only_its_service_port_is_on_the_service():
    # Even a step that names loopback explicitly: in a pod, loopback is unreachable from the Service and the kubelet.
    step = step_of({"defaults": {"load": {"vus": 10}, "server": {"SERVER_ADDRESS": "127.0.0.1", "SERVER_PORT": 9090,
                                                                "MANAGEMENT_PORT": 9091}}, "step": [{"id": "s"}]})
    container = kubernetes.server_deployment(step)["spec"]["template"]["spec"]["containers"][0]
    addresses = [e for e in container["env"] if e["name"] in ("SERVER_ADDRESS", "MANAGEMENT_ADDRESS")]
    assert addresses == [{"name": name, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
                         for name in ("SERVER_ADDRESS", "MANAGEMENT_ADDRESS")]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    probe = container["readinessProbe"]["httpGet"]
    assert ports[probe["port"]] == 9091 and "host" not in probe  # the kubelet probes Actuator on the pod's IP
    [service_port] = kubernetes.server_service(step)["spec"]["ports"]
    assert ports[service_port["targetPort"]] == service_port["port"] == 9090  # Actuator is not on the Service


def test_the_server_gets_the_steps_settings_and_its_container_limits_as_resources():
    raw = {"defaults": {"load": {"vus": 30000, "processes": 2}, "server": {"VIRTUAL_THREADS": True},
                        "container": {"cpus": 1.5, "memory": "768m", "nofile": 10000},
                        "system": {"allow_fd_exhaustion": True}},
           "step": [{"id": "virtual-30k", "why": "30k users on virtual threads"}]}
    step = step_of(raw)
    deployment = kubernetes.server_deployment(step)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["VIRTUAL_THREADS"] == "true" and env["JAVA_TOOL_OPTIONS"] == "-XX:MaxRAMPercentage=25"
    assert container["resources"]["limits"] == container["resources"]["requests"] == {"cpu": "1500m",
                                                                                      "memory": "768Mi"}
    assert "a pod spec has no open-files limit" in deployment["metadata"]["annotations"]["concurrency-lab/nofile"]
    assert kubernetes.resource_name(step) == "lab-chapter7-virtual-30k"


def test_a_quick_steps_server_gets_the_quick_options_after_its_heap_rule():
    raw = {"defaults": {"system": {"jvm": "quick"}}, "step": [{"id": "quick", "load": {"vus": 2}}]}
    container = kubernetes.server_deployment(step_of(raw))["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["JAVA_TOOL_OPTIONS"] == "-XX:MaxRAMPercentage=25 -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def test_the_yaml_round_trips_and_names_the_step(tmp_path):
    said = kubernetes.write_manifests("chapter7", "virtual-50k", str(tmp_path))
    path = tmp_path / "lab-chapter7-virtual-50k.yaml"
    assert str(path) in said and "kubectl apply -f" in said
    text = path.read_text()
    assert [d["kind"] for d in yaml.safe_load_all(text)] == ["ConfigMap", "Deployment", "Service", "TestRun"]
    assert not re.search(r"[&*]id\d", text)  # no YAML anchors: each value where a reader looks for it


@pytest.mark.parametrize("chapter, step_id, why", [
    ("chapter7", "loop-50k", "it needs services the manifests do not deploy: flux (webflux)"),
    ("chapter2", "redeploy-cds", "a redeploy step runs no load"),
    ("chapter1", "ab-c1", "its load runs ab, and k6-operator runs k6 only"),
])
def test_a_step_the_manifests_cannot_describe_is_refused_by_name(chapter, step_id, why):
    with pytest.raises(LabError, match=f"{chapter} step {step_id}: no manifests: .*{re.escape(why)}"):
        kubernetes.write_manifests(chapter, step_id)


@pytest.mark.parametrize("shape, why", [("file", "File exists"), ("under a file", "Not a directory")])
def test_an_out_folder_that_cannot_be_one_is_named(tmp_path, shape, why):
    (tmp_path / "taken").write_text("a file")
    out = tmp_path / "taken" if shape == "file" else tmp_path / "taken" / "deeper"
    with pytest.raises(LabError, match=rf"--out '{out}': cannot write lab-chapter7-virtual-50k.yaml there \({why}\): "
                                       r"give a folder you can write"):
        kubernetes.write_manifests("chapter7", "virtual-50k", str(out))
