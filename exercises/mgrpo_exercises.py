"""Exercises: four pieces of M-GRPO to write yourself. Fill in each function, then check it with the project's tests:

    MGRPO_EXERCISES=exercises/mgrpo_exercises.py .venv/bin/python -m pytest tests/exercises -k advantages
    (or -k alignment, -k reward, -k surrogate; `make exercises` runs all four)

Each function says what it must return. The notebook named beside it explains the idea, and `exercises/solutions.py`
holds the answers (thin wrappers around this project's own implementation). Only the standard library is needed.
"""
import random


def group_advantages(rewards: list[float], groups: list) -> list[float]:
    """Group-relative advantages (10_advantages): for each element, (r - mean of its group) / (std of its group + 1e-6),
    with the population std (ddof = 0). A group whose rewards are all equal gets 0 everywhere."""
    raise NotImplementedError('group_advantages: write it (10_advantages)')


def align_rollouts(rollouts: list[tuple[tuple, list[tuple]]], d_max: int, seed: int = 0) -> dict[tuple, list[tuple | None]]:
    """Trajectory alignment (09_alignment). `rollouts` lists each main rollout's key (step, qid, k) with the keys of its
    sub-trajectories. Return, for every rollout, exactly `d_max` slots, each a sub-trajectory key:
    - more than d_max sub-trajectories: keep d_max of them, chosen at random without replacement;
    - between 1 and d_max - 1: keep all, and fill the rest with random repeats of its own;
    - none: draw the d_max slots at random from the other rollouts of the same question (same (step, qid)), or
      leave them all None if no rollout of the question has any.
    Draw every random choice from random.Random(seed), so the same seed gives the same slots."""
    raise NotImplementedError('align_rollouts: write it (09_alignment)')


def sub_reward(format_ok: bool, main_correct: float, expert: float, beta_fmt: float = 0.1, beta_out: float = 0.9,
               beta_exp: float = 0.0) -> float:
    """The sub-agent's reward R_S (08_rewards): 0 if its own sub-trajectory is malformed, else
    beta_fmt + beta_out * main_correct (the outcome of the main rollout it served) + beta_exp * expert."""
    raise NotImplementedError('sub_reward: write it (08_rewards)')


def clipped_surrogate(logp: list[list[float]], old_logp: list[list[float]], adv: list[float], mask: list[list[int]],
                      eps_low: float = 0.2, eps_high: float = 0.28) -> float:
    """The clipped surrogate loss (11_loss), seq-mean-token-mean: for each token with mask 1, ratio = exp(logp - old_logp)
    and term = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A) with A its trajectory's advantage; average the
    terms of each trajectory, then average over the trajectories that have any mask-1 token."""
    raise NotImplementedError('clipped_surrogate: write it (11_loss)')
