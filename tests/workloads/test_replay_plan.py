"""The replay plan, pure (docs/replay.md): chains, branches, pacing, start point, settings."""

from __future__ import annotations

import math

import pytest

from harness.config.errors import ConfigError
from harness.config.schema import ScenarioConfig
from harness.workloads.agentic_lanes import replay_settings
from harness.workloads.replay_plan import build_plan, start_point, start_seed
from harness.workloads.traces import load_traces
from harness.workloads.traces.chains import split_chains
from harness.workloads.traces.model import SubAgent, Trace, TraceRequest


def _r(t: float, ids: list[int], api: float = 1.0, think: float = 0.0) -> TraceRequest:
    return TraceRequest(t=t, in_tokens=len(ids), out_tokens=100, hash_ids=ids, api_time=api,
                        think=think)


def test_a_compaction_seam_stays_one_chain_and_a_fork_splits():
    # b shrinks a's context after a ended and nothing returns to a's longer state: a seam
    a, b, c = _r(0, [1, 2, 3]), _r(2, [1, 2, 9]), _r(4, [1, 2, 9, 10])
    assert [[r for _, _, r in ch] for ch in split_chains([(0, 0, a), (1, 2, b), (2, 4, c)])] \
        == [[a, b, c]]
    # d forks while a still runs: its own chain
    d = _r(0.5, [1, 2, 7])
    chains = split_chains([(0, 0, a), (1, 0.5, d), (2, 2, _r(2, [1, 2, 3, 4]))])
    assert [len(ch) for ch in chains] == [2, 1] and chains[1][0][2] is d


def test_branches_pacing_and_dropped_subagents():
    early = SubAgent(t=0.0, agent_id="orphan", kind="", duration=1, items=[_r(0, [50])])
    short = SubAgent(t=2, agent_id="s", kind="Explore", duration=3, items=[_r(2, [60])])
    long_ = SubAgent(t=2.5, agent_id="l", kind="Explore", duration=20, items=[_r(0, [70])])
    tr = Trace("x", "test", 1, [early, _r(1, [1]), short, long_, _r(6, [1, 2], think=9),
                                _r(9, [1, 2, 3])])
    plan = build_plan(tr)
    assert plan.dropped == ["orphan"]  # no parent turn before it
    assert [(b.id, b.spawn, b.join) for b in plan.branches] == [("spawn:s", 0, 1),
                                                                ("spawn:l", 0, None)]
    assert plan.branches[1].children[0].turns[0].t == 2.5  # relative time made absolute
    assert [t.delay for t in plan.root.turns] == [0.0, 4.0, 2.0]  # t_k - (t_k-1 + api)
    assert [t.delay for t in build_plan(tr, pacing="think_time").root.turns] == [0, 9, 0]
    nt = build_plan(tr, join_rule="next_turn")
    assert [(b.spawn, b.join) for b in nt.branches] == [(0, 1)]  # one branch of both


def test_start_point_draws_in_the_range_and_leaves_a_turn():
    tr = load_traces("scenarios/traces/weka-cc-traces/trace_0277.json")[0]
    plan = build_plan(tr)
    a, b = plan.span()
    pts = [start_point(plan, start_seed(s, tr.id, 0), 0.25, 0.75) for s in range(20)]
    assert all(a + 0.25 * (b - a) <= p.t <= min(a + 0.75 * (b - a), plan.root.turns[-1].t)
               for p in pts)
    assert start_point(plan, start_seed(3, tr.id, 0), 0.25, 0.75) == pts[3]  # same seed
    late = start_point(plan, 1, 1.0, 1.0)
    assert late.t == plan.root.turns[-1].t and late.root_next == len(plan.root.turns) - 1
    assert start_point(plan, 1, 0.0, 0.0).t == -math.inf  # from the first turn


@pytest.mark.parametrize(("key", "value"), [("join_rule", "latest"), ("pacing", "fast"),
                                            ("primer_start", "now"),
                                            ("measured_window", "all"),
                                            ("cache_bust", "salted"),
                                            ("start_seed", "lane"), ("recycle", "random"),
                                            ("subagent_start", "now"),
                                            ("request_style", "vllm"),
                                            ("session_affinity", "lane")])
def test_bad_scheduler_settings_name_their_key(key, value):
    scen = ScenarioConfig(name="a", kind="agentic", **{key: value})
    with pytest.raises(ConfigError, match=f"scenario.{key}"):
        replay_settings(scen, "scenarios/a.yaml")
