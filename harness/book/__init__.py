"""The one import each chapter makes: `from harness.book import *`.

Importing it sets the chart theme and the offline renderer (harness.book.render) and gives a chapter short calls:
`load(chapter)`, the shared chart builders and tables, `reproduce_box(chapter)`, `verdict_table(verdicts)`, and each
chapter's own tables, charts, sentences and verdicts from harness.book.chapters. Logic lives in those modules;
this file only gathers what the .qmd files call.
"""
from __future__ import annotations

import altair as alt
import pandas as pd
from IPython.display import Markdown

from harness.book import render  # noqa: F401 (sets the theme and the offline renderer)
from harness.book.analysis import throughput_table
from harness.book.chapters.ch0_answer import answer_paragraph, answer_table, knobs_glossary
from harness.book.chapters.ch1_pool import (
                                            busy_steps,
                                            f002_verdicts,
                                            latency_table,
                                            littles_law_table,
                                            phase_steps,
                                            pool_rps_chart,
                                            predictions_table,
                                            queue_steps,
                                            rate_steps,
                                            rps_table,
)
from harness.book.chapters.ch1_sentences import (
                                            busy_sentence,
                                            default_pool_sentence,
                                            latency_sentences,
                                            little_model_sentence,
                                            little_sentence,
                                            load_sentence,
                                            model_sentence,
                                            pace_sentence,
                                            premise_sentence,
                                            rps_sentence,
                                            setup_sentence,
)
from harness.book.chapters.ch2_charts import (
                                            issued_chart,
                                            memory_chart,
                                            noise_chart,
                                            redeploy_chart,
                                            sampler_cost_chart,
                                            spread_chart,
                                            start_curves_chart,
)
from harness.book.chapters.ch2_checks import (
                                            BATCH_SPREAD_GOAL_S,
                                            REDEPLOY_GOAL_MS,
                                            SAMPLER_BUDGET,
                                            checks,
                                            meaning_sentences,
                                            memory_sentence,
                                            noise_sentence,
                                            sampler_sentence,
)
from harness.book.chapters.ch2_lab import (
                                            SPIKE_S,
                                            issued_sentence,
                                            memory_table,
                                            noise_table,
                                            sampler_cost_table,
                                            start_curves,
                                            start_table,
)
from harness.book.chapters.ch2_sentences import (
                                            acceptor_sentence,
                                            batch_sentence,
                                            cores_sentence,
                                            lag_sentence,
                                            overflow_sentence,
                                            repeats_intro,
                                            sampler_setup_sentence,
                                            setup_list,
                                            starts_sentence,
                                            wave_s,
)
from harness.book.chapters.ch2_tables import (
                                            ceilings_table,
                                            check_table,
                                            issued_repeats,
                                            memory_summary,
                                            noise_runs,
                                            noise_waves,
                                            overflow_summary,
                                            redeploy_summary,
                                            starts_summary,
)
from harness.book.chapters.ch3_connections import failure_summary, issued_table, plus_one_table, spike_predictions_table
from harness.book.chapters.ch3_explorer import capacity_explorer, explorer_measured
from harness.book.chapters.ch3_sentences import (
                                            ceiling_paragraph,
                                            executors_sentence,
                                            fixes_sentence,
                                            isolation_list,
                                            knobs_list,
                                            machine_limit_sentence,
                                            meaning_list,
                                            one_connection_paragraph,
                                            plus_one_sentence,
                                            repeats_sentence,
                                            timeouts_sentence,
                                            waves_sentence,
)
from harness.book.chapters.ch3_steps import f000_steps, only_steps
from harness.book.chapters.ch3_verdicts import f000_f, f000_verdicts
from harness.book.chapters.ch4_charts import (
                                            burst_chart,
                                            cpu_chart,
                                            latency_chart,
                                            open_chart,
                                            threads_chart,
                                            throughput_chart,
)
from harness.book.chapters.ch4_sentences import (
                                            burst_sentence,
                                            endpoint_sentence,
                                            few_threads_sentence,
                                            open_sentence,
                                            plateau_sentence,
                                            quota_sentence,
                                            ramp_sentence,
                                            run_time_sentence,
                                            saturation_sentence,
                                            threads_growth_sentence,
                                            threads_sentence,
                                            usl_sentence,
)
from harness.book.chapters.ch4_sentences import meaning_list as ch4_meaning_list
from harness.book.chapters.ch4_steps import steps_table as ch4_table
from harness.book.chapters.ch4_tables import article_intro as f004_article_intro
from harness.book.chapters.ch4_tables import article_sentence as f004_article_sentence
from harness.book.chapters.ch4_tables import article_summary as f004_article_summary
from harness.book.chapters.ch4_tables import little as f004_little
from harness.book.chapters.ch4_tables import measured as ch4_measured
from harness.book.chapters.ch4_tables import predictions as ch4_predictions
from harness.book.chapters.ch4_verdicts import article_table as f004_article
from harness.book.chapters.ch4_verdicts import f004_verdicts
from harness.book.chapters.ch5_charts import apis_chart as ch5_apis_chart
from harness.book.chapters.ch5_charts import gc_chart as ch5_gc_chart
from harness.book.chapters.ch5_charts import pool_chart as ch5_pool_chart
from harness.book.chapters.ch5_charts import timeline_chart as ch5_timeline_chart
from harness.book.chapters.ch5_sentences import apis_sentence as ch5_apis_sentence
from harness.book.chapters.ch5_sentences import final_sentence as ch5_final_sentence
from harness.book.chapters.ch5_sentences import goal_sentence as ch5_goal_sentence
from harness.book.chapters.ch5_sentences import index_sentence as ch5_index_sentence
from harness.book.chapters.ch5_sentences import load_sentence as ch5_load_sentence
from harness.book.chapters.ch5_sentences import meaning_list as ch5_meaning_list
from harness.book.chapters.ch5_sentences import osiv_sentence as ch5_osiv_sentence
from harness.book.chapters.ch5_sentences import pool_sentence as ch5_pool_sentence
from harness.book.chapters.ch5_sentences import setup_sentence as ch5_setup_sentence
from harness.book.chapters.ch5_sentences import tomcat_sentence as ch5_tomcat_sentence
from harness.book.chapters.ch5_steps import steps_table as ch5_table
from harness.book.chapters.ch5_tables import article_tables as f001_article_tables
from harness.book.chapters.ch5_tables import measured_table as ch5_measured
from harness.book.chapters.ch5_tables import model_table as ch5_model_table
from harness.book.chapters.ch5_verdicts import article_apis as f001_article_apis
from harness.book.chapters.ch5_verdicts import f001_verdicts
from harness.book.chapters.ch6_charts import connections_chart as ch6_connections_chart
from harness.book.chapters.ch6_charts import cpu_chart as ch6_cpu_chart
from harness.book.chapters.ch6_charts import handshake_table as ch6_handshake_table
from harness.book.chapters.ch6_charts import ports_chart as ch6_ports_chart
from harness.book.chapters.ch6_charts import series_chart as ch6_series_chart
from harness.book.chapters.ch6_charts import steps_summary as ch6_steps_summary
from harness.book.chapters.ch6_sentences import article_sentence as ch6_article_sentence
from harness.book.chapters.ch6_sentences import bottleneck_sentence as ch6_bottleneck_sentence
from harness.book.chapters.ch6_sentences import connection_sentence as ch6_connection_sentence
from harness.book.chapters.ch6_sentences import generator_sentence as ch6_generator_sentence
from harness.book.chapters.ch6_sentences import header_sentence as ch6_header_sentence
from harness.book.chapters.ch6_sentences import hosts_sentence as ch6_hosts_sentence
from harness.book.chapters.ch6_sentences import misses_sentence as ch6_misses_sentence
from harness.book.chapters.ch6_sentences import model_table as ch6_model_table
from harness.book.chapters.ch6_sentences import overflow_sentence as ch6_overflow_sentence
from harness.book.chapters.ch6_sentences import setup_sentence as ch6_setup_sentence
from harness.book.chapters.ch6_sentences import stall_sentence as ch6_stall_sentence
from harness.book.chapters.ch6_sentences import sweep_sentence as ch6_sweep_sentence
from harness.book.chapters.ch6_sentences import wall_sentence as ch6_wall_sentence
from harness.book.chapters.ch6_sentences import workers_sentence as ch6_workers_sentence
from harness.book.chapters.ch6_sentences import wrk_sentence as ch6_wrk_sentence
from harness.book.chapters.ch6_steps import steps_table as ch6_table
from harness.book.chapters.ch6_verdicts import f003_verdicts
from harness.book.charts import (
                                            busy_threads_chart,
                                            completion_rate_chart,
                                            completions_chart,
                                            connections_chart,
                                            failures_chart,
                                            latency_ecdf_chart,
                                            rps_chart,
                                            ss_timeline_chart,
)
from harness.book.provenance import first_run_sentence, machines_table, readme_commands, reproduce_box
from harness.book.downloads import data_links
from harness.book.tables import captioned, people_table
from harness.book.step_tables import (
                                            ceiling_sentences,
                                            completion_table,
                                            outcome_sentences,
                                            peaks_table,
                                            sampling_sentence,
                                            scale_sentence,
                                            steps_table,
)
from harness.book.chapters.ch7_charts import (
                                            ch7_completions_chart,
                                            ch7_limit_chart,
                                            ch7_memory_chart,
                                            ch7_server_table,
                                            ch7_steps_table,
)
from harness.book.chapters.ch7_sentences import (
                                            ch7_generator_sentence,
                                            ch7_knobs_sentence,
                                            ch7_limit_sentence,
                                            ch7_memory_sentence,
                                            ch7_model_sentence,
                                            ch7_queue_sentence,
                                            ch7_setup_sentence,
                                            ch7_threads_sentence,
                                            ch7_waves_sentence,
)
from harness.book.chapters.ch7_steps import ch7_table
from harness.book.chapters.ch7_verdicts import ch7_verdicts
from harness.book.verdict import verdict_table
from harness.lab.store import ChapterData, load

