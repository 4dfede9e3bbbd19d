"""Chapter 4 scaled down, end to end: real Spring Boot with its /work endpoint, k6 and the CPU quota. The plateau
moves with the server's CPU quota; more threads past the knee do not move it (F004-b)."""
import pytest

from harness.book.chapters.ch4.runs import steps_table

from conftest import CHAPTER4_SCALED
from test_e2e import profile_data

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def table(chapter4_measured):  # the run test_e2e_placement.py reads too
    with profile_data(chapter4_measured, CHAPTER4_SCALED) as data:
        yield steps_table(data).set_index("step")


def test_the_plateau_follows_the_cpu_quota(table):
    one, half = table.loc["one-core"], table.loc["half-core"]
    assert (one["cpu_quota"], half["cpu_quota"]) == (1.0, 0.5)
    # Halving the quota lowers the plateau. How far below half it falls is this machine's cost of the quota itself,
    # not the lab's behaviour: one ÷ half read 1.95-1.98 on one VM and 2.11-2.69 on a slower one, where half a core
    # spent more CPU per request (one run: 81.5/s on 0.94 of a core, 11.5 ms a request; 31.5/s on 0.50, 15.9 ms;
    # longer holds read after the warm-up gave 2.44 too): a benchmark for notes, not a line to pass. What the lab must
    # do is asserted: the quota lowers the plateau, is applied (the server used all of it) and bounds it.
    assert one["tps"] / half["tps"] >= 1.6
    assert half["server_cpu_cores"] == pytest.approx(0.5, abs=0.08)  # the server used its quota, all of it
    assert half["tps"] <= half["model_tps"] * 1.05  # never above the CPU bound


def test_more_threads_past_the_knee_do_not_raise_the_plateau(table):
    # Not `many <= few * 1.1`: two fresh JVMs warming up under half a core differ by more than 10 % on their own
    # (74 and 84/s seen with the same threads), so that line failed on noise. The claim is the quota's bound.
    many, one_core = table.loc["half-core-800", "tps"], table.loc["one-core", "tps"]
    assert many <= table.loc["half-core-800", "model_tps"] * 1.05  # the half core's CPU bound, threads or not
    assert many <= one_core * 0.75  # far from what a whole core gave: the quota held, 800 threads or not
    few, more = table.loc["half-core", "current_threads_peak"], table.loc["half-core-800", "current_threads_peak"]
    assert few <= 20 and more >= 2.5 * few  # threads.max 20 held, and 800 let far more threads work: not vacuous
    assert more <= 100 + 10  # Tomcat made threads only for the users


def test_k6_kept_to_its_own_core_and_was_not_the_limit(table):
    assert (table["k6_cpu_cores"] < 0.8).all()
    assert (table["errors"] == 0).all()
