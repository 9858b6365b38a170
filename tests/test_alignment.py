"Alignment: fixed shape, counts that add up, provenance, uniform drops, every question represented."
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from mgrpo_ref.alignment import align_to_dmax, suggest_dmax

batches = st.lists(st.lists(st.integers(0, 7), min_size=1, max_size=6), min_size=1, max_size=6)  # d_k per rollout per question


def _rollouts(ds):
    return [((0, f'q{b}', k), [(0, f'q{b}', k, i) for i in range(d)]) for b, qd in enumerate(ds) for k, d in enumerate(qd)]


@settings(max_examples=300, deadline=None)
@given(batches, st.integers(1, 5), st.sampled_from(['fill_from_query', 'empty']), st.integers(0, 10**6))
def test_shape_counts_provenance(ds, d_max, mode, seed):
    rolls = _rollouts(ds)
    a = align_to_dmax(rolls, d_max, mode, seed)
    n_rollouts, n_subs = len(rolls), sum(len(s) for _, s in rolls)
    assert len(a.slots) == len(a.rollout) == len(a.group) == len(a.weight) == n_rollouts * d_max
    c = a.counts
    assert c['kept'] + c['duplicated'] + c['filled'] + c['empty'] == n_rollouts * d_max
    assert c['kept'] + c['dropped'] == n_subs
    assert all((w == 0.0) == (s is None) for s, w in zip(a.slots, a.weight))
    by_rollout = dict(rolls)
    for s, r in zip(a.slots, a.rollout):
        if s is None: continue
        if by_rollout[r]: assert s[:3] == r                      # kept or duplicated: from the same rollout
        else:
            assert mode == 'fill_from_query' and s[:2] == r[:2] and s[:3] != r   # filled: same question, other rollout
    for r, subs in rolls:                                        # d_k <= D_max keeps every original
        slots = [s for s, rr in zip(a.slots, a.rollout) if rr == r]
        if 0 < len(subs) <= d_max: assert set(slots) == set(subs)
        if len(subs) > d_max: assert len(set(slots)) == d_max
    questions_with_subs = {r[:2] for r, subs in rolls if subs}
    represented = {s[:2] for s in a.slots if s is not None}
    assert questions_with_subs == represented                   # every question with a sub-trajectory is in
    groups = Counter(a.group)
    assert all(n == d_max * len(qd) for n, qd in zip((groups[g] for g in sorted(groups)), ds))


def test_drops_are_uniform():
    "Keeping 2 of 6 uniformly: each sub-trajectory is kept with probability 1/3 (4000 seeds, 5-sigma bound)."
    rolls = [((0, 'q', 0), [(0, 'q', 0, i) for i in range(6)]), ((0, 'q', 1), [(0, 'q', 1, 0)])]
    n = 4000
    kept = Counter(s for seed in range(n) for s in align_to_dmax(rolls, 2, seed=seed).slots[:2])
    sigma = (n * (1 / 3) * (2 / 3)) ** 0.5
    for i in range(6): assert abs(kept[(0, 'q', 0, i)] - n / 3) < 5 * sigma, kept
    pairs = Counter(frozenset(align_to_dmax(rolls, 2, seed=seed).slots[:2]) for seed in range(n))
    assert len(pairs) == 15                                      # every one of the C(6,2) subsets occurs


def test_duplicates_are_uniform_over_the_rollout():
    rolls = [((0, 'q', 0), [(0, 'q', 0, 0), (0, 'q', 0, 1)]), ((0, 'q', 1), [(0, 'q', 1, 0)])]
    dup = Counter(s for seed in range(2000) for s in align_to_dmax(rolls, 3, seed=seed).slots[:3])
    assert abs(dup[(0, 'q', 0, 0)] - dup[(0, 'q', 0, 1)]) < 200   # 2000 + ~1000 each


def test_ragged_keeps_everything():
    rolls = _rollouts([[0, 3, 1], [2]])
    a = align_to_dmax(rolls, None, mode='ragged')
    assert a.slots == [s for _, subs in rolls for s in subs] and a.group == [0] * 4 + [1] * 2 and a.d_max is None


@pytest.mark.parametrize('kw,msg', [(dict(d_max=0), 'd_max must be an integer >= 1, got 0'),
                                    (dict(d_max=2.5), 'd_max must be an integer >= 1, got 2.5'),
                                    (dict(d_max=2, mode='x'), "mode must be one of"),
                                    (dict(rollouts=[]), 'the batch is empty')])
def test_bad_input(kw, msg):
    args = dict(rollouts=_rollouts([[1, 2]]), d_max=2) | kw
    with pytest.raises(ValueError, match=msg):
        align_to_dmax(**args)


def test_bad_keys():
    with pytest.raises(ValueError, match='appears twice'):
        align_to_dmax(_rollouts([[1]]) * 2, 2)
    with pytest.raises(ValueError, match='not its parent'):
        align_to_dmax([((0, 'q', 0), [(0, 'q', 1, 0)])], 2)


def test_suggest_dmax():
    assert suggest_dmax([1] * 9 + [10]) == 2 and suggest_dmax([3, 3, 3], 100) == 3
    with pytest.raises(ValueError, match='percentile must be in'):
        suggest_dmax([1], 0)
