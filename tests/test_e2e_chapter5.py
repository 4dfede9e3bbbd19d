"""Chapter 5 scaled down, end to end: the real sample server's pair-room API on Spring Data JPA and HikariCP, against a
real PostgreSQL cloned per step from its template, driven by k6's scenario with a background event stream.

What it checks is the chapter's mechanism: with open-in-view on, each stream's request keeps its pool connection for
its whole life, so a pool of 2 runs dry and requests time out waiting for a connection; with it off, none wait that
long. And the plumbing the chapter reads: HikariCP's metrics, the database's own table, its version and CPU.
"""
import pytest

from harness import ROOT
from harness.book.chapters.ch5.runs import DB, runs_table, steps_table

from test_e2e import profile_run

pytestmark = pytest.mark.e2e
PROFILE = ROOT / "tests" / "profiles" / "chapter5-scaled.toml"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    with profile_run(tmp_path_factory, PROFILE) as data:
        yield data, steps_table(runs_table(PROFILE.stem)).set_index("step")


def test_open_in_view_lets_the_streams_hold_the_pool(run):
    _, table = run
    held, freed = table.loc["open-in-view"], table.loc["no-open-in-view"]
    assert held["active_max"] == 2 and held["pending_max"] >= 1  # the pool ran dry, requests queued for it
    assert held["pool_timeouts"] > 0 and held["success"] < 0.95  # and waited past the 1 s connection timeout
    assert freed["pool_timeouts"] == 0 and freed["success"] == 1
    assert held["hold_ms"] > 10 * freed["hold_ms"]  # a connection held for a stream's life, not a transaction's


def test_every_step_read_its_own_clone_of_the_template(run):
    data, _ = run
    metas = [data.meta(step)["services"][DB] for step in data.steps]
    assert all(m["version"].startswith("17.") for m in metas)
    assert sum(not m["template_reused"] for m in metas) <= 1  # loaded once (or reused from an earlier run)
    assert all(m["clone_ms"] > 0 for m in metas)
    assert len({m["database"] for m in metas}) == len(metas)  # a fresh clone per step


def test_the_database_was_sampled_beside_the_pool(run):
    data, table = run
    db = data.service(DB, "no-open-in-view")
    assert {"pg.activity.active", "pg.database.xact_commit", "pg.cpu_seconds"} <= set(db["metric"])
    assert table.loc["no-open-in-view", "db_commits"] > 0 and table.loc["no-open-in-view", "db_cpu_cores"] > 0
    hikari = data.actuator[data.actuator.metric.str.startswith("hikaricp.")]
    assert {"hikaricp.connections.active", "hikaricp.connections.pending"} <= set(hikari["metric"])


def test_reading_generated_rooms_by_their_code(run):
    _, table = run
    read = table.loc["read-existing"]
    assert not read["indexes"]
    assert read["success"] == 1 and read["tps"] > 5  # the generated rooms R1 … R12 exist and are found
