"""Which drafters an injected acceptance length cannot be run with: those that draft only from
text already seen, on the replayed agentic prompts (docs/speculation.md)."""

from __future__ import annotations

# Drafters that propose from text already seen (prompt/output n-grams). The harness's agentic
# prompts are blocks of single-token words drawn per hash id, so such drafters propose almost
# nothing and an injected AL is neither realised nor verifiable.
LOOKUP_DRAFTERS = frozenset({"ngram", "prompt_lookup", "suffix", "lookahead"})



def injectable_refusal(method: str, synthetic_text: bool, mode: str = "injected") -> str | None:
    """Why an injected point with this drafter cannot be run, or None. Called at validation:
    an n-gram drafter proposes nothing on the synthetic agentic prompts (word blocks), so the
    point would only ever be judged on a handful of drafts (or none)."""
    if mode != "injected" or not synthetic_text or method not in LOOKUP_DRAFTERS:
        return None
    return (f"speculator {method} drafts only from n-grams already in the text, and the "
            "replayed agentic prompts are synthetic single-token-word blocks: it proposes "
            "(almost) no drafts there, so an injected acceptance length cannot be realised or "
            "verified; use a model drafter (mtp, eagle3, draft_model) for injected agentic "
            "points, or speculator.acceptance.mode=real (flagged as not representative)")
