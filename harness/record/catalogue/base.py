"""What a metric key means (`Metric`), and the statistics every latency family reports.

The catalogue is split by family, one module each (`core`, `client`, `agentx`, `energy`,
`series`); `harness.record.catalogue` joins them and refuses a key defined twice. Nothing here
imports the formulas (`harness.record.metrics` imports this)."""

from __future__ import annotations

from dataclasses import dataclass

# Statistic name -> percentile (None: not a percentile). p75/p95 are AgentX's (its aggregate
# reports mean/p50/p75/p90/p95/std); p99/p99.9 are InferenceX's.
STATS: dict[str, float | None] = {"mean": None, "median": 50, "std": None, "p75": 75,
                                  "p90": 90, "p95": 95, "p99": 99, "p99.9": 99.9}
LATENCIES = ("ttft", "tpot", "itl", "e2el")
# Interactivity is reported for every statistic except std (1/std is meaningless).
INTVTY_STATS = tuple(s for s in STATS if s != "std")
E2E_INTVTY_PERCENTILES = (50, 75, 90, 95)


HIGHER, LOWER, NEUTRAL = "higher", "lower", "none"
PRICE_TIERS = ("hyperscaler", "neocloud", "rental_3yr")


@dataclass(frozen=True, slots=True)
class Metric:
    """What one emitted key means. `unit` is the stored unit; `scale` turns it into
    `display_unit` for people (seconds are stored, milliseconds shown)."""

    key: str
    label: str
    unit: str
    direction: str  # HIGHER or LOWER is better; NEUTRAL: not a performance figure
    definition: str
    group: str
    scale: float = 1.0
    display_unit: str = ""

    @property
    def higher_is_better(self) -> bool:
        return self.direction == HIGHER

    @property
    def shown_unit(self) -> str:
        return self.display_unit or self.unit


def m(key: str, label: str, unit: str, direction: str, definition: str, group: str,
       scale: float = 1.0, display_unit: str = "") -> Metric:
    return Metric(key, label, unit, direction, definition, group, scale, display_unit)
