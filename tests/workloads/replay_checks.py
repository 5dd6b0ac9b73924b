"""Checks that replayed request records follow the recorded trace structure, read against the
replay plan the scheduler runs (harness.workloads.replay_plan)."""

from __future__ import annotations

import json
from collections import defaultdict

import pandas as pd

from harness.workloads.replay_plan import TreePlan, build_plan
from harness.workloads.traces import Trace

TAGS = ("session", "trace", "agent", "turn", "think", "in", "out", "recorded_t", "delay",
        "lane")


def frame(records_or_df) -> pd.DataFrame:
    if isinstance(records_or_df, pd.DataFrame):
        df = records_or_df.copy()
        tags = df["tags"].map(json.loads)
    else:
        df = pd.DataFrame([{k: getattr(r, k) for k in (
            "request_id", "phase", "send_ts", "end_ts", "prompt_tokens",
            "expected_prompt_tokens", "error", "http_status", "max_tokens",
            "completion_tokens")} for r in records_or_df])
        tags = pd.Series([r.tags for r in records_or_df])
    for k in TAGS:
        df[k] = tags.map(lambda t, k=k: t.get(k)).values
    return df


def stream_of(plan: TreePlan, name: str):
    return next(s for s in plan.streams() if s.name == name)


def check_structure(df: pd.DataFrame, traces: dict[str, Trace], tree_cap: float,
                    idle_cap: float = float("inf"), slack: float = 0.06,
                    join_rule: str = "tiered", exact: bool = True) -> dict[str, int]:
    """Assert the replay followed the plans; return counts of what was checked.

    Each stream sends consecutive turns, never one twice (warmup included); a measured gap is
    at least the planned delay, or the smaller cap (a cap only ever shortens a wait); a root
    turn starts after every child of the branches it joins ended."""
    plans = {tid: build_plan(t, join_rule) for tid, t in traces.items()}
    seen: dict[str, int] = defaultdict(int)
    ok = df[df["error"] == ""]
    for (session, agent), g in ok.groupby(["session", "agent"]):
        g = g.sort_values("send_ts")
        plan = plans[g["trace"].iloc[0]]
        stream = stream_of(plan, agent)
        turns = list(g["turn"])
        assert turns == list(range(turns[0], turns[0] + len(turns))), (session, agent, turns)
        for _, row in g.iterrows():
            planned = stream.turns[row["turn"]]
            assert row["recorded_t"] == planned.req.t, (session, agent, row["turn"])
            assert row["in"] == planned.req.in_tokens, (session, agent, row["turn"])
            if exact:  # exact prompts (the bodies' promise, harness.workloads.agentic_bodies)
                assert row["prompt_tokens"] == row["expected_prompt_tokens"], row["request_id"]
            seen["requests"] += 1
        m = g[g["phase"] == "measured"]
        for prev, cur in zip(m.iloc[:-1].itertuples(), m.iloc[1:].itertuples(), strict=True):
            want = min(cur.delay, tree_cap, idle_cap)
            assert cur.send_ts - prev.end_ts >= want - slack, (session, agent, cur.turn)
            seen["gaps"] += 1
        if agent:
            seen["subagent_requests"] += len(g)
    for session, g in ok.groupby("session"):
        plan = plans[g["trace"].iloc[0]]
        root = g[g["agent"] == ""]
        for b in plan.branches:
            kids = g[g["agent"].isin([c.name for c in b.children])]
            if b.join is None or kids.empty:
                continue
            joined = root[root["turn"] == b.join]
            if len(joined):
                assert joined["send_ts"].iloc[0] >= kids["end_ts"].max() - 1e-6, (session, b.id)
                seen["joins"] += 1
        subs = g[g["agent"] != ""]
        for s in subs.itertuples():
            if ((root["send_ts"] < s.end_ts) & (root["end_ts"] > s.send_ts)).any():
                seen["overlaps"] += 1
                break
    return dict(seen)
