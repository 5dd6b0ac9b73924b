"""engine=multinode on a row whose captured deployment upstream's
runners/inject_synthetic_acceptance.py rewrote (harness.speculation.upstream_injection): the
point is injected at the deployment's length, another length or real acceptance is refused,
and the realised AL is judged from the engine's counters exactly as for other engines, so a
deployment whose metrics carry no spec-decode counters reads "not verified"."""

from __future__ import annotations

import pytest

from harness.config.compose import compose_sweep
from harness.config.errors import ConfigError
from harness.config.launches import launches
from harness.config.locations import repo_root
from harness.engines.registry import make_adapter
from harness.record.validity import acceptance_rule, settings_for
from harness.speculation.acceptance import resolve
from harness.sweep.point import engine_facts
from tests.helpers import shipped_yaml

KEY = "dsv4-fp4-gb200-dynamo-vllm-agentic-mtp-agg"  # agentic, vLLM MTP k=3, AL 2.49
REAL_TWIN = "dsv4-fp4-gb200-dynamo-vllm-mtp2-nosynthetic"  # the same recipes, real drafts


def _launch(key: str, *extra: str):
    sc = compose_sweep([f"recipe=multinode/{key}", *extra])
    first = launches(sc)[0]
    return sc, first.sc


def _plan(one, sc):
    return resolve(one, bool(sc.engine.can_inject_acceptance), "w")


def test_a_row_whose_deployment_injects_is_planned_at_that_length() -> None:
    sc, one = _launch(KEY)
    assert sc.engine.can_inject_acceptance is False  # no knob of the harness's own
    dep = one.engine.launch
    assert dep is not None and dep.synthetic_acceptance_length == 2.49
    # the field says what the argv carries: upstream's vLLM synthetic rejection sampling
    argv = " ".join(a for r in dep.roles for a in r.argv)
    assert '"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.49' in argv
    plan = _plan(one, sc)
    assert (plan.mode, plan.length) == ("injected", 2.49)
    assert "runners/inject_synthetic_acceptance.py" in plan.source
    assert dep.source.split(" (")[0] in plan.source  # the srt-slurm recipe it rewrote
    assert make_adapter(one, plan).can_inject
    # asking for the deployment's own length is the same plan
    _, same = _launch(KEY, "speculator.acceptance.length=2.49")
    assert _plan(same, sc) == plan


def test_every_injecting_row_is_planned_at_its_own_deployments_length() -> None:
    checked = 0
    for path in sorted((repo_root() / "recipes/recipe/multinode").glob("*.yaml")):
        want = {r["deployment"]["source"]: r["deployment"]["synthetic_acceptance_length"]
                for r in shipped_yaml(path)["search_space"]
                if (r.get("deployment") or {}).get("synthetic_acceptance_length")}
        if not want:
            continue
        sc = compose_sweep([f"recipe=multinode/{path.stem}"])
        for launch in launches(sc):
            plan = _plan(launch.sc, sc)
            assert launch.sc.engine.launch is not None
            if launch.sc.engine.launch.source not in want:  # upstream's spec-decoding: none
                assert plan.mode == "none" and launch.sc.speculator.method == "none"
                continue
            assert (plan.mode, plan.length) == ("injected",
                                                want[launch.sc.engine.launch.source]), path
            checked += 1
    assert checked == 47


def test_the_source_says_what_the_workers_draft_where_the_recipe_labels_otherwise() -> None:
    """The workers' argv, read as the catalog reads a server command, is the truth the plan
    reports: dsv4-fp4-gb200-dynamo-vllm-mtp2's deployments draft k=2 at the k=2 value 2.27
    while its recipe's speculator says k=3; the agentic GB200 -mtp- keys draft k=2 at 2.49,
    the curve's k=3 value, which the source names (upstream's key runs it so)."""
    sc, one = _launch("dsv4-fp4-gb200-dynamo-vllm-mtp2")
    plan = _plan(one, sc)
    assert plan.length == 2.27 and one.speculator.k == 3
    assert "its workers draft mtp k=2 (the recipe's speculator: mtp k=3)" in plan.source
    assert "curve" not in plan.source  # 2.27 is the curve's k=2 value: nothing mixed
    plan = _plan(*reversed(_launch(KEY)))
    assert "injected AL 2.49 at k=2 is the k=3 value of the published curve" in plan.source
    _, same = _launch("dsv4-fp4-gb300-dynamo-vllm-agentic-mtp-agg")  # k=3 in argv and recipe
    assert _plan(same, sc).source.endswith("-mtp-agentic.yaml")


