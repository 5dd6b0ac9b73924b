"""Correctness: accuracy evals (lm-eval) and the lossless-speculation check (docs/evals.md)."""
