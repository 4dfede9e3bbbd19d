"""tests/lane.py on a made-up suite, in real pytest sessions: the `alongside` end-to-end tests run in a lane of their
own and report in the session that started it, as themselves; that session runs the modules it takes once its own
tests are done, and a `first` module is the lane's, run before any is shared; what the lane never reported fails there."""
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)
TESTS = Path(__file__).parent
SUITE = {
    "conftest.py": f"""
        import sys
        sys.path[:0] = [{str(TESTS)!r}, {str(TESTS.parent)!r}]  # the lane plugin, and the harness it imports
        pytest_plugins = ("lane",)
        """,
    "pytest.ini": """
        [pytest]
        markers =
            e2e: end to end
            alongside: beside the unit tests
        """,
    "test_unit.py": """
        def test_unit():
            pass
        """,
    "test_a_lane.py": """
        import os
        import pytest
        pytestmark = pytest.mark.alongside

        @pytest.fixture(scope="module")
        def module_state():
            yield "set up"

        def test_unit_beside_the_lane(module_state):  # not end to end: runs here, before the lane's tests
            assert module_state == "set up"

        @pytest.mark.e2e
        def test_passes():
            print("ran in the lane:", "LAB_TEST_LANE_REPORTS" in os.environ)
            if "LAB_TEST_LANE_CLAIMS" in os.environ:  # the lane waits until the other session has taken test_c
                import time
                from pathlib import Path
                deadline = time.monotonic() + 30
                while not Path("shared.txt").exists() and time.monotonic() < deadline:
                    time.sleep(0.05)

        @pytest.mark.e2e
        def test_fails():
            assert 1 + 1 == 3, "measured in the lane"

        @pytest.mark.e2e
        def test_crashes():
            if os.environ.get("CRASH"):
                os._exit(3)  # the lane's session dies: no report for this test or the next

        @pytest.mark.e2e
        def test_after_the_crash():
            pass
        """,
    "test_0_first.py": """
        import os
        from pathlib import Path
        import pytest
        pytestmark = [pytest.mark.e2e, pytest.mark.alongside(first=True)]

        def test_before_sharing():  # where it ran, and whether another module could yet run beside it
            claims = Path(os.environ.get("LAB_TEST_LANE_CLAIMS", "."))
            Path("first.txt").write_text(f"lane={'LAB_TEST_LANE_REPORTS' in os.environ} shared={(claims / '.shared').exists()}")
        """,
    "test_c_shared.py": """
        import os
        from pathlib import Path
        import pytest
        pytestmark = [pytest.mark.e2e, pytest.mark.alongside]

        def test_shared():
            Path("shared.txt").write_text(f"lane={'LAB_TEST_LANE_REPORTS' in os.environ}")
        """,
    "test_b_alone.py": """
        import pytest
        pytestmark = pytest.mark.e2e

        def test_alone():
            pass
        """,
}


@pytest.fixture
def suite(pytester):
    for name, text in SUITE.items():
        (pytester.path / name).write_text(textwrap.dedent(text))
    return pytester


def test_the_lanes_tests_report_as_themselves_in_the_session_that_started_it(suite):
    result = suite.runpytest_subprocess("-rA", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8, failed=1)  # test_b_alone's set-up found the stack test_a_lane's unit test left torn down
    result.stdout.fnmatch_lines(["test_a_lane.py .*",  # its unit test, here
                                 "test_c_shared.py .*",  # the lane's last module, taken by this session and run here
                                 "test_a_lane.py .F..*", "test_0_first.py .*",  # replayed from the lane
                                 "test_b_alone.py .*", "test_unit.py .*",
                                 "*AssertionError: measured in the lane",
                                 "ran in the lane: True",  # its captured output, replayed here
                                 "alongside lane: 5 end-to-end tests in a session of their own, * (exit code 1); "
                                 "1 in this session after its own tests",
                                 "FAILED test_a_lane.py::test_fails - AssertionError: measured in the lane"])


def test_the_sessions_share_the_modules_but_a_first_one_is_the_lanes_before_sharing(suite):
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=8, failed=1)
    assert (suite.path / "first.txt").read_text() == "lane=True shared=False"
    # the lane takes the modules in order, this session from the last back: the last one is this session's
    assert (suite.path / "shared.txt").read_text() == "lane=False"


def test_a_test_the_lane_did_not_finish_fails_with_the_lanes_output(suite, monkeypatch):
    monkeypatch.setenv("CRASH", "1")
    result = suite.runpytest_subprocess("-rA", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6, failed=2, errors=1)
    result.stdout.fnmatch_lines(["test_a_lane.py .*", "test_c_shared.py .*", "test_a_lane.py .FFE*",
                                 "*the alongside lane (its own pytest session, exit code 3 after * s) did not finish*"])
    result.stdout.fnmatch_lines(["FAILED test_a_lane.py::test_crashes - the alongside lane*"])  # died in its call
    result.stdout.fnmatch_lines(["ERROR test_a_lane.py::test_after_the_crash - the alongside lane*"])  # never began


def test_without_other_modules_the_marked_tests_run_in_this_session(suite):
    result = suite.runpytest_subprocess("test_a_lane.py", "-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*ran in the lane: False*"])
    assert "alongside lane" not in result.stdout.str()
