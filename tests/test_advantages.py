"Advantages: the vectorised version against the naive loop, group statistics, weights, bad input."
import pytest
import torch
from hypothesis import given, settings, strategies as st

from mgrpo_ref.advantages import group_advantages, group_advantages_naive, main_advantages, sub_advantages
from mgrpo_ref.alignment import align_to_dmax

element = st.tuples(st.sampled_from([0.0, 0.1, 1.0, 0.55]) | st.floats(-5, 5, allow_nan=False),
                    st.integers(0, 6), st.sampled_from([0.0, 1.0, 1.0, 2.0, 3.0]))


@settings(max_examples=400, deadline=None)
@given(st.lists(element, min_size=1, max_size=40), st.sampled_from([0, 1]))
def test_matches_naive_loop(elems, ddof):
    r, g, w = map(list, zip(*elems))
    adv, info = group_advantages(torch.tensor(r, dtype=torch.float64), torch.tensor(g), torch.tensor(w), ddof=ddof)   # the loop's floats, not rounded to float32 first
    naive = group_advantages_naive(r, g, w, ddof=ddof)
    assert torch.allclose(adv.double(), torch.tensor(naive, dtype=torch.float64), atol=1e-6, rtol=1e-6)
    for grp in set(g):                                            # weighted mean 0, std 1 where std > 0
        idx = [i for i, x in enumerate(g) if x == grp and w[i] > 0]
        if not idx: continue
        ws, a = torch.tensor([w[i] for i in idx], dtype=torch.float64), adv[idx].double()
        if max(r[i] for i in idx) == min(r[i] for i in idx):
            assert (a == 0).all()                                 # constant group: exactly 0
            continue
        n = ws.sum()
        if n - ddof <= 0: continue
        assert abs((ws * a).sum() / n) < 1e-5
        rs = torch.tensor([r[i] for i in idx], dtype=torch.float64)
        std = ((ws * (rs - (ws * rs).sum() / n) ** 2).sum() / (n - ddof)).sqrt()
        if std > 1e-3: assert abs(((ws * a ** 2).sum() / (n - ddof)).sqrt() - std / (std + 1e-6)) < 1e-4
    assert all(adv[i] == 0 for i in range(len(r)) if w[i] == 0)   # empty slots count nowhere
    assert info.groups == len({x for x, ww in zip(g, w) if ww > 0})


def test_duplicates_count_with_multiplicity():
    one, _ = group_advantages(torch.tensor([1.0, 0.0, 0.3]), torch.zeros(3, dtype=torch.long), torch.tensor([3.0, 1.0, 1.0]))
    rep, _ = group_advantages(torch.tensor([1.0, 1.0, 1.0, 0.0, 0.3]), torch.zeros(5, dtype=torch.long))
    assert torch.allclose(one, rep[[0, 3, 4]], atol=1e-6)


def test_sub_advantages_from_alignment():
    rolls = [((0, 'q', 0), [(0, 'q', 0, 0)]), ((0, 'q', 1), [(0, 'q', 1, 0), (0, 'q', 1, 1)]), ((0, 'r', 0), []), ((0, 'r', 1), [])]
    al = align_to_dmax(rolls, 2, seed=0)
    rewards = {(0, 'q', 0, 0): 1.0, (0, 'q', 1, 0): 0.1, (0, 'q', 1, 1): 0.1}
    adv, info = sub_advantages(al, rewards)
    assert adv.shape == (8,) and (adv[4:] == 0).all() and info.groups == 1 and info.zero_signal_groups == 0
    assert torch.allclose(adv[:4], torch.tensor([1.0, 1.0, -1.0, -1.0]), atol=1e-4)   # the duplicate counts twice
    with pytest.raises(ValueError, match=r"no reward for sub-trajectory \(0, 'q', 1, 1\)"):
        sub_advantages(al, {k: v for k, v in rewards.items() if k != (0, 'q', 1, 1)})


@pytest.mark.parametrize('args,msg', [
    (([1.0, float('inf')], [0, 0]), 'rewards must be finite, got inf at index 1'),
    (([1.0, 2.0], [0]), '1-D of one length'),
    (([], []), 'batch is empty'),
    (([1.0], [-1]), 'group ids must be >= 0'),
])
def test_bad_input(args, msg):
    with pytest.raises(ValueError, match=msg):
        group_advantages(torch.tensor(args[0]), torch.tensor(args[1], dtype=torch.long))


def test_main_needs_k_at_least_2():
    with pytest.raises(ValueError, match="has 1 rollout: K must be >= 2"):
        main_advantages([(0, 'a', 0), (0, 'a', 1), (0, 'b', 0)], [1, 0, 1])
    adv, info = main_advantages([(0, 'a', 0), (0, 'a', 1)], [1.0, 0.1])
    assert torch.allclose(adv, torch.tensor([1.0, -1.0]), atol=1e-5) and info.zero_signal_fraction == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), min_size=2, max_size=4), min_size=1, max_size=4),   # d_k per rollout, per question
       st.integers(1, 4), st.sampled_from(['fill_from_query', 'empty', 'ragged']), st.integers(0, 10**6))
def test_per_rollout_groups_are_the_rollouts(questions, d_max, mode, seed):
    "groups='rollout' gives the groups it claims: one per main rollout with a weighted slot, as a naive loop over al.rollout."
    import random
    rng = random.Random(seed)
    rolls = [((0, f'q{b}', k), [(0, f'q{b}', k, i) for i in range(d)]) for b, ds in enumerate(questions) for k, d in enumerate(ds)]
    rewards = {s: rng.choice([0.0, 0.1, 1.0, 1.5]) for _, subs in rolls for s in subs}
    al = align_to_dmax(rolls, d_max, mode, seed=seed)
    if not al.slots: return
    adv, info = sub_advantages(al, rewards, groups='rollout')
    r = [0.0 if s is None else rewards[s] for s in al.slots]
    assert torch.allclose(adv.double(), torch.tensor(group_advantages_naive(r, al.rollout, al.weight), dtype=torch.float64), atol=1e-5)
    assert info.groups == len({k for k, w in zip(al.rollout, al.weight) if w > 0})
    # per question (M-GRPO) is the same naive loop over al.group, whose groups are the questions
    q_adv, q_info = sub_advantages(al, rewards)
    assert torch.allclose(q_adv.double(), torch.tensor(group_advantages_naive(r, al.group, al.weight), dtype=torch.float64), atol=1e-5)
    assert q_info.groups == len({k[1] for k, w in zip(al.rollout, al.weight) if w > 0})
    # a rollout's own sub-trajectories share its outcome: with one reward per rollout, its per-rollout group has no signal
    # (slots that fill_from_query fills for a rollout that never delegated come from other rollouts, so they may differ)
    same = {s: rewards[s[:3] + (0,)] for s in rewards}
    z, _ = sub_advantages(al, same, groups='rollout')
    own = torch.tensor([s is not None and tuple(s[:3]) == tuple(k) for s, k in zip(al.slots, al.rollout)])
    assert (z[own] == 0).all()
