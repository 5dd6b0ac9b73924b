"""The acceptance table, lookups, injection plans and the embedded engine's flags."""

from __future__ import annotations

import json

import pytest
import yaml

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.engines.llamacpp import LlamaCppAdapter
from harness.speculation.acceptance import (
    TABLE_DIR,
    AcceptanceRow,
    load_table,
    lookup,
    resolve,
    synthetic_rates,
)
from tests.helpers import harness


@pytest.fixture(scope="module")
def table():
    return load_table()


@pytest.mark.parametrize(("al", "k", "rates"), [
    (2.5, 4, [1.0, 0.5, 0.0, 0.0]), (3.5, 4, [1.0, 1.0, 0.5, 0.0]), (1.0, 3, [0.0, 0.0, 0.0]),
    (5.0, 4, [1.0, 1.0, 1.0, 1.0]), (1.5, 1, [0.5]), (2.25, 3, [1.0, 0.25, 0.0])])
def test_synthetic_rates_are_vllms(al, k, rates) -> None:
    assert synthetic_rates(al, k) == pytest.approx(rates)
    assert 1 + sum(synthetic_rates(al, k)) == pytest.approx(al)


def test_synthetic_rates_outside_one_to_k_plus_one() -> None:
    with pytest.raises(ValueError, match=r"\[1, 4\]"):
        synthetic_rates(4.5, 3)


# golden file -> (table model id, speculator, drafter, sample method): what the engine ran
GOLDEN = {
    "dsv4_mtp.yaml": ("deepseek-v4-pro", "mtp", "", "greedy"),
    "dsv4-pro-0813-dspark.yaml": ("deepseek-v4-pro-0813", "dspark", "", "probabilistic"),
    "glm5.2_mtp.yaml": ("glm-5.2", "mtp", "", "greedy"),
    "kimik2.5_eagle3.yaml": ("kimi-k2.5", "eagle3", "lightseekorg/kimi-k2.5-eagle3-mla",
                             "greedy"),
    "kimik3_dspark.yaml": ("kimi-k3", "dspark", "Inferact/Kimi-K3-DSpark", "greedy"),
    "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method.yaml": (
        "kimi-k3", "dspark", "Inferact/Kimi-K3-DSpark", "probabilistic-block"),
    "qwen3.5_mtp.yaml": ("qwen3.5-397b-a17b", "mtp", "", "greedy"),
    "minimaxm3_eagle3.yaml": ("minimax-m3", "eagle3", "Inferact/MiniMax-M3-EAGLE3", "greedy"),
    "minimaxm3_eagle3_gqa.yaml": ("minimax-m3", "eagle3", "Inferact/MiniMax-M3-EAGLE3-GQA",
                                  "greedy")}


