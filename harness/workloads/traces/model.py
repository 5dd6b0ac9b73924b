"""The trace model every loader produces: sessions of requests, with nested sub-agents.

Times are seconds, as recorded. A request's `t` counts from the trace's start; a sub-agent's
requests may count from the sub-agent's own start instead (legacy captures; the replay plan
tells them apart, harness.workloads.replay_plan). `think` is the recorded `think_time`: in the
current AgentX corpus the gap after the previous request of the whole tree, not of the same
stream, so the replay paces from `t` and `api_time` by default (docs/replay.md, "Pacing").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class TraceError(ValueError):
    """A malformed trace: names the file, the line or trace id, the field, and the fix."""

    def __init__(self, path: str, where: str, field_name: str, problem: str, fix: str) -> None:
        self.path, self.where, self.field_name = path, where, field_name
        super().__init__(
            f"bad trace in {path} ({where}), field '{field_name}': {problem}. Fix: {fix}"
        )


# Upper bounds of a trace's numbers. A finite but absurd value is a unit mistake (milliseconds
# given as seconds) or a corrupt file: a think time of 1e300 s would hold a replay lane until the
# point's time limit, a token count beyond every model's context could only be refused later.
MAX_SECONDS = 30 * 86400.0  # recorded times and durations: a month
MAX_TOKENS = 100_000_000  # per request: 10x the longest context any model ships
HASH_ID_LIMIT = 2**64  # block ids key the prompt text as uint64 (harness/workloads/block_table.py)


def check_hash_ids(ids: object, path: str, where: str, what: str) -> list[int]:
    """A request's block hash ids: integers in [0, 2^64), or a TraceError naming the field."""
    if not isinstance(ids, list) or not all(type(h) is int for h in ids):
        raise TraceError(path, where, "hash_ids", "expected a list of integers",
                         f"give the request's {what} block hashes as integers")
    if ids and (min(ids) < 0 or max(ids) >= HASH_ID_LIMIT):
        bad = next(h for h in ids if not 0 <= h < HASH_ID_LIMIT)
        raise TraceError(path, where, "hash_ids", f"block hash {bad} is outside [0, 2^64)",
                         "give block hashes as non-negative 64-bit integers")
    return ids


def read_text(path: Path) -> str:
    """The file as UTF-8 text, or a TraceError naming the first bad byte and its line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TraceError(str(path), f"line {line}, byte {e.start}", "(encoding)",
                         f"not UTF-8 ({e.reason})", "save the trace as UTF-8 text") from None


@dataclass
class TraceRequest:
    t: float
    in_tokens: int
    out_tokens: int
    hash_ids: list[int]
    think: float = 0.0
    api_time: float = 0.0


@dataclass
class SubAgent:
    t: float  # offset from the start of its parent
    agent_id: str
    kind: str  # subagent_type (Explore, Plan, ...)
    duration: float  # recorded wall time, s
    items: list[TraceRequest | SubAgent] = field(default_factory=list)
    # Weka's tool_tokens + system_tokens: the system message of the sub-agent's first turn
    prefix_tokens: int = 0

    @property
    def end(self) -> float:
        return self.t + self.duration


@dataclass
class Trace:
    id: str
    source: str
    block_size: int
    items: list[TraceRequest | SubAgent]
    shared_scope: bool = False  # hash ids shared across traces (Mooncake), else per trace
    meta: dict[str, object] = field(default_factory=dict)
    # Weka's tool_tokens + system_tokens: the system message of the first turn (AgentX §4)
    prefix_tokens: int = 0

    def requests(self) -> list[TraceRequest]:
        """Every request, sub-agents' included, in listed order."""
        return list(_walk(self.items))

    def parent_requests(self) -> list[TraceRequest]:
        return [i for i in self.items if isinstance(i, TraceRequest)]

    def subagents(self) -> list[SubAgent]:
        out: list[SubAgent] = []
        stack = list(self.items)
        while stack:
            it = stack.pop(0)
            if isinstance(it, SubAgent):
                out.append(it)
                stack = list(it.items) + stack
        return out


def _walk(items: list[TraceRequest | SubAgent]):
    """Requests in listed order, depth first; iterative, so no nesting depth can overflow."""
    stack = [iter(items)]
    while stack:
        it = next(stack[-1], None)
        if it is None:
            stack.pop()
        elif isinstance(it, SubAgent):
            stack.append(iter(it.items))
        else:
            yield it