__all__ = [
    "alt", "pd", "Markdown", "load", "ChapterData", "reproduce_box", "readme_commands", "machines_table", "first_run_sentence",
    "verdict_table", "data_links", "captioned", "people_table",
    # shared charts and tables
    "completions_chart", "ss_timeline_chart", "busy_threads_chart", "rps_chart", "latency_ecdf_chart",
    "completion_rate_chart", "failures_chart", "connections_chart", "throughput_table",
    "steps_table", "peaks_table", "completion_table", "ceiling_sentences", "outcome_sentences", "sampling_sentence",
    "scale_sentence",
    # the answer, up front
    "answer_paragraph", "answer_table", "knobs_glossary",
    # chapter 1
    "f002_verdicts", "predictions_table", "rps_table", "littles_law_table", "latency_table", "pool_rps_chart",
    "rate_steps", "queue_steps", "busy_steps", "phase_steps", "setup_sentence", "load_sentence", "model_sentence",
    "little_model_sentence", "rps_sentence", "pace_sentence", "little_sentence", "latency_sentences", "busy_sentence",
    "premise_sentence", "default_pool_sentence",
    # chapter 2
    "SPIKE_S", "BATCH_SPREAD_GOAL_S", "REDEPLOY_GOAL_MS", "SAMPLER_BUDGET", "batch_sentence", "start_table", "start_curves", "memory_table", "noise_table",
    "sampler_cost_table", "issued_sentence", "memory_sentence", "noise_sentence", "sampler_sentence", "checks",
    "meaning_sentences", "check_table", "ceilings_table", "starts_summary", "memory_summary", "redeploy_summary",
    "noise_runs", "noise_waves", "overflow_summary", "issued_repeats", "start_curves_chart", "spread_chart",
    "issued_chart", "memory_chart", "redeploy_chart", "sampler_cost_chart", "noise_chart", "cores_sentence", "setup_list",
    "starts_sentence", "overflow_sentence", "acceptor_sentence", "repeats_intro", "sampler_setup_sentence", "lag_sentence",
    "wave_s",
    # chapter 3
    "f000_verdicts", "f000_f", "spike_predictions_table", "issued_table", "plus_one_table", "failure_summary",
    "capacity_explorer", "explorer_measured", "f000_steps", "only_steps", "knobs_list", "executors_sentence",
    "waves_sentence", "timeouts_sentence", "ceiling_paragraph", "repeats_sentence", "isolation_list", "fixes_sentence",
    "plus_one_sentence", "one_connection_paragraph", "machine_limit_sentence", "meaning_list",
    # chapter 4
    "ch4_table", "ch4_predictions", "ch4_measured", "f004_article", "f004_article_summary", "f004_article_sentence", "f004_article_intro", "ramp_sentence",
    "f004_little", "f004_verdicts", "endpoint_sentence", "plateau_sentence", "quota_sentence", "threads_sentence",
    "usl_sentence", "burst_sentence", "few_threads_sentence", "open_sentence", "run_time_sentence", "saturation_sentence",
    "threads_growth_sentence", "ch4_meaning_list", "throughput_chart", "latency_chart", "cpu_chart", "threads_chart", "burst_chart", "open_chart",
    # chapter 5
    "ch5_table", "ch5_measured", "ch5_model_table", "f001_article_tables", "f001_article_apis", "f001_verdicts",
    "ch5_apis_chart", "ch5_gc_chart", "ch5_pool_chart", "ch5_timeline_chart", "ch5_apis_sentence", "ch5_final_sentence",
    "ch5_goal_sentence", "ch5_index_sentence", "ch5_load_sentence", "ch5_meaning_list", "ch5_osiv_sentence",
    "ch5_pool_sentence", "ch5_setup_sentence", "ch5_tomcat_sentence",
    # chapter 6
    "ch6_table", "ch6_overflow_sentence", "ch6_misses_sentence", "ch6_connection_sentence", "ch6_generator_sentence", "ch6_ports_chart", "ch6_wall_sentence", "ch6_series_chart", "ch6_connections_chart", "ch6_cpu_chart", "ch6_handshake_table", "ch6_steps_summary", "ch6_article_sentence", "ch6_bottleneck_sentence", "ch6_header_sentence", "ch6_hosts_sentence", "ch6_model_table", "ch6_setup_sentence", "ch6_stall_sentence", "ch6_sweep_sentence", "ch6_workers_sentence", "ch6_wrk_sentence", "f003_verdicts",
    # chapter 7
    "ch7_table", "ch7_verdicts", "ch7_completions_chart", "ch7_limit_chart", "ch7_memory_chart", "ch7_steps_table",
    "ch7_server_table",
    "ch7_setup_sentence", "ch7_waves_sentence", "ch7_threads_sentence", "ch7_memory_sentence", "ch7_limit_sentence",
    "ch7_model_sentence", "ch7_generator_sentence", "ch7_queue_sentence",
    "ch7_knobs_sentence",
]
