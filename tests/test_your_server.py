"""Your own server's page (chapters/a2-your-server.qmd, harness/book/chapters/ch0/your_server.py) on profiles written
here: it finds each report@<jar>/profile.json in the data folder, and its limits table, sentences and chart follow the
profile's numbers and what it had to assume."""
from __future__ import annotations

from harness.book.chapters.ch0 import your_server
from harness.lab import profile as p


def sample_profile(rates=(40.0, 80.0, 158.0, 160.0), pool=None) -> p.Profile:
    settings = p.Settings(8, 20, 5, pool, {"threads": p.FROM_METRICS, "max_connections": p.FROM_METRICS,
                                            "accept_count": p.FROM_DEFAULT})
    ramp = [p.RampPoint(u, r, min(u, 8) / 0.05, f"ramp-{u}") for u, r in zip([2, 4, 8, 16], rates, strict=True)]
    return p.Profile("/jars/shop.jar", "/api/x", 50.0, settings, ramp, ceiling_users=46, ceiling_held=26,
                     memory_per_connection_kib=12.5,
                     notes=["accept-count: the app reports none; Spring Boot's default (100) is assumed"])


def test_every_profile_in_the_data_folder_is_found(data_dir):
    folder = data_dir / "report@shop"
    folder.mkdir(parents=True)
    p.write_profile(sample_profile(), folder)
    (data_dir / "report@half-done").mkdir()  # a profile that stopped before its end wrote no profile.json
    (data_dir / "chapter3@shop").mkdir()
    assert list(your_server.profiles()) == ["report@shop"]
    assert your_server.profiles()["report@shop"] == sample_profile()


def test_the_limits_come_in_the_order_they_bind_with_the_models_number_beside():
    frame = your_server.limits_frame(sample_profile())
    assert list(frame["Limit"]) == ["Service time at one user (S)", "Requests in service at once", "Throughput plateau",
                                    "Connections held at once", "Memory per held connection"]
    rows = frame.set_index("Limit")
    assert rows.loc["Requests in service at once", "Measured"] == ("8 (the plateau × S, Little's law): the worker "
                                                                  "threads bind first")
    assert rows.loc["Connections held at once", "Measured"] == "26 of 46 users"
    assert rows.loc["Connections held at once", "The model"].startswith("26 (max-connections")
    assert rows.loc["Throughput plateau", "The model"].startswith("160\u00a0requests/s")
    assert rows.loc["Connections held at once", "Explained in"] == "@sec-from-300-to-15000"


def test_the_words_follow_what_binds_and_a_pool_gets_its_row():
    before = your_server.limits_frame(sample_profile(rates=(40.0, 80.0, 100.0, 101.0), pool=10)).set_index("Limit")
    assert before.loc["Requests in service at once", "Measured"].endswith("something binds before the threads (the "
                                                                          "CPU, a pool, a lock)")
    assert before.loc["Database pool", "The model"] == "10 connections"


def test_the_sentence_says_where_each_setting_came_from_and_what_was_assumed():
    sentence = your_server.sources_sentence(sample_profile())
    assert sentence.startswith("The steps were sized by threads 8 from the app's metrics, max-connections 20 from the "
                               "app's metrics and accept-count 5 from Spring Boot's default.")
    assert sentence.endswith("Accept-count: the app reports none; Spring Boot's default (100) is assumed.")


def test_the_ramp_chart_puts_each_step_on_littles_laws_line():
    spec = your_server.ramp_chart(sample_profile()).to_dict()
    measured = next(d for d in spec["datasets"].values() if any("step" in row for row in d))
    assert [row["rps"] for row in measured] == [40.0, 80.0, 158.0, 160.0]
    line = next(d for d in spec["datasets"].values() if all(row.get("series") == "model" for row in d))
    assert [row["rps"] for row in line] == [40.0, 80.0, 160.0, 160.0]
