"""Checks that replayed request records follow the recorded trace structure."""

from __future__ import annotations

import json
from collections import defaultdict

import pandas as pd

from harness.workloads.traces import Trace
from harness.workloads.traces.model import SubAgent, TraceRequest


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
    for k in ("session", "trace", "agent", "turn", "think", "in", "out", "recorded_t"):
        df[k] = tags.map(lambda t, k=k: t.get(k)).values
    return df


def _agents(items, path=""):
    out = {}
    for it in items:
        if isinstance(it, SubAgent):
            p = f"{path}/{it.agent_id}".lstrip("/")
            out[p] = it
            out.update(_agents(it.items, p))
    return out


def check_structure(df: pd.DataFrame, traces: dict[str, Trace], tree_cap: float,
                    idle_cap: float = float("inf"), slack: float = 0.06) -> dict[str, int]:
    """Assert the replay followed the traces; return counts of what was checked.

    A gap is at least the recorded think time, minus the caps: `tree_cap` always, and
    `idle_cap` when nothing was in flight (which began no earlier than the previous request's
    end, so the gap is still at least `idle_cap`)."""
    seen = defaultdict(int)
    ok = df[(df["error"] == "") & (df["phase"] != "probe")]  # probes repeat the warmup turn
    for (session, agent), g in ok.groupby(["session", "agent"]):
        g = g.sort_values("send_ts")
        tr = traces[g["trace"].iloc[0]]
        node_items = tr.items if not agent else _agents(tr.items)[agent].items
        recorded = [r for r in node_items if isinstance(r, TraceRequest)]
        turns = list(g["turn"])
        # consecutive recorded turns, in order (the first may be a warmup turn)
        assert turns == list(range(turns[0], turns[0] + len(turns))), (session, agent, turns)
        for (_, row), turn in zip(g.iterrows(), turns, strict=True):
            rec = recorded[turn]
            assert row["in"] == rec.in_tokens and row["recorded_t"] == rec.t
            assert row["prompt_tokens"] == row["expected_prompt_tokens"]  # exact prompts
            seen["requests"] += 1
        m = g[g["phase"] == "measured"]
        for prev, cur in zip(m.iloc[:-1].itertuples(), m.iloc[1:].itertuples(), strict=True):
            want = min(cur.think, tree_cap, idle_cap)
            assert cur.send_ts - prev.end_ts >= want - slack, (session, agent, cur.turn)
            seen["gaps"] += 1
        if agent:
            seen["subagent_requests"] += len(g)
    # sub-agents overlap their parent where the recording has them overlap
    for session, g in ok[ok["phase"] == "measured"].groupby("session"):
        parent = g[g["agent"] == ""]
        subs = g[g["agent"] != ""]
        for _, s in subs.iterrows():
            if ((parent["send_ts"] < s["end_ts"]) & (parent["end_ts"] > s["send_ts"])).any():
                seen["overlaps"] += 1
                break
        # joins: a parent turn starts after every sub-agent that ended before it (recorded)
        tr = traces[g["trace"].iloc[0]]
        agents = _agents(tr.items)
        for _, p in parent.iterrows():
            for path, sub in agents.items():
                if "/" in path or sub.end > p["recorded_t"]:
                    continue
                done = subs[subs["agent"] == path]
                if len(done) == len([r for r in sub.items if isinstance(r, TraceRequest)]):
                    assert p["send_ts"] >= done["end_ts"].max() - 1e-6, (session, path)
                    seen["joins"] += 1
    return dict(seen)
