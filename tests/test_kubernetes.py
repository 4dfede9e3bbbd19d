"""k6-operator manifests of a step (harness.lab.load.kubernetes): the TestRun splits the load as load.processes does
here and carries the same load plan, the server's Deployment the step's settings and limits; a TestRun missing what
k6-operator's documentation requires is caught. No cluster here: the manifests are checked, not applied."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from harness.lab.load import kubernetes
from harness.lab.load.options import load_plan
from harness.lab.spec import load_spec, parse_spec

from conftest import LIMITS


def step_of(raw: dict):
    return parse_spec("chapter7", raw, Path("chapter7.toml"), LIMITS).steps[0]


def test_every_chapter7_step_makes_a_valid_testrun_with_one_runner_per_process():
    for step in load_spec("chapter7", LIMITS | {"nofile": 10**6}).steps:
        config_map, deployment, service, testrun = kubernetes.manifests(step)
        assert kubernetes.check_testrun(testrun) == [], step.id
        assert testrun["spec"]["parallelism"] == step.load.get("processes", 1)
        assert testrun["spec"]["script"]["configMap"] == {"name": config_map["metadata"]["name"], "file": "lab.js"}
        env = {e["name"]: e["value"] for e in testrun["spec"]["runner"]["env"]}
        assert json.loads(env["LAB_PLAN"]) == load_plan(step.load)  # what `invoke run` gives k6
        assert env["TARGET"] == f"http://{service['metadata']['name']}:{step.port}"
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"] == labels == service["spec"]["selector"]
        assert "const" in config_map["data"]["lab.js"]  # the lab's script itself


def test_the_server_gets_the_steps_settings_and_its_container_limits_as_resources():
    raw = {"defaults": {"load": {"vus": 30000, "processes": 2}, "server": {"VIRTUAL_THREADS": True},
                        "container": {"cpus": 1.5, "memory": "768m", "nofile": 10000},
                        "system": {"allow_fd_exhaustion": True}},
           "step": [{"id": "virtual-30k", "why": "30k users on virtual threads"}]}
    step = step_of(raw)
    deployment = kubernetes.server_deployment(step)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["VIRTUAL_THREADS"] == "true" and env["JAVA_TOOL_OPTIONS"] == "-XX:MaxRAMPercentage=25"
    assert container["resources"]["limits"] == container["resources"]["requests"] == {"cpu": "1500m",
                                                                                      "memory": "768Mi"}
    assert "a pod spec has no open-files limit" in deployment["metadata"]["annotations"]["concurrency-lab/nofile"]
    assert kubernetes.resource_name(step) == "lab-chapter7-virtual-30k"


def test_the_yaml_round_trips_and_names_the_step(tmp_path):
    said = kubernetes.write_manifests("chapter7", "loop-50k", str(tmp_path))
    path = tmp_path / "lab-chapter7-loop-50k.yaml"
    assert str(path) in said and "kubectl apply -f" in said
    kinds = [d["kind"] for d in yaml.safe_load_all(path.read_text())]
    assert kinds == ["ConfigMap", "Deployment", "Service", "TestRun"]


def test_a_testrun_without_what_k6_operator_requires_is_caught():
    good = kubernetes.testrun(step_of({"defaults": {"load": {"vus": 10}}, "step": [{"id": "s"}]}))
    assert kubernetes.check_testrun(good) == []
    bad = json.loads(json.dumps(good))
    bad["spec"]["parallelism"] = 0
    del bad["spec"]["script"]["configMap"]["file"]
    bad["metadata"]["name"] = "Lab_Step"
    bad["spec"]["runner"]["env"].append({"name": "N", "value": 3})
    problems = kubernetes.check_testrun(bad)
    assert len(problems) == 4 and "spec.parallelism must be a positive integer" in problems
