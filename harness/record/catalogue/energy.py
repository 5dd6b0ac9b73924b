"""Measured power and energy from accelerator telemetry (harness/record/energy.py, docs/energy.md),
beside the table-based `j_per_tok` and `tok_s_per_mw` (chip all-in power), never replacing
them: issue 9. Present only where `power_valid` is 1."""

from __future__ import annotations

from harness.record.catalogue.base import HIGHER, LOWER, NEUTRAL, Metric
from harness.record.catalogue.base import m as _m

_G = "energy"
METRICS: list[Metric] = [
    _m("power_valid", "Power measurement valid", "0/1", NEUTRAL,
       "1 when telemetry covered the measured window on every expected GPU without a gap "
       "over telemetry.max_gap_s (InferenceX's rules); reasons in power_reasons", _G),
    _m("measured_avg_power_w", "Board power per GPU, measured", "W", NEUTRAL,
       "energy integrated per GPU over the measured window / duration / GPUs", _G),
    _m("measured_total_power_w", "Board power, all GPUs, measured", "W", NEUTRAL,
       "energy of all GPUs over the measured window / duration", _G),
    _m("measured_energy_j", "Energy, measured", "J", NEUTRAL,
       "board energy of all GPUs over the measured window (trapezoidal per device)", _G),
    _m("measured_j_per_output_tok", "Joules per output token (measured)", "J/tok", LOWER,
       "measured energy / output tokens of the measured requests", _G),
    _m("measured_j_per_tok", "Joules per token (measured)", "J/tok", LOWER,
       "measured energy / (input + output tokens) of the measured requests", _G),
    _m("measured_tok_s_per_mw", "Tokens/s per MW (measured board power)", "tok/s/MW", HIGHER,
       "(input + output) tokens/s / measured board power of all GPUs in MW", _G),
    _m("measured_j_per_request", "Joules per request (measured)", "J/req", LOWER,
       "measured energy / completed measured requests", _G),
]
