"""The sample server's own JUnit tests (sample-server/src/test: its endpoints, settings, management port), run by
Maven as `./mvnw -B -q test` in the background while the unit tests run (tests/background.py)."""
import pytest

pytestmark = pytest.mark.junit


def test_the_sample_servers_junit_tests_pass(junit):
    code, output, seconds = junit
    print(f"JUnit: {seconds:.0f} s")
    assert code == 0, f"./mvnw -B -q test (sample-server/) failed with exit code {code}:\n{output[-6000:]}"
