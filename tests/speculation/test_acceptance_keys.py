"""The acceptance lookup keys on what the engine runs (drafter checkpoint, sample method), and an
injected AL taken from another draft length is refused. Numbers are InferenceX's golden curves
at 843c6254 (golden_al_distribution/)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.speculation.acceptance import k_mismatch, load_table, lookup, resolve
from harness.speculation.golden import golden_rows, sample_method


@pytest.fixture(scope="module")
def table():
    return load_table()


def test_a_minimax_eagle3_gqa_run_gets_the_gqa_curve(table) -> None:
    gqa = lookup(table, "minimax-m3", "eagle3", 3, True,
                 draft="Inferact/MiniMax-M3-EAGLE3-GQA")
    plain = lookup(table, "minimax-m3", "eagle3", 3, True, draft="Inferact/MiniMax-M3-EAGLE3")
    assert (gqa.al, plain.al) == (2.78, 2.83)
    assert gqa.source.endswith("minimaxm3_eagle3_gqa.yaml")
    # the engine loads a local copy: the drafter is its last path component, not a substring
    local = lookup(table, "minimax-m3", "eagle3", 3, True,
                   draft="/data/models/MiniMax-M3-EAGLE3-GQA")
    assert local.al == 2.78
    # no drafter named: two curves answer, so the lookup refuses to pick one
    with pytest.raises(KeyError, match=r"several drafters.*EAGLE3-GQA"):
        lookup(table, "minimax-m3", "eagle3", 3, True)


def test_a_kimi_k3_probabilistic_dspark_run_gets_the_probabilistic_curve(table) -> None:
    draft = "Inferact/Kimi-K3-DSpark"
    greedy = lookup(table, "kimi-k3", "dspark", 7, True, draft=draft)
    block = lookup(table, "kimi-k3", "dspark", 7, True, draft=draft,
                   sample_method="probabilistic-block")
    # synthetic rejection replaces the block sampler: a probabilistic-draft injected run
    # takes the probabilistic curve (kimik3_fp4_b300_vllm_mtp.sh injects 3.84 at k=7)
    prob = lookup(table, "kimi-k3", "dspark", 7, True, draft=draft,
                  sample_method="probabilistic")
    assert (greedy.al, block.al, prob.al) == (3.78, 3.84, 3.84)
    assert "probabilistic-block" in block.describe() and "greedy" not in greedy.describe()
    # the ATOM Kimi-K3 script's values from the same curve: k=6 -> 3.75, k=2 -> 2.51
    assert lookup(table, "kimi-k3", "dspark", 6, True, draft=draft,
                  sample_method="probabilistic-block").al == 3.75
    with pytest.raises(KeyError, match="sample method 'probabilistic'"):
        lookup(table, "minimax-m3", "eagle3", 3, True, draft="Inferact/MiniMax-M3-EAGLE3",
               sample_method="probabilistic")


def test_an_injected_al_from_another_draft_length_is_refused(table) -> None:
    # dsv4-fp4-gb200-dynamo-vllm-agentic-mtp2-*: SYNTHETIC_ACCEPTANCE_LENGTH=2.49 at k=2
    msg = k_mismatch(table, "deepseek-v4-pro", "mtp", 2, True, 2.49)
    assert msg is not None and "k=3 value" in msg and "at k=2 the curve says 2.27" in msg
    assert k_mismatch(table, "deepseek-v4-pro", "mtp", 3, True, 2.49) is None
    assert k_mismatch(table, "deepseek-v4-pro", "mtp", 2, True, 2.27) is None
    assert k_mismatch(table, "deepseek-v4-pro", "mtp", 2, True, 2.4) is None  # on no curve
    sc = compose_sweep(["model=deepseek-v4-pro", "scenarios=agentic-weka", "speculator=mtp",
                        "speculator.k=2", "speculator.acceptance.length=2.49", "thinking=true",
                        "engine=vllm"])
    with pytest.raises(ConfigError) as ei:
        resolve(sc, can_inject=True, where="w", table=table)
    assert ei.value.key == "speculator.acceptance.length" and "2.27" in ei.value.problem
    assert "speculator.acceptance.other_k=allow" in ei.value.fix
    # upstream's keys as they are, by name
    allowed = replace(sc, speculator=replace(sc.speculator, acceptance=replace(
        sc.speculator.acceptance, other_k="allow")))
    assert resolve(allowed, can_inject=True, where="w", table=table).length == 2.49


def test_a_recipe_point_injects_the_curve_of_its_drafter_and_sample_method(table) -> None:
    def plan(*extra):
        sc = compose_sweep(["scenarios=agentic-weka", "engine=vllm", "thinking=true", *extra])
        return resolve(sc, can_inject=True, where="w", table=table)

    gqa = plan("model=minimax-m3", "speculator=eagle3", "speculator.k=3",
               "speculator.draft_model=Inferact/MiniMax-M3-EAGLE3-GQA")
    assert gqa.length == 2.78 and "EAGLE3-GQA" in gqa.source
    k3 = plan("model=kimi-k3", "speculator=dspark", "speculator.k=7",
              "speculator.sample_method=probabilistic")
    assert k3.length == 3.84


GOLDEN_TEXT = """\
# Source GitHub Actions run: https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1
# dataset: coding | temperature: 1.0 | top_p: 0.95 | output_len: 4096
# thinking_on chat_template_kwargs: {"enable_thinking": true}
# speculative-config: draft_sample_method=probabilistic | rejection_sample_method=block
# Measured on foo-9-nvfp4 (B300, vLLM DSpark, draft: Org/Foo-DSpark), per num_speculative_tokens.
foo-9-nvfp4:
  thinking_on:
    1: 1.804
    2: 2.5
"""


def test_golden_rows_read_what_the_header_says() -> None:
    rows = golden_rows("foo_dspark.yaml", GOLDEN_TEXT, "a" * 40)
    assert [(r.model, r.precision, r.speculator, r.draft, r.sample_method, r.k, r.al)
            for r in rows] == [
        ("foo-9", "nvfp4", "dspark", "Org/Foo-DSpark", "probabilistic-block", 1, 1.8),
        ("foo-9", "nvfp4", "dspark", "Org/Foo-DSpark", "probabilistic-block", 2, 2.5)]
    assert rows[0].golden and "foo_dspark.yaml@aaaaaaaa" in rows[0].notes
    assert "top_p: 0.95" in rows[0].sampling and "enable_thinking" in rows[0].sampling
    assert sample_method("# Measured on x (B300, vLLM MTP)") == "greedy"
    assert sample_method("# speculative-config: method=dspark | "
                         "draft_sample_method=probabilistic") == "probabilistic"


def test_every_golden_row_of_a_master_model_is_selected_by_its_own_key(table) -> None:
    from pathlib import Path

    models = {p.stem for p in (Path(__file__).resolve().parents[2] / "recipes" / "model")
              .glob("*.yaml")}
    golden = [r for r in table if r.golden and r.model in models]
    for r in golden:
        got = lookup(table, r.model, r.speculator, r.k, r.thinking == "on", draft=r.draft,
                     sample_method=r.sampled)
        assert got.file == r.file, (r.key(), got.key())
    # DeepSeek-V4-Pro 16, Qwen3.5 16, GLM-5.2 8, Kimi-K3 16, MiniMax-M3 32
    assert len(golden) == 88
