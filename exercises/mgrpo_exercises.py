"""Exercises: five pieces of M-GRPO to write yourself. Fill in each function, then check it with the project's tests:

    MGRPO_EXERCISES=exercises/mgrpo_exercises.py .venv/bin/python -m pytest tests/exercises -k advantages
    (or -k alignment, -k reward, -k surrogate, -k step; `make exercises` runs all five)

The first four are single formulas; the fifth, `sub_step`, is the sub-agent's side of a whole training step and uses
the others. Each function says what it must return. The notebook named beside it explains the idea, and
`exercises/solutions.py` holds one way to write them (plain Python and torch). Only the standard library is needed.
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


def sub_step(records: dict[tuple, dict], subs: list, expert, d_max: int = 2, seed: int = 0, beta_fmt: float = 0.1,
             beta_out: float = 0.9, beta_exp: float = 0.5) -> tuple[list, list[float]]:
    """The sub-agent's side of one training step, up to its update (13_step: `SubSide.step`).

    records: one per main rollout of the step, as the statistics store gives them: key (step, qid, k) ->
             {'R_M': float, 'correct': float, 'format_ok': bool, 'd_k': int, ...}. A rollout that never delegated
             (d_k = 0) has a record too. This is all the sub side learns of the main agent's rollouts.
    subs:    the step's sub-trajectories (`mgrpo_ref.rollout.Trajectory`): `.key` is (step, qid, k, i), the i-th
             delegation of main rollout (step, qid, k); `.format.ok` whether it is well-formed; `.prompt` the sub-task
             it was given; `.output` its report (None when malformed).
    expert:  expert(task, report) -> r_exp: 1.0 if the report holds the true answer of that sub-task, else 0.0.

    1. R_S of every sub-trajectory (`sub_reward` above), with the outcome `correct` of the main rollout it served,
       read from that rollout's record, and r_exp = expert(its task, its report);
    2. alignment (`align_rollouts` above): every main rollout of `records` gets exactly d_max slots; list the
       rollouts with each one's sub-trajectory keys in delegation order (by i);
    3. Â_S (`group_advantages` above) over the non-empty slots of one question (the same (step, qid)): a
       sub-trajectory that fills two slots counts twice; an empty slot (None) is in no group and trains nothing.
    Return what the sub-agent's update is given: the trajectory of every non-empty slot (a duplicated one as often as it
    fills a slot) and, in the same order, each one's advantage. Draw every random choice from random.Random(seed)."""
    raise NotImplementedError('sub_step: write it (13_step)')
