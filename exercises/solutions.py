"""One way to solve exercises/mgrpo_exercises.py, written as a learner would: plain Python, and torch for the loss.
The exercises follow the method track: 1 R_S (08_rewards), 2 alignment (09_alignment), 3 advantages (10_advantages),
4 the clipped surrogate (11_loss), 5 the sub-agent's side of a step (12_one_step, 13_step).
Nothing here calls mgrpo_ref; the tests in tests/exercises check these against the package's own reference loops."""
import random

import torch


# ---- 1. the sub-agent's reward R_S (08_rewards) --------------------------------------------------------------------
def sub_reward(format_ok, main_correct, expert, beta_fmt=0.1, beta_out=0.9, beta_exp=0.5):
    if not format_ok: return 0.0                        # the format gate
    return beta_fmt + beta_out * main_correct + beta_exp * expert


# ---- 2. trajectory alignment (09_alignment) ------------------------------------------------------------------------
def align_rollouts(rollouts, d_max, seed=0):
    rng = random.Random(seed)
    slots = {}
    for key, subs in rollouts:                          # rollouts that delegated: drop or duplicate
        key, subs = tuple(key), [tuple(s) for s in subs]
        if len(subs) >= d_max: slots[key] = rng.sample(subs, d_max)
        elif subs: slots[key] = subs + [rng.choice(subs) for _ in range(d_max - len(subs))]
    kept = {}                                           # question (step, qid) -> what its delegating rollouts kept
    for key, chosen in slots.items():
        for s in chosen:
            if s not in kept.setdefault(key[:2], []): kept[key[:2]].append(s)
    for key, subs in rollouts:                          # rollouts that never delegated: fill from what the question kept, or empty
        key = tuple(key)
        if key in slots: continue
        pool = kept.get(key[:2], [])
        slots[key] = [rng.choice(pool) for _ in range(d_max)] if pool else [None] * d_max
    return {tuple(key): slots[tuple(key)] for key, _ in rollouts}


# ---- 3. group-relative advantages (10_advantages) ------------------------------------------------------------------
def group_advantages(rewards: list[float], groups: list) -> list[float]:
    members = {}                                        # group -> the indices of its elements
    for i, g in enumerate(groups): members.setdefault(g, []).append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        rs = [rewards[i] for i in idx]
        if max(rs) == min(rs): continue                 # all equal: no signal, advantages stay 0
        mean = sum(rs) / len(rs)
        std = (sum((r - mean) ** 2 for r in rs) / len(rs)) ** 0.5   # population std (ddof = 0)
        for i in idx: out[i] = (rewards[i] - mean) / (std + 1e-6)
    return out


# ---- 4. the clipped surrogate loss (11_loss) -----------------------------------------------------------------------
def clipped_surrogate(logp, old_logp, adv, mask, eps_low=0.2, eps_high=0.28):
    T = max(len(row) for row in mask)
    pad = lambda rows: torch.tensor([list(row) + [0] * (T - len(row)) for row in rows], dtype=torch.float64)
    logp, old_logp, mask = pad(logp), pad(old_logp), pad(mask) > 0         # (N, T) each
    A = torch.tensor(adv, dtype=torch.float64)[:, None]                    # (N, 1)
    ratio = torch.exp(logp - old_logp)                                     # (N, T)
    term = -torch.minimum(ratio * A, ratio.clamp(1 - eps_low, 1 + eps_high) * A)   # (N, T)
    term = torch.where(mask, term, 0.0)                                    # (N, T) masked tokens do not count
    n = mask.sum(1)                                                        # (N,) loss tokens per trajectory
    per_traj = term.sum(1)[n > 0] / n[n > 0]                               # (N',) token mean of each trajectory with tokens
    return per_traj.mean().item()                                          # then the mean over trajectories


# ---- 5. the sub-agent's side of a step, up to its update (12_one_step, 13_step) -----------------------------------
# It uses exercises 1 to 3; the loss (exercise 4) runs inside the trainer's update, which computes the policy's logp.
def sub_step(records, subs, expert, d_max=2, seed=0, beta_fmt=0.1, beta_out=0.9, beta_exp=0.5):
    by_key = {tuple(s.key): s for s in subs}
    # 1. R_S: the sub-trajectory's own format, its main rollout's outcome (from the record), the expert term
    r_sub = {key: sub_reward(s.format.ok, records[key[:3]]['correct'], expert(s.prompt, s.output), beta_fmt, beta_out, beta_exp)
             for key, s in by_key.items()}
    # 2. alignment: every rollout that has a record, with its sub-trajectories in delegation order
    children = {tuple(key): [] for key in records}
    for key in sorted(by_key, key=lambda key: key[3]): children[key[:3]].append(key)
    slots = align_rollouts(list(children.items()), d_max, seed)
    filled = [s for rollout in slots.values() for s in rollout if s is not None]   # empty slots train nothing
    # 3. Â_S per question over its filled slots (a duplicate counts as often as it fills a slot)
    adv = group_advantages([r_sub[s] for s in filled], [s[:2] for s in filled])
    return [by_key[s] for s in filled], adv
