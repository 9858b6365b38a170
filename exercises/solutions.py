"""The solutions of exercises/mgrpo_exercises.py: the same functions, computed by this project's implementation."""
import torch

from mgrpo_ref.advantages import group_advantages as _group_advantages
from mgrpo_ref.alignment import align_to_dmax
from mgrpo_ref.loss import LossConfig, clipped_surrogate as _clipped_surrogate
from mgrpo_ref.rewards import RewardConfig, sub_reward as _sub_reward


def group_advantages(rewards: list[float], groups: list) -> list[float]:
    ids = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    adv, _ = _group_advantages(torch.tensor(rewards, dtype=torch.float64), torch.tensor([ids[g] for g in groups]))
    return adv.tolist()


def align_rollouts(rollouts, d_max, seed=0):
    al = align_to_dmax(rollouts, d_max, 'fill_from_query', seed=seed)
    out = {tuple(k): [] for k, _ in rollouts}
    for rollout, slot in zip(al.rollout, al.slots): out[tuple(rollout)].append(slot)
    return out


def sub_reward(format_ok, main_correct, expert, beta_fmt=0.1, beta_out=0.9, beta_exp=0.0):
    return _sub_reward(format_ok, main_correct, expert, RewardConfig(beta_fmt=beta_fmt, beta_out=beta_out, beta_exp=beta_exp))


def clipped_surrogate(logp, old_logp, adv, mask, eps_low=0.2, eps_high=0.28):
    T = max(len(m) for m in mask)
    pad = lambda rows, v: torch.tensor([list(r) + [v] * (T - len(r)) for r in rows], dtype=torch.float64)
    loss, _ = _clipped_surrogate(pad(logp, 0.0), pad(old_logp, 0.0), torch.tensor(adv, dtype=torch.float64), pad(mask, 0),
                                 LossConfig(eps_low=eps_low, eps_high=eps_high))
    return loss.item()