def test_every_golden_file_is_imported() -> None:
    files = {p.name for p in (TABLE_DIR / "source" / "inferencex_golden_al").glob("*.yaml")}
    assert files == set(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_table_matches_the_golden_yaml_files(table, name) -> None:
    model, spec, draft, sample = GOLDEN[name]
    doc = yaml.safe_load((TABLE_DIR / "source" / "inferencex_golden_al" / name).read_text())
    (curves,) = doc.values()
    n = 0
    for mode, by_k in curves.items():
        thinking = {"thinking_on": "on", "thinking_off": "off"}[mode]
        for k, al in by_k.items():
            rows = [r for r in table if (r.model, r.speculator, r.k, r.thinking, r.draft,
                                         r.sample_method) ==
                    (model, spec, int(k), thinking, draft, sample) and r.golden]
            assert len(rows) == 1 and rows[0].al == pytest.approx(round(float(al), 2))
            assert f"golden_al_distribution/{name}@843c6254" in rows[0].notes
            assert rows[0].source.endswith(f"843c6254ff69b567f772f6a5fd97675af3d04431/"
                                           f"golden_al_distribution/{name}")
            n += 1
    assert n >= 8


def test_lookup_prefers_exact_thinking_then_na(table) -> None:
    assert lookup(table, "glm-5.2", "mtp", 4, True).al == 3.33
    assert lookup(table, "deepseek-v4-pro", "mtp", 4, False).al == 3.0
    # Llama-4-Maverick rows are "n/a" (non-reasoning): they answer either mode
    assert lookup(table, "llama-4-maverick", "eagle3", 3, False).thinking == "n/a"


def test_lookup_without_an_entry_names_the_nearest(table) -> None:
    with pytest.raises(KeyError) as ei:
        lookup(table, "glm-5.2", "mtp", 12, True)
    msg = ei.value.args[0]
    assert "no acceptance length for model 'glm-5.2', speculator 'mtp', k=12" in msg
    assert "glm-5.2 / mtp / k=8 / thinking on: AL 4.06" in msg


def _sc(*overrides):
    return compose_sweep(list(overrides))


def test_agentic_speculative_points_inject_the_table_value_by_default() -> None:
    sc = _sc("model=deepseek-r1", "scenarios=agentic-weka", "speculator=mtp",
             "speculator.k=3", "engine=endpoint", "engine.url=http://x",
             "engine.can_inject_acceptance=true", "model.name=glm-5.2", "thinking=true")
    plan = resolve(sc, can_inject=True, where="w")
    assert (plan.mode, plan.length) == ("injected", 2.99)
    assert plan.source.startswith("table published.csv:") and "InferenceX" in plan.source


def test_fixed_sequence_speculative_points_run_real_acceptance() -> None:
    sc = _sc("speculator=ngram")
    assert resolve(sc, can_inject=True, where="w").mode == "real"


def test_an_engine_that_cannot_inject_refuses_unless_real_is_asked() -> None:
    sc = _sc("scenarios=agentic-weka-cpu", "speculator=draft_model",
             "speculator.acceptance.length=2.0")
    with pytest.raises(ConfigError) as ei:
        resolve(sc, can_inject=False, where="recipes/speculator/draft_model.yaml")
    assert ei.value.key == "speculator.acceptance.mode"
    assert "speculator.acceptance.mode=real" in ei.value.fix
    real = resolve(_sc("scenarios=agentic-weka-cpu", "speculator=ngram",
                       "speculator.acceptance.mode=real"), can_inject=False, where="w")
    assert real.mode == "real" and not real.representative


def test_missing_table_entry_is_a_config_error() -> None:
    sc = _sc("scenarios=agentic-weka-cpu", "speculator=draft_model", "speculator.k=9")
    with pytest.raises(ConfigError, match="nearest entries"):
        resolve(sc, can_inject=True, where="w",
                table=[AcceptanceRow("x", "draft_model", 2, "n/a", 2.0)])


def test_an_ngram_drafter_is_refused_for_injected_agentic_points_up_front() -> None:
    sc = _sc("scenarios=agentic-weka-cpu", "speculator=ngram", "speculator.k=3")
    with pytest.raises(ConfigError) as ei:
        resolve(sc, can_inject=True, where="recipes/speculator/ngram.yaml")
    assert ei.value.key == "speculator.method" and "proposes" in ei.value.problem
    # real acceptance on the same content stays possible (flagged as not representative)
    real = resolve(_sc("scenarios=agentic-weka-cpu", "speculator=ngram",
                       "speculator.acceptance.mode=real"), can_inject=True, where="w")
    assert real.mode == "real" and not real.representative


def test_llamacpp_flags_for_injected_and_real_acceptance() -> None:
    plan = resolve(_sc("speculator=draft_model", "speculator.k=4",
                       "speculator.acceptance.mode=injected",
                       "speculator.acceptance.length=2.5"), True, "w")
    inj = LlamaCppAdapter(_sc("speculator=draft_model", "speculator.draft_model=self",
                              "speculator.k=4"), plan)
    cfg = json.loads(inj.launch_plan(8000, 2).argv[-1])
    assert cfg["speculative"]["synthetic_rates"] == [1.0, 0.5, 0.0, 0.0]
    assert cfg["speculative"]["draft_path"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    real = LlamaCppAdapter(_sc("speculator=ngram", "speculator.k=5"))
    cfg = json.loads(real.launch_plan(8000, 2).argv[-1])
    assert cfg["speculative"] == {"method": "ngram", "k": 5, "ngram_min": 2,
                                  "draft_path": None, "synthetic_rates": None}
    assert cfg["n_parallel"] == 2 and cfg["n_ctx"] == 2 * (128 + 64 + 256)


def test_acceptance_list_cli() -> None:
    r = harness("acceptance", "list", "--model", "kimi-k2.5")
    assert r.returncode == 0 and "16 rows" in r.stdout and "eagle3" in r.stdout


# A golden curve, a model-card value and two harness calibrations of one key (smollm2-135m,
# draft_model, k=2, thinking off), plus a calibration of another key.
def _row(file, al, kind, measured_on="", k=2, source="s"):
    return AcceptanceRow("smollm2-135m", "draft_model", k, "off", al, source=source,
                         source_kind=kind, measured_on=measured_on, file=file)


MIXED = [
    _row("calibrated.csv:2", 2.9, "calibration (real acceptance)", "2026-11-30"),
    _row("calibrated.csv:3", 2.7, "calibration (real acceptance)", "2026-12-01"),
    _row("calibrated.csv:4", 3.1, "calibration (real acceptance)", "2026-12-01", k=3),
    _row("published.csv:2", 2.2, "model card"),
    _row("published.csv:3", 2.4, "InferenceX golden AL curve (measured real acceptance)",
         source="https://github.com/SemiAnalysisAI/InferenceX/x.yaml"),
]


def test_lookup_prefers_the_golden_row_and_never_a_calibration_unless_asked() -> None:
    assert lookup(MIXED, "smollm2-135m", "draft_model", 2, False).file == "published.csv:3"
    assert lookup(MIXED[:-1], "smollm2-135m", "draft_model", 2, False).file == "published.csv:2"
    # calibrations only by name: `calibrated` (newest first) or one row's file:line
    assert lookup(MIXED, "smollm2-135m", "draft_model", 2, False,
                  source="calibrated").file == "calibrated.csv:3"
    assert lookup(MIXED, "smollm2-135m", "draft_model", 2, False,
                  source="calibrated.csv:2").al == 2.9
    with pytest.raises(KeyError, match=r"is smollm2-135m / draft_model / k=3"):
        lookup(MIXED, "smollm2-135m", "draft_model", 2, False, source="calibrated.csv:4")
    with pytest.raises(KeyError, match=r"no acceptance row calibrated\.csv:9"):
        lookup(MIXED, "smollm2-135m", "draft_model", 2, False, source="calibrated.csv:9")
    # only a calibration has k=3: the published lookup fails and says how to use it
    with pytest.raises(KeyError) as ei:
        lookup(MIXED, "smollm2-135m", "draft_model", 3, False)
    assert "among the published rows" in ei.value.args[0]
    assert "speculator.acceptance.source=calibrated or =calibrated.csv:4" in ei.value.args[0]


def _agentic(*extra):
    return _sc("scenarios=agentic-weka-cpu", "speculator=draft_model", "speculator.k=2",
               *extra)


def test_the_point_records_which_row_it_injected() -> None:
    plan = resolve(_agentic(), can_inject=True, where="w", table=MIXED)
    assert plan.length == 2.4
    assert plan.source.startswith("table published.csv:3: smollm2-135m / draft_model / k=2 / "
                                  "thinking off = AL 2.4 [InferenceX golden AL curve")
    assert plan.fields()["spec_acceptance_source"] == plan.source
    cal = resolve(_agentic("speculator.acceptance.source=calibrated"), True, "w", MIXED)
    assert (cal.length, cal.source.split(":")[:2]) == (2.7, ["table calibrated.csv", "3"])
    assert "[calibration (real acceptance)]" in cal.source
    named = resolve(_agentic("speculator.acceptance.source=calibrated.csv:2"), True, "w", MIXED)
    assert named.length == 2.9 and named.source.startswith("table calibrated.csv:2: ")
    # the shipped table: a golden row, named with its file:line and source kind
    real = resolve(_sc("scenarios=agentic-weka", "speculator=mtp", "speculator.k=3",
                       "engine=endpoint", "engine.url=http://x", "model=deepseek-r1",
                       "model.name=glm-5.2", "thinking=true"), True, "w")
    assert real.source.startswith("table published.csv:") and "golden" in real.source


def test_a_bad_or_missing_acceptance_source_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as ei:
        resolve(_agentic("speculator.acceptance.source=latest"), True, "w", MIXED)
    assert ei.value.key == "speculator.acceptance.source" and "file:line" in ei.value.fix
    with pytest.raises(ConfigError) as ei:
        resolve(_agentic("speculator.acceptance.source=calibrated.csv:4"), True, "w", MIXED)
    assert ei.value.key == "speculator.acceptance.source" and "k=3" in ei.value.problem
    with pytest.raises(ConfigError, match="nearest entries") as ei:
        resolve(_agentic("speculator.k=3"), True, "w", MIXED)
    assert "source=calibrated" in ei.value.problem
