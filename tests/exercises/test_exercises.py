"""The exercises' checks: run against exercises/solutions.py by default, or against your own file with
MGRPO_EXERCISES=exercises/mgrpo_exercises.py pytest tests/exercises -k alignment (or advantages, reward, surrogate)."""
import importlib.util
import math
import os
import random
from pathlib import Path

import pytest

from mgrpo_ref.advantages import group_advantages_naive
from mgrpo_ref.loss import LossConfig, clipped_loss_naive

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def ex():
    "The module under test: the file MGRPO_EXERCISES names, else the solutions."
    path = Path(os.environ.get('MGRPO_EXERCISES', ROOT / 'exercises' / 'solutions.py'))
    spec = importlib.util.spec_from_file_location('exercises_under_test', path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


def close(a, b, tol=1e-6): return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


def test_advantages_by_hand(ex):
    # group a: rewards 1, 0 -> mean 0.5, std 0.5 -> +-0.5 / (0.5 + 1e-6); group b is constant -> 0
    want = [0.5 / (0.5 + 1e-6), -0.5 / (0.5 + 1e-6), 0.0, 0.0]
    assert close(ex.group_advantages([1.0, 0.0, 0.1, 0.1], ['a', 'a', 'b', 'b']), want)


def test_advantages_against_the_naive_loop(ex):
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 12)
        rewards = [rng.choice([0.0, 0.1, 1.0, rng.random()]) for _ in range(n)]
        groups = [rng.randint(0, 3) for _ in range(n)]
        assert close(ex.group_advantages(rewards, groups), group_advantages_naive(rewards, groups), 1e-5), (rewards, groups)


def random_rollouts(rng):
    rollouts = []
    for q in range(rng.randint(1, 3)):
        for k in range(rng.randint(1, 4)):
            d = rng.choice([0, 0, 1, 2, 3, 4])
            rollouts.append(((0, f'q{q}', k), [(0, f'q{q}', k, i) for i in range(d)]))
    return rollouts


def test_alignment_gives_every_rollout_dmax_slots_by_the_rules(ex):
    rng = random.Random(1)
    for case in range(300):
        rollouts, d_max = random_rollouts(rng), rng.randint(1, 3)
        out = ex.align_rollouts(rollouts, d_max, seed=case)
        assert set(map(tuple, out)) == {tuple(k) for k, _ in rollouts}
        for key, subs in rollouts:
            slots = out[tuple(key)]
            assert len(slots) == d_max, (key, slots)
            if len(subs) >= d_max: assert len(set(slots)) == d_max and set(slots) <= set(subs)       # kept or dropped, never repeated
            elif subs: assert set(slots) == set(subs)                                                # all kept, the rest repeats of its own
            else:
                others = {s for k2, s2 in rollouts if k2[:2] == key[:2] for s in s2}
                if others: assert set(slots) <= others                                               # filled from its question
                else: assert slots == [None] * d_max                                                 # nothing to fill from


def test_alignment_is_a_function_of_the_seed(ex):
    rollouts = [((0, 'q', 0), [(0, 'q', 0, i) for i in range(5)]), ((0, 'q', 1), [(0, 'q', 1, 0)]), ((0, 'q', 2), [])]
    assert ex.align_rollouts(rollouts, 2, seed=3) == ex.align_rollouts(rollouts, 2, seed=3)
    drawn = {tuple(ex.align_rollouts(rollouts, 2, seed=s)[(0, 'q', 0)]) for s in range(30)}
    assert len(drawn) > 3                                                                           # the drops are random


def test_reward_by_hand(ex):
    assert math.isclose(ex.sub_reward(True, 1.0, 1.0, 0.1, 0.9, 0.5), 1.5)
    assert math.isclose(ex.sub_reward(True, 0.0, 1.0, 0.1, 0.9, 0.5), 0.6)
    assert math.isclose(ex.sub_reward(True, 1.0, 0.0), 1.0)
    assert ex.sub_reward(False, 1.0, 1.0, 0.1, 0.9, 0.5) == 0.0                                     # the format gate


def test_surrogate_by_hand(ex):
    # A = +1, ratio e^0.5 = 1.65 is clipped at 1.28: term -1.28; A = -1, ratio e^-0.5 = 0.61: min(-0.61, -0.8) = -0.8, term +0.8
    assert math.isclose(ex.clipped_surrogate([[0.5]], [[0.0]], [1.0], [[1]]), -1.28, rel_tol=1e-6)
    assert math.isclose(ex.clipped_surrogate([[-0.5]], [[0.0]], [-1.0], [[1]]), 0.8, rel_tol=1e-6)
    # seq-mean-token-mean: each trajectory's mean first (-1 and -3), then their mean; masked tokens do not count
    assert math.isclose(ex.clipped_surrogate([[0.0, 0.0, 9.0], [0.0]], [[0.0, 0.0, 0.0], [0.0]], [1.0, 3.0], [[1, 1, 0], [1]]), -2.0, rel_tol=1e-6)


def test_surrogate_against_the_naive_loop(ex):
    rng = random.Random(2)
    for _ in range(200):
        n, T = rng.randint(1, 4), rng.randint(1, 6)
        logp = [[rng.uniform(-3, 0) for _ in range(T)] for _ in range(n)]
        old = [[x + rng.uniform(-0.6, 0.6) for x in row] for row in logp]
        mask = [[rng.random() < 0.7 for _ in range(T)] for _ in range(n)]
        mask[0][0] = True
        adv = [rng.uniform(-2, 2) for _ in range(n)]
        want = clipped_loss_naive(logp, old, adv, mask, LossConfig())
        assert math.isclose(ex.clipped_surrogate(logp, old, adv, [[int(m) for m in row] for row in mask]), want, rel_tol=1e-6, abs_tol=1e-9)
