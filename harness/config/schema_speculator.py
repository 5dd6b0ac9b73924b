"""Schema of the speculator group: the method and its draft length, how drafts are sampled, and
what acceptance a speculative point runs at (docs/methodology.md §5). Re-exported by
harness.config.schema."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.config.fields import setting


@dataclass
class AcceptanceConfig:
    """What acceptance a speculative point runs at (methodology.md §5)."""

    mode: str = setting(
        "auto", choices=("auto", "real", "injected"), fix="use auto, real or injected",
        help="real acceptance, injected, or auto (injected where the engine can)")
    length: float | None = setting(None, ge=1, fix="an acceptance length is >= 1",
                                   help="explicit AL; null: looked up in the acceptance table")
    # An injected point verifies when its realised AL lies in the interval the injected
    # distribution allows at this two-sided confidence for the draws it made...
    confidence: float = setting(0.999, gt=0, le=1, fix="e.g. 0.999 (two-sided)",
                                help="an injected point's realised AL interval, two-sided")
    # ...and it made at least this many independent draws (fewer is its own reason).
    min_drafts: int = setting(200, ge=1, fix="e.g. 200",
                              help="independent draws an injected point needs to verify")
    # Which table rows a lookup may inject: published (golden curves first; never a local
    # calibration), calibrated (harness calibrate's rows), or one row as file:line.
    source: str = setting(
        "published", help="rows a lookup may inject: published (golden curves first), "
        "calibrated, or one row as file:line")
    # An explicit length that is a published curve's value at another draft length: refuse
    # (InferenceX's written fairness rule, golden_al_distribution/README.md@843c6254) or allow
    # (what its four dsv4-fp4-gb200-dynamo-vllm-agentic-mtp* keys do: 2.49, the k=3 value, at k=2).
    other_k: str = setting("refuse", choices=("refuse", "allow"), noun="value",
                           fix="use refuse or allow",
                           help="an explicit AL that is a curve's value at another k")


@dataclass
class SpeculatorConfig:
    method: str = setting(
        "none", help="speculative decoding: none, ngram, draft_model, mtp, eagle3, dspark, ...")
    k: int = setting(0, ge=0, le=64, help="draft length (speculative tokens per step)",
                     fix="e.g. speculator.k=3")
    draft_model: str | None = setting(
        None, help="draft_model, eagle3, dspark: the drafter's checkpoint (keys the curve)")
    # How drafts are sampled and verified, part of what an acceptance curve was measured with:
    # greedy (vLLM's default draft_sample_method), probabilistic (draft_sample_method
    # probabilistic) or probabilistic-block (that and rejection_sample_method block, the Kimi-K3
    # DSpark golden curve of InferenceX golden_al_distribution/@843c6254).
    sample_method: str = setting(
        "greedy", choices=("greedy", "probabilistic", "probabilistic-block"),
        help="how drafts are sampled and verified (keys the acceptance curve)")
    ngram_min: int = setting(
        2, ge=1, help="ngram: shortest match", fix="e.g. speculator.ngram_min=2")
    ngram_max: int = setting(
        4, ge=1, help="ngram: longest match", fix="e.g. speculator.ngram_max=4")
    acceptance: AcceptanceConfig = field(default_factory=AcceptanceConfig)
    # A speculative point whose engine metrics show no speculation (an attached server no
    # known engine's metrics describe) is invalid; true keeps it valid with the label marked
    # unverified on the point and its page (the user vouches for the label).
    unverified_ok: bool = setting(
        False, help="keep a speculative point valid when the engine's metrics cannot show "
        "speculation (marked unverified)")
