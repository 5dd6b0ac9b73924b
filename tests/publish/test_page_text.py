"""What the pages say about a point, as text a reader can use: an agentic point's
shape as the distribution its trace gave, absent telemetry said once and never as "None"."""

from __future__ import annotations

from harness.publish.dashboards.page import hover_lines, render_page
from harness.publish.dashboards.point_page import NO_TELEMETRY, summary_rows

AGENTIC = {"point_id": "a", "run_id": "r", "scenario": "agentic-weka-cpu", "model": "m",
           "precision": "q4", "chip": "cpu", "engine": "llamacpp",
           "scenario_kind": "agentic", "conc": 2, "isl": 0, "osl": 0, "valid": True,
           "median_input_tokens": 1510.0, "p90_input_tokens": 4200.0,
           "median_output_tokens": 96.0, "p90_output_tokens": 310.0, "spec_method": "mtp",
           "spec_k": 3, "spec_acceptance_length": 2.2, "spec_realised_al": None,
           "power_valid": 0, "power_source": "none", "median_ttft": 0.25,
           "measured_j_per_tok": None, "measured_avg_power_w": None}


def test_agentic_shape_is_the_traces_distribution_not_zero() -> None:
    text = "\n".join(hover_lines(AGENTIC))
    assert "ISL p50 1510 / p90 4200, OSL p50 96 / p90 310 tokens" in text
    assert "ISL 0" not in text and "OSL 0" not in text


def test_absent_figures_are_never_none() -> None:
    text = "\n".join(hover_lines(AGENTIC))
    assert "None" not in text
    assert "realised not observed" in text
    assert "J/token" not in text  # no telemetry: no power line per point


def test_power_line_when_measured_or_when_it_failed() -> None:
    measured = {**AGENTIC, "measured_j_per_tok": 0.5, "measured_avg_power_w": 300.0,
                "power_source": "nvml", "power_valid": 1}
    assert "measured 0.5 J/token, 300 W avg per GPU" in hover_lines(measured)
    failed = {**AGENTIC, "power_source": "nvidia-smi", "power_reasons": ["sampling_gap_exceeded"]}
    assert "power from nvidia-smi not valid: sampling_gap_exceeded" in hover_lines(failed)


def test_point_table_says_no_telemetry_once_with_units() -> None:
    rows = summary_rows({**AGENTIC, "has_telemetry": False})
    assert rows.count(["power", NO_TELEMETRY]) == 1
    assert not any("power valid" in label.lower() for label, _ in rows)
    assert ["TTFT, median (ms)", "250"] in rows


def test_dashboard_says_no_telemetry_once() -> None:
    html = render_page([AGENTIC, {**AGENTIC, "point_id": "b"}], "t")
    assert html.count(NO_TELEMETRY) == 1
