"""A test split over k6 processes: each process's execution segment, its files, the merge of their CSVs, and the spec's
checks (only k6 splits; the open-files limit is per process)."""
from __future__ import annotations

from pathlib import Path

from harness.lab.load.k6 import merge_parts, part_name, segment_args, source_args
from harness.lab.spec import parse_spec

from conftest import LIMITS
from test_spec import problems_of


def test_each_process_gets_its_share_of_one_sequence():
    assert segment_args(1, 1) == []
    assert segment_args(1, 2) == ["--execution-segment", "0:1/2", "--execution-segment-sequence", "0,1/2,1"]
    assert segment_args(3, 3) == ["--execution-segment", "2/3:1", "--execution-segment-sequence", "0,1/3,2/3,1"]


def test_on_loopback_each_process_connects_from_an_address_of_its_own():
    edge = {"kind": "nginx", "mode": "return", "port": 8272, "status_port": 8273}
    raw = {"defaults": {"load": {"vus": 20, "processes": 2}}, "step": [
        {"id": "lo"}, {"id": "h", "system": {"network": "hosts"}, "services": {"edge": edge}, "load": {"target": "edge"}}]}
    loopback, hosts = parse_spec("t", raw, Path("t.toml"), LIMITS).steps
    assert source_args(loopback, 1, 2) == ["--local-ips", "127.0.1.1"]
    assert source_args(loopback, 2, 2) == ["--local-ips", "127.0.2.1"]
    assert source_args(loopback, 1, 1) == [] and source_args(hosts, 2, 2) == []  # a client host has its own address


def test_the_first_process_keeps_the_one_process_names():
    assert part_name("k6.csv", 1) == "k6.csv" and part_name("k6.csv", 2) == "k6-2.csv"
    assert part_name("k6-summary.json", 3) == "k6-summary-3.json" and part_name("k6", 2) == "k6-2"


def test_merged_csvs_keep_each_processs_vus_apart(tmp_path: Path):
    header = "metric_name,timestamp,metric_value,metadata\n"
    (tmp_path / "k6.csv").write_text(header + "http_reqs,1,1,vu=1&iter=0\n")
    (tmp_path / "k6-2.csv").write_text(header + "http_reqs,2,1,vu=1&iter=0\nhttp_reqs,3,1,iter=4&vu=2\n")
    merge_parts(tmp_path, 2, vus=10)
    assert (tmp_path / "k6.csv").read_text() == header + ("http_reqs,1,1,vu=1&iter=0\nhttp_reqs,2,1,vu=11&iter=0\n"
                                                           "http_reqs,3,1,iter=4&vu=12\n")
    assert not (tmp_path / "k6-2.csv").exists()


def test_only_k6_splits_a_test_and_each_process_has_its_own_open_files():
    raw = {"defaults": {"load": {"tool": "ab", "executor": "shared-iterations", "vus": 2, "iterations": 4,
                                 "processes": 2}}, "step": [{"id": "s"}]}
    assert "load.processes splits a test with k6's execution segments: it needs tool = \"k6\"" in problems_of(raw)
    many = {"defaults": {"load": {"vus": 30_000, "processes": 2}, "system": {"allow_fd_exhaustion": True}},
            "step": [{"id": "s"}]}
    assert "30000 VUs need 15000 sockets in each of 2 k6 process(es)" in problems_of(many, nofile=10_000)
    many["defaults"]["load"]["processes"] = 4
    assert parse_spec("t", many, Path("t.toml"), LIMITS | {"nofile": 10_000}).steps[0].load["processes"] == 4