def test_another_length_or_real_acceptance_is_refused_naming_both() -> None:
    sc, other = _launch(KEY, "speculator.acceptance.length=2.27")
    with pytest.raises(ConfigError) as e:
        _plan(other, sc)
    msg = str(e.value)
    assert "speculator.acceptance.length=2.27" in msg and "forces AL 2.49" in msg
    assert "leave speculator.acceptance.length unset" in msg
    assert "multinode_capture" in msg  # or recapture with the length wanted
    sc, real = _launch(KEY, "speculator.acceptance.mode=real")
    with pytest.raises(ConfigError, match=r"forces synthetic acceptance at AL 2\.49.*"
                       r"nosynthetic"):
        _plan(real, sc)


def test_a_row_captured_without_the_injection_drafts_for_real() -> None:
    sc, one = _launch(REAL_TWIN)
    assert one.engine.launch is not None
    assert one.engine.launch.synthetic_acceptance_length is None
    plan = _plan(one, sc)
    assert plan.mode == "real" and plan.length is None
    assert not make_adapter(one, plan).can_inject
    # attached to the same deployment, nothing is the launch's: the endpoint's own rules
    sc, attached = _launch(KEY, "engine=endpoint", "engine.url=http://127.0.0.1:9",
                           f"engine.deployment={_rows(KEY)[0]['deploy_recipe']}")
    with pytest.raises(ConfigError, match="engine endpoint cannot force"):
        _plan(attached, sc)


def _rows(key: str) -> list[dict]:
    return shipped_yaml(repo_root() / f"recipes/recipe/multinode/{key}.yaml")["search_space"]


# What Dynamo's frontend answers on /metrics (the URL a multi-node point scrapes): its own
# request and token series, none of the workers' spec-decode counters.
FRONTEND = {'dynamo_frontend_requests_total{model="m"}': 10.0,
            'dynamo_frontend_input_sequence_tokens_sum{model="m"}': 9000.0}


def _judge(before: dict, after: dict):
    sc, one = _launch(KEY)
    plan = _plan(one, sc)
    adapter = make_adapter(one, plan)
    eng = engine_facts(adapter, before, after, concurrency=4)
    rule = acceptance_rule(plan.mode, plan.length, eng["spec_realised_al"],
                           eng.get("spec_independent_draws"), one.speculator.k,
                           settings_for(one), eng.get("spec_al_note"),
                           eng.get("spec_expected_al"))
    return eng, rule


def test_without_spec_decode_counters_the_realised_al_is_not_verified() -> None:
    """The mocker (make multinode-demo) and a Dynamo frontend expose no drafts: the point
    says the injected AL could not be verified, it does not borrow the requested one."""
    eng, [rule] = _judge(FRONTEND, {k: v * 2 for k, v in FRONTEND.items()})
    assert eng["spec_realised_al"] is None
    assert rule.name == "acceptance_realised" and not rule.ok
    assert "could not be verified" in rule.reason and eng["spec_al_note"] in rule.reason


def test_with_the_workers_counters_the_realised_al_is_judged() -> None:
    """Control: where the scrape carries vLLM's counters the same chain judges the AL."""
    def scrape(drafts: float, accepted: float) -> dict[str, float]:
        lab = '{engine="0",model_name="m"}'
        return {**FRONTEND, f"vllm:spec_decode_num_drafts_total{lab}": drafts,
                f"vllm:spec_decode_num_accepted_tokens_total{lab}": accepted}

    eng, [rule] = _judge(scrape(0, 0), scrape(20000, 20000 * 1.49))
    assert eng["spec_realised_al"] == pytest.approx(2.49)
    assert rule.ok
    eng, [rule] = _judge(scrape(0, 0), scrape(20000, 20000 * 1.2))
    assert not rule.ok and "realised AL 2.200" in rule.reason
