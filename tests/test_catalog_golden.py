"""Golden catalog: every InferenceX single-node DeepSeek-R1 key, and the DeepSeek-V4-Pro vLLM keys
of both masters and its H200 SGLang keys, as a named recipe, checked launch by launch against
the upstream script's server command (docs/upstream/inferencex.md §1, §2).

For each key: the recipes' launches cover exactly the catalog's (topology, concurrency) points
(conc-start..conc-end doubling, the last clamped, §1.4); each launch's argv is the script's
command for that TP/EP/DP/CONC flag for flag (options compared as a set of flag groups, since a
row's CONC- or branch-dependent flags follow the template's; the program and its positional
arguments in order), its environment is the script's exported one, and for TensorRT-LLM the
extra-options YAML is the script's heredoc plus the harness's metrics keys. The expected
commands below are written from the script text, path@commit on each function
(under SemiAnalysisAI/InferenceX benchmarks/single_node/); MODEL, TP,
EP_SIZE, CONC substituted, PORT 8888, host 127.0.0.1 (upstream binds 0.0.0.0). No engine runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config.compose import compose_sweep
from harness.config.launches import launches
from harness.engines.registry import make_adapter
from harness.engines.trtllm import EXTRA_OPTIONS_FILE, METRICS_OPTIONS
from harness.spec.acceptance import AcceptancePlan
from tests.catalog_amd_dsv4 import (
    dsr1_fp4_mi355x,
    dsr1_fp4_mi355x_atom,
    dsr1_fp4_mi355x_atom_mtp,
    dsr1_fp4_mi355x_mtp,
    dsr1_fp8_mi300x,
    dsr1_fp8_mi325x,
    dsr1_fp8_mi355x,
    dsr1_fp8_mi355x_atom,
    dsr1_fp8_mi355x_atom_mtp,
    dsr1_fp8_mi355x_mtp,
    dsv4_fp4_b200_vllm,
    dsv4_fp4_b200_vllm_mtp,
    dsv4_fp4_b300_vllm,
    dsv4_fp4_b300_vllm_mtp,
    dsv4_fp4_mi355x_vllm,
    dsv4_fp4_mi355x_vllm_mtp,
    dsv4_fp8_h200,
    dsv4_fp8_h200_mtp,
    dsv4_fp8_h200_sglang,
    dsv4_fp8_h200_sglang_mtp,
    dsv4_fp8_mi300x,
    dsv4_fp8_mi325x_mtp,
)
from tests.catalog_common import AMD, ISL, NV, OSL
from tests.catalog_nvidia import (
    dsr1_fp4_b200,
    dsr1_fp4_b200_mtp,
    dsr1_fp4_b200_trt,
    dsr1_fp4_b200_trt_mtp,
    dsr1_fp4_b300,
    dsr1_fp8_b200,
    dsr1_fp8_b200_mtp,
    dsr1_fp8_b200_trt,
    dsr1_fp8_b200_trt_mtp,
    dsr1_fp8_b300,
    dsr1_fp8_h200,
    dsr1_fp8_h200_mtp,
    dsr1_fp8_h200_trt,
    dsr1_fp8_h200_trt_mtp,
)

RECIPES = Path(__file__).resolve().parents[1] / "recipes" / "recipe"

# ---------------------------------------------------------------- the catalog

Row = tuple[int, int, bool, int, int]  # tp, ep, dp-attn, conc-start, conc-end


@dataclass
class Key:
    catalog: str
    image: str
    rows: list[Row]
    script: Any  # (tp, ep, dp, conc) -> Cmd; None: flags not transcribed
    recipes: list[str] = field(default_factory=list)  # default: [key]


TRT = "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14"  # the catalog's nvcr.io#... in docker form
SGL_POST1, SGL_CU130 = "lmsysorg/sglang:v0.5.12.post1", "lmsysorg/sglang:v0.5.12-cu130"
SGL_MI35X = "lmsysorg/sglang:v0.5.12-rocm700-mi35x"
SGL_MI30X = "lmsysorg/sglang:v0.5.12-rocm700-mi30x"
ATOM_0511 = "rocm/atom:rocm7.2.3_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom20260511"
ATOM_013 = "rocm/atom:rocm7.2.4_ubuntu24.04_py3.12_pytorch_release_2.10.0_atom0.1.3"
# the catalog pins a digest (sha256:1bf5d508..., not re-read); the recipe has the tag
DSV4_HOPPER = "lmsysorg/sglang:deepseek-v4-hopper"
ROCM_VLLM = "vllm/vllm-openai-rocm:nightly-09663abde0f50944a8d5ea30120666024b503faa"

CATALOG: dict[str, Key] = {
    # configs/nvidia-master.yaml@11776f53c960b412276388f4d785f7d0383c7ec2
    "dsr1-fp4-b200-sglang": Key(NV, SGL_POST1, [(4, 1, False, 1, 32), (4, 4, True, 64, 256)],
                                dsr1_fp4_b200),
    "dsr1-fp4-b200-sglang-mtp": Key(NV, SGL_POST1, [(4, 1, False, 1, 32), (4, 4, True, 64, 256)],
                                    dsr1_fp4_b200_mtp),
    "dsr1-fp4-b300-sglang": Key(NV, SGL_CU130, [(4, 4, False, 1, 128), (8, 8, False, 1, 16)],
                                dsr1_fp4_b300),
    "dsr1-fp4-b200-trt": Key(NV, TRT, [(4, 1, False, 4, 32), (4, 4, False, 32, 32),
                                       (4, 4, True, 256, 256), (8, 1, False, 4, 4),
                                       (8, 8, True, 128, 256)], dsr1_fp4_b200_trt,
                             ["dsr1-fp4-b200-trt", "dsr1-fp4-b200-trt-dpa"]),
    "dsr1-fp4-b200-trt-mtp": Key(NV, TRT, [(4, 1, False, 4, 16), (4, 4, False, 32, 32),
                                           (4, 4, True, 256, 256), (8, 1, False, 4, 4),
                                           (8, 8, True, 64, 256)], dsr1_fp4_b200_trt_mtp,
                                 ["dsr1-fp4-b200-trt-mtp", "dsr1-fp4-b200-trt-mtp-dpa"]),
    "dsr1-fp8-b200-sglang": Key(NV, SGL_CU130, [(8, 1, False, 1, 4), (4, 1, False, 1, 32)],
                                dsr1_fp8_b200),
    "dsr1-fp8-b300-sglang": Key(NV, SGL_CU130, [(8, 1, False, 1, 4), (4, 1, False, 1, 32)],
                                dsr1_fp8_b300),
    "dsr1-fp8-b200-sglang-mtp": Key(NV, SGL_CU130, [(8, 1, False, 1, 512)], dsr1_fp8_b200_mtp),
    "dsr1-fp8-b300-sglang-mtp": Key(NV, SGL_CU130, [(8, 1, False, 1, 512)], dsr1_fp8_b200_mtp),
    "dsr1-fp8-b200-trt": Key(NV, TRT, [(8, 1, False, 64, 256), (4, 1, False, 8, 32),
                                       (8, 1, False, 4, 8)], dsr1_fp8_b200_trt),
    "dsr1-fp8-b200-trt-mtp": Key(NV, TRT, [(8, 1, False, 4, 256)], dsr1_fp8_b200_trt_mtp),
    "dsr1-fp8-h200-sglang": Key(NV, SGL_CU130, [(8, 1, False, 4, 64)], dsr1_fp8_h200),
    "dsr1-fp8-h200-sglang-mtp": Key(NV, SGL_CU130, [(8, 1, False, 4, 64)], dsr1_fp8_h200_mtp),
    "dsr1-fp8-h200-trt": Key(NV, TRT, [(8, 8, False, 4, 32), (8, 8, True, 64, 64)],
                             dsr1_fp8_h200_trt, ["dsr1-fp8-h200-trt", "dsr1-fp8-h200-trt-dpa"]),
    "dsr1-fp8-h200-trt-mtp": Key(NV, TRT, [(8, 8, False, 4, 32), (8, 8, True, 64, 256)],
                                 dsr1_fp8_h200_trt_mtp,
                                 ["dsr1-fp8-h200-trt-mtp", "dsr1-fp8-h200-trt-mtp-dpa"]),
    # configs/amd-master.yaml@7efe2986c714f7642abe80e9ff0f1884d50a413a
    "dsr1-fp4-mi355x-sglang": Key(AMD, SGL_MI35X, [(4, 1, False, 4, 64), (8, 1, False, 4, 64)],
                                  dsr1_fp4_mi355x),
    "dsr1-fp4-mi355x-sglang-mtp": Key(AMD, SGL_MI35X, [(8, 1, False, 4, 64)], dsr1_fp4_mi355x_mtp),
    "dsr1-fp4-mi355x-atom": Key(AMD, ATOM_0511, [(4, 1, False, 4, 256), (8, 1, False, 4, 4)],
                                dsr1_fp4_mi355x_atom),
    "dsr1-fp4-mi355x-atom-mtp": Key(AMD, ATOM_0511, [(8, 1, False, 4, 256)],
                                    dsr1_fp4_mi355x_atom_mtp),
    "dsr1-fp8-mi300x-sglang": Key(AMD, SGL_MI30X, [(8, 1, False, 4, 64)], dsr1_fp8_mi300x),
    "dsr1-fp8-mi325x-sglang": Key(AMD, SGL_MI30X, [(8, 1, False, 4, 64)], dsr1_fp8_mi325x),
    "dsr1-fp8-mi325x-sglang-mtp": Key(AMD, SGL_MI30X, [(8, 1, False, 4, 64)], None),
    "dsr1-fp8-mi355x-sglang": Key(AMD, SGL_MI35X, [(4, 1, False, 32, 64), (8, 1, False, 4, 64)],
                                  dsr1_fp8_mi355x),
    "dsr1-fp8-mi355x-sglang-mtp": Key(AMD, SGL_MI35X, [(8, 1, False, 4, 64)],
                                      dsr1_fp8_mi355x_mtp),
    "dsr1-fp8-mi355x-atom": Key(AMD, ATOM_0511, [(8, 1, False, 4, 128)], dsr1_fp8_mi355x_atom),
    "dsr1-fp8-mi355x-atom-mtp": Key(AMD, ATOM_013, [(8, 1, False, 4, 256)],
                                    dsr1_fp8_mi355x_atom_mtp),
    # DeepSeek-V4-Pro, nvidia-master.yaml@11776f53 (the vLLM keys; others: README)
    "dsv4-fp4-b200-vllm": Key(NV, "vllm/vllm-openai:v0.25.0",
                              [(8, 1, False, 1, 64), (8, 8, False, 128, 256),
                               (8, 8, True, 64, 1024)], dsv4_fp4_b200_vllm),
    "dsv4-fp4-b200-vllm-mtp": Key(NV, "vllm/vllm-openai:v0.25.0",
                                  [(8, 1, False, 1, 64), (8, 8, False, 128, 256),
                                   (8, 8, True, 64, 256)], dsv4_fp4_b200_vllm_mtp),
    "dsv4-fp4-b300-vllm": Key(NV, "vllm/vllm-openai:v0.25.0",
                              [(4, 1, False, 1, 64), (8, 1, False, 1, 4), (4, 4, True, 256, 512),
                               (8, 8, True, 2048, 2048)], dsv4_fp4_b300_vllm),
    "dsv4-fp4-b300-vllm-mtp": Key(NV, "vllm/vllm-openai:v0.25.0",
                                  [(4, 1, False, 1, 64), (8, 1, False, 1, 8),
                                   (4, 4, False, 64, 256), (4, 4, True, 256, 512)],
                                  dsv4_fp4_b300_vllm_mtp),
    "dsv4-fp8-h200-vllm": Key(NV, "vllm/vllm-openai:v0.25.1",
                              [(8, 1, False, 1, 256), (8, 8, True, 1, 256)], dsv4_fp8_h200),
    "dsv4-fp8-h200-vllm-mtp": Key(NV, "vllm/vllm-openai:v0.25.1",
                                  [(8, 1, False, 1, 256), (8, 8, True, 1, 256)],
                                  dsv4_fp8_h200_mtp),
    "dsv4-fp8-h200-sglang": Key(NV, DSV4_HOPPER, [(8, 1, False, 1, 1), (8, 1, False, 4, 64)],
                                dsv4_fp8_h200_sglang),
    "dsv4-fp8-h200-sglang-mtp": Key(NV, DSV4_HOPPER, [(8, 1, False, 1, 1), (8, 1, False, 4, 64)],
                                    dsv4_fp8_h200_sglang_mtp),
    # DeepSeek-V4-Pro, amd-master.yaml@7efe2986 (the vLLM keys)
    "dsv4-fp4-mi355x-vllm": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 512)], dsv4_fp4_mi355x_vllm),
    "dsv4-fp4-mi355x-vllm-mtp": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 512)],
                                    dsv4_fp4_mi355x_vllm_mtp),
    "dsv4-fp8-mi300x-vllm": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 256)], dsv4_fp8_mi300x),
    "dsv4-fp8-mi300x-vllm-mtp": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 128)], None),
    "dsv4-fp8-mi325x-vllm": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 256)], None),
    "dsv4-fp8-mi325x-vllm-mtp": Key(AMD, ROCM_VLLM, [(8, 1, False, 4, 128)], dsv4_fp8_mi325x_mtp),
}


def expand(start: int, end: int) -> list[int]:
    """conc-start..conc-end: doubling, the last value clamped to conc-end (§1.4)."""
    out, c = [], start
    while c < end:
        out.append(c)
        c *= 2
    return [*out, end]


def recipes_of(key: str) -> list[str]:
    return CATALOG[key].recipes or [key]


@cache
def compose(name: str):
    return compose_sweep([f"recipe={name}"])


def key_launches(key: str):
    for name in recipes_of(key):
        for launch in launches(compose(name)):
            yield name, launch


def option_groups(argv: list[str], prefix: int) -> tuple[list[str], list[list[str]]]:
    """The leading arguments in order, then every option with the values that follow it,
    sorted (argparse/click read options in any order)."""
    groups: list[list[str]] = []
    for a in argv[prefix:]:
        if a.startswith("-") or not groups:
            groups.append([a])
        else:
            groups[-1].append(a)
    return argv[:prefix], sorted(groups)


def yaml_diff(a: Any, b: Any, path: str = "") -> set[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: set[str] = set()
        for k in a.keys() | b.keys():
            p = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.add(p)
            else:
                out |= yaml_diff(a[k], b[k], p)
        return out
    return set() if a == b else {path}


KEYS = sorted(CATALOG)


@pytest.mark.parametrize("key", KEYS)
def test_launches_are_the_catalog_rows(key: str) -> None:
    got = sorted((ln.sc.topology.tp, ln.sc.topology.ep, ln.sc.topology.dp_attention,
                  ln.sc.concurrency[0]) for _, ln in key_launches(key))
    want = sorted((tp, ep, dp, c) for tp, ep, dp, a, b in CATALOG[key].rows for c in expand(a, b))
    assert got == want
    for _, ln in key_launches(key):
        assert len(ln.sc.concurrency) == 1  # one server launch per concurrency, as InferenceX
        assert (ln.sc.scenario.isl, ln.sc.scenario.osl) == (ISL, OSL)


@pytest.mark.parametrize("key", KEYS)
def test_recipe_names_its_upstream_source_and_image(key: str) -> None:
    k = CATALOG[key]
    for name in recipes_of(key):
        sc = compose(name)
        assert sc.relaunch_per_concurrency
        assert k.catalog in sc.recipe_source and f"key {key};" in sc.recipe_source
        assert sc.engine.image == k.image
        if k.script is not None:
            script = k.script.__name__.lstrip("_")
            assert f"fixed_seq_len/{script}" in sc.recipe_source or key.endswith("b300-sglang-mtp")


@pytest.mark.parametrize("key", [k for k in KEYS if CATALOG[k].script is not None])
def test_every_launch_is_the_scripts_command(key: str) -> None:
    k = CATALOG[key]
    for name, ln in key_launches(key):
        t, conc = ln.sc.topology, ln.sc.concurrency[0]
        want = k.script(t.tp, t.ep, t.dp_attention, conc)
        plan = make_adapter(ln.sc).launch_plan(port=8888, max_concurrency=conc)
        # inside the recipe's image: docker run ... -e NAME ... IMAGE <the server command>
        i = plan.argv.index(ln.sc.engine.image)
        argv = plan.argv[i + 1:]
        assert [plan.argv[j + 1] for j in range(i) if plan.argv[j] == "-e"] == sorted(plan.env)
        expected = list(want.argv)
        if ln.sc.engine.kind == "sglang":
            expected.append("--enable-metrics")  # the harness's, to verify acceptance
        where = f"{name} {ln.tag}"
        assert option_groups(argv, want.prefix) == option_groups(expected, want.prefix), where
        assert len(argv) == len(expected), where
        assert plan.env == want.env, where
        if want.yaml is not None:
            got = yaml.safe_load(plan.files[EXTRA_OPTIONS_FILE])
            for m, v in METRICS_OPTIONS.items():  # the harness's, for /prometheus/metrics
                assert got.pop(m) == v, where
            # the script's heredoc for this job, values per CONC included (row extra_options)
            assert yaml_diff(got, want.yaml) == set(), where


def _first_plan(name: str, acceptance: AcceptancePlan):
    ln = launches(compose(name))[0]
    return make_adapter(ln.sc, acceptance).launch_plan(8888, ln.sc.concurrency[0])


def test_injected_acceptance_reaches_the_upstream_commands() -> None:
    """Each engine's injection knob added to the script's command, nothing else changed."""
    inj = AcceptancePlan("injected", 2.27, "t")
    p = _first_plan("dsr1-fp4-b200-sglang-mtp", inj)
    assert p.env["SGLANG_SIMULATE_ACC_LEN"] == "2.27"
    assert p.env["SGLANG_ENABLE_SPEC_V2"] == "1"  # the script's own env stays
    p = _first_plan("dsv4-fp4-b200-vllm-mtp", inj)
    i = p.argv.index("--speculative-config")
    assert json.loads(p.argv[i + 1]) == {"method": "mtp", "num_speculative_tokens": 2,
                                         "rejection_sample_method": "synthetic",
                                         "synthetic_acceptance_length": 2.27}
    p = _first_plan("dsr1-fp8-h200-trt-mtp", inj)
    assert p.env == {"PYTHONNOUSERSITE": "1", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "1.27"}
    p = _first_plan("dsr1-fp8-mi355x-atom-mtp", inj)
    assert p.argv[-2:] == ["--spec-decode-acceptance-length", "2.27"]


@pytest.mark.parametrize("key", [k for k in KEYS if CATALOG[k].script is None])
def test_untranscribed_keys_run_the_adapters_own_flags(key: str) -> None:
    """No script in the index: the adapter's own flags at the catalog's topology, and the
    recipe says so."""
    sc = compose(key)
    assert not sc.engine.argv_template and "not transcribed" in sc.recipe_source
    for ln in launches(sc):
        argv = make_adapter(ln.sc).launch_plan(8888, ln.sc.concurrency[0]).argv
        if ln.sc.engine.kind == "sglang":
            assert argv[argv.index("--tp") + 1] == str(ln.sc.topology.tp)
            i = argv.index("--speculative-algorithm")
            assert argv[i:i + 2] == ["--speculative-algorithm", "EAGLE"]
        else:
            assert argv[argv.index("--tensor-parallel-size") + 1] == str(ln.sc.topology.tp)
            if ln.sc.speculator.method == "mtp":
                spec = json.loads(argv[argv.index("--speculative-config") + 1])
                assert spec == {"method": "mtp", "num_speculative_tokens": 2}


@pytest.mark.parametrize("name", sorted(p.stem for p in RECIPES.glob("*.yaml")))
def test_every_recipe_composes_and_validates(name: str) -> None:
    sc = compose(name)  # to_sweep_config checks every launch
    for ln in launches(sc):
        make_adapter(ln.sc).launch_plan(8888, max(ln.sc.concurrency))


def test_every_catalog_recipe_file_is_covered() -> None:
    covered = {r for key in CATALOG for r in recipes_of(key)}
    assert covered == {p.stem for p in RECIPES.glob("*.yaml")}
