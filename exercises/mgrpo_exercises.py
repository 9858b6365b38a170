"""Exercises: five pieces of M-GRPO to write yourself, in the order of the method track (08_rewards -> 09_alignment ->
10_advantages -> 11_loss -> 12_one_step). Fill in each function, then check it with the project's tests:

    MGRPO_EXERCISES=exercises/mgrpo_exercises.py .venv/bin/python -m pytest tests/exercises -k reward
    (or -k alignment, -k advantages, -k surrogate, -k step; `make exercises` runs all five)

    1. sub_reward         the sub-agent's reward R_S                  (08_rewards)
    2. align_rollouts     trajectory alignment to D_max slots         (09_alignment)
    3. group_advantages   group-relative advantages                   (10_advantages)
    4. clipped_surrogate  the clipped surrogate loss                  (11_loss)
    5. sub_step           the sub-agent's side of a whole step        (12_one_step, 13_step)

The first four are single pieces; the fifth, `sub_step`, is the sub-agent's side of a whole training step and uses
exercises 1 to 3 (not 4: see its text). Each function says what it must return. The notebook named beside it explains
the idea, and `exercises/solutions.py` holds one way to write them (plain Python and torch). Only the standard library
is needed.
"""
import random


def sub_reward(format_ok: bool, main_correct: float, expert: float, beta_fmt: float = 0.1, beta_out: float = 0.9,
               beta_exp: float = 0.5) -> float:
    """Exercise 1. The sub-agent's reward R_S (08_rewards): 0 if its own sub-trajectory is malformed, else
    beta_fmt + beta_out * main_correct (the outcome of the main rollout it served) + beta_exp * expert.
    The defaults are the package's (`RewardConfig`, and `TrainConfig.reward`): beta_exp = 0 is MrlX's form, without
    the expert term."""
    raise NotImplementedError('sub_reward: write it (08_rewards)')


def align_rollouts(rollouts: list[tuple[tuple, list[tuple]]], d_max: int, seed: int = 0) -> dict[tuple, list[tuple | None]]:
    """Exercise 2. Trajectory alignment (09_alignment). `rollouts` lists each main rollout's key (step, qid, k) with the
    keys of its sub-trajectories. Return, for every rollout, exactly `d_max` slots, each a sub-trajectory key:
    - more than d_max sub-trajectories: keep d_max of them, chosen at random without replacement (the rest are dropped);
    - between 1 and d_max - 1: keep all, and fill the rest with random repeats of its own;
    - none: fill each of the d_max slots with one drawn at random from the sub-trajectories that the other rollouts of
      the same question (same (step, qid)) KEPT by the two rules above (each distinct one once in the draw; one they
      dropped is never used), or leave them all None if no rollout of the question has any.
    Draw every random choice from random.Random(seed), so the same seed gives the same slots."""
    raise NotImplementedError('align_rollouts: write it (09_alignment)')


def group_advantages(rewards: list[float], groups: list) -> list[float]:
    """Exercise 3. Group-relative advantages (10_advantages): for each element, (r - mean of its group) / (std of its
    group + 1e-6), with the population std (ddof = 0). A group whose rewards are all equal gets 0 everywhere."""
    raise NotImplementedError('group_advantages: write it (10_advantages)')


def clipped_surrogate(logp: list[list[float]], old_logp: list[list[float]], adv: list[float], mask: list[list[int]],
                      eps_low: float = 0.2, eps_high: float = 0.28) -> float:
    """Exercise 4. The clipped surrogate loss (11_loss), seq-mean-token-mean: for each token with mask 1,
    ratio = exp(logp - old_logp) and term = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A) with A its
    trajectory's advantage; average the terms of each trajectory, then average over the trajectories that have any
    mask-1 token."""
    raise NotImplementedError('clipped_surrogate: write it (11_loss)')


def sub_step(records: dict[tuple, dict], subs: list, expert, d_max: int = 2, seed: int = 0, beta_fmt: float = 0.1,
             beta_out: float = 0.9, beta_exp: float = 0.5) -> tuple[list, list[float]]:
    """Exercise 5. The sub-agent's side of one training step, up to its update (12_one_step; the package's
    `SubSide.step` in 13_step).

    records: one per main rollout of the step, as the statistics store gives them: key (step, qid, k) ->
             {'R_M': float, 'correct': float, 'format_ok': bool, 'd_k': int, ...}. A rollout that never delegated
             (d_k = 0) has a record too. This is all the sub side learns of the main agent's rollouts.
    subs:    the step's sub-trajectories (`mgrpo_ref.rollout.Trajectory`): `.key` is (step, qid, k, i), the i-th
             delegation of main rollout (step, qid, k); `.format.ok` whether it is well-formed; `.prompt` the sub-task
             it was given; `.output` its report (None when malformed).
    expert:  expert(task, report) -> r_exp: 1.0 if the report holds the true answer of that sub-task, else 0.0.

    1. R_S of every sub-trajectory (`sub_reward`, exercise 1), with the outcome `correct` of the main rollout it
       served, read from that rollout's record, and r_exp = expert(its task, its report);
    2. alignment (`align_rollouts`, exercise 2): every main rollout of `records` gets exactly d_max slots; list the
       rollouts with each one's sub-trajectory keys in delegation order (by i);
    3. Â_S (`group_advantages`, exercise 3) over the non-empty slots of one question (the same (step, qid)): a
       sub-trajectory that fills two slots counts twice; an empty slot (None) is in no group and trains nothing.
    Return what the sub-agent's update is given: the trajectory of every non-empty slot (a duplicated one as often as it
    fills a slot) and, in the same order, each one's advantage. Draw every random choice from random.Random(seed).

    Why exercise 4 (`clipped_surrogate`) is not called here: this function stops where `SubSide.step` hands its batch
    to the trainer (`trainer.update(trajectories, advantages)`, 14_learner). The loss needs `logp`, the log-probs of
    the policy being updated, which only a forward pass of the model gives, again in every optimizer pass; the
    trainer computes them and then applies the clipped surrogate, with old_logp = each trajectory's `.logprobs`, mask =
    its `.loss_mask` and A = the advantage returned here."""
    raise NotImplementedError('sub_step: write it (13_step)')
