"""The exercises' checks: run against exercises/solutions.py by default, or against your own file with
MGRPO_EXERCISES=exercises/mgrpo_exercises.py pytest tests/exercises -k reward (or alignment, advantages, surrogate, step).
In the order of the method track: 1 reward (08_rewards), 2 alignment (09_alignment), 3 advantages (10_advantages),
4 surrogate (11_loss), 5 step (12_one_step, 13_step)."""
import importlib.util
import math
import os
import random
from pathlib import Path

import pytest

from mgrpo_ref.advantages import group_advantages_naive, sub_advantages
from mgrpo_ref.alignment import align_to_dmax
from mgrpo_ref.channel import Record
from mgrpo_ref.config import TrainConfig
from mgrpo_ref.loss import LossConfig, clipped_loss_naive
from mgrpo_ref.protocol import FormatCheck
from mgrpo_ref.rewards import RewardConfig, score_subs, sub_reward
from mgrpo_ref.rollout import Trajectory
from mgrpo_ref.step import children_of
from mgrpo_ref.store import MemoryStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def ex():
    "The module under test: the file MGRPO_EXERCISES names, else the solutions."
    path = Path(os.environ.get('MGRPO_EXERCISES', ROOT / 'exercises' / 'solutions.py'))
    spec = importlib.util.spec_from_file_location('exercises_under_test', path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


def close(a, b, tol=1e-6): return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


# ---- exercise 1: the sub-agent's reward R_S (08_rewards) ---------------------------------------------------------
def test_reward_by_hand(ex):
    assert math.isclose(ex.sub_reward(True, 1.0, 1.0, 0.1, 0.9, 0.5), 1.5)
    assert math.isclose(ex.sub_reward(True, 0.0, 1.0, 0.1, 0.9, 0.5), 0.6)
    assert math.isclose(ex.sub_reward(True, 1.0, 0.0), 1.0)
    assert ex.sub_reward(False, 1.0, 1.0, 0.1, 0.9, 0.5) == 0.0                                     # the format gate


def test_reward_defaults_are_the_packages(ex):
    # called without weights, R_S is the package's: its sub_reward with RewardConfig(), the weights training uses
    # (TrainConfig().reward), with the expert term beta_exp = 0.5
    assert RewardConfig().beta_exp == TrainConfig().reward.beta_exp == 0.5
    assert math.isclose(ex.sub_reward(True, 0.0, 1.0), 0.6)                                          # 0.1 + 0.5 * r_exp
    for ok in (True, False):
        for correct in (0.0, 0.4, 1.0):
            for expert in (0.0, 1.0):
                want = sub_reward(ok, correct, expert)
                assert want == sub_reward(ok, correct, expert, TrainConfig().reward)
                assert math.isclose(ex.sub_reward(ok, correct, expert), want, abs_tol=1e-12), (ok, correct, expert)


def test_reward_against_the_package(ex):
    rng = random.Random(6)
    for _ in range(200):
        cfg = RewardConfig(beta_fmt=rng.uniform(0, 1), beta_out=rng.uniform(0, 1), beta_exp=rng.choice([0.0, rng.uniform(0, 1)]))
        ok, correct, expert = rng.random() < 0.8, rng.choice([0.0, 1.0, rng.random()]), rng.choice([0.0, 1.0])
        got = ex.sub_reward(ok, correct, expert, cfg.beta_fmt, cfg.beta_out, cfg.beta_exp)
        assert math.isclose(got, sub_reward(ok, correct, expert, cfg), abs_tol=1e-12), (ok, correct, expert, cfg)


# ---- exercise 2: trajectory alignment (09_alignment) --------------------------------------------------------------
def random_rollouts(rng):
    rollouts = []
    for q in range(rng.randint(1, 3)):
        for k in range(rng.randint(1, 4)):
            d = rng.choice([0, 0, 1, 2, 3, 4])
            rollouts.append(((0, f'q{q}', k), [(0, f'q{q}', k, i) for i in range(d)]))
    return rollouts


def check_alignment(rollouts, d_max, out) -> None:
    "Assert that `out` (rollout key -> its slots) gives every rollout of `rollouts` d_max slots by the rules of alignment."
    assert set(map(tuple, out)) == {tuple(k) for k, _ in rollouts}
    kept = {}                                                                                        # question -> what its delegating rollouts kept
    for key, subs in rollouts:
        slots = out[tuple(key)]
        assert len(slots) == d_max, (key, slots)
        if len(subs) >= d_max: assert len(set(slots)) == d_max and set(slots) <= set(subs), (key, slots)   # kept or dropped, never repeated
        elif subs: assert set(slots) == set(subs), (key, slots)                                    # all kept, the rest repeats of its own
        if subs: kept.setdefault(tuple(key[:2]), set()).update(slots)
    for key, subs in rollouts:
        if subs: continue
        slots, pool = out[tuple(key)], kept.get(tuple(key[:2]), set())
        if pool: assert None not in slots and set(slots) <= pool, (key, slots, pool)               # filled from what its question kept
        else: assert slots == [None] * d_max, (key, slots)                                         # nothing to fill from


def test_alignment_gives_every_rollout_dmax_slots_by_the_rules(ex):
    rng = random.Random(1)
    for case in range(300):
        rollouts, d_max = random_rollouts(rng), rng.randint(1, 3)
        check_alignment(rollouts, d_max, ex.align_rollouts(rollouts, d_max, seed=case))


def test_alignment_fills_from_what_the_question_kept(ex):
    # q: rollout 0 delegated four times and keeps D_max of them; rollout 1 never delegated, so it draws from those kept
    # (never from the ones rollout 0 dropped, never from question r)
    q0, r0 = [(0, 'q', 0, i) for i in range(4)], [(0, 'r', 0, 0)]
    rollouts = [((0, 'q', 0), q0), ((0, 'q', 1), []), ((0, 'r', 0), r0), ((0, 'r', 1), [])]
    for seed in range(40):
        out = ex.align_rollouts(rollouts, 1, seed=seed)
        assert out[(0, 'q', 1)] == out[(0, 'q', 0)] and out[(0, 'q', 0)][0] in q0, (seed, out)    # D_max = 1: the one kept
        assert out[(0, 'r', 1)] == r0, (seed, out)
        out = ex.align_rollouts(rollouts, 2, seed=seed)
        assert set(out[(0, 'q', 1)]) <= set(out[(0, 'q', 0)]), (seed, out)                        # D_max = 2: two of the two kept
        check_alignment(rollouts, 2, out)


def test_alignment_is_a_function_of_the_seed(ex):
    rollouts = [((0, 'q', 0), [(0, 'q', 0, i) for i in range(5)]), ((0, 'q', 1), [(0, 'q', 1, 0)]), ((0, 'q', 2), [])]
    assert ex.align_rollouts(rollouts, 2, seed=3) == ex.align_rollouts(rollouts, 2, seed=3)
    drawn = {tuple(ex.align_rollouts(rollouts, 2, seed=s)[(0, 'q', 0)]) for s in range(30)}
    assert len(drawn) > 3                                                                           # the drops are random


# ---- exercise 3: group-relative advantages (10_advantages) --------------------------------------------------------
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


# ---- exercise 4: the clipped surrogate loss (11_loss) -------------------------------------------------------------
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


# ---- exercise 5: the sub-agent's side of a step (12_one_step, 13_step) --------------------------------------------
def sub_step(ex, records, subs, expert, d_max, seed=0, **betas) -> list[tuple[tuple, float]]:
    """The adapter between these tests and your `sub_step` (as CS336's tests/adapters.py): it calls the function and
    returns its update's batch as (sub-trajectory key, advantage) pairs. Change this one function if yours returns
    its batch in another form (a tensor of advantages, a list of slots, ...)."""
    trajs, adv = ex.sub_step(records, subs, expert, d_max, seed, **betas)
    adv = [float(a) for a in adv]                       # a list, a tensor or an array
    assert len(trajs) == len(adv), (len(trajs), len(adv))
    return [(tuple(t.key), a) for t, a in zip(trajs, adv)]


def sub_trajectory(key, ok: bool, report: str | None) -> Trajectory:
    "A sub-trajectory as the rollouts make it, with the fields a sub step reads (its tokens do not matter here)."
    return Trajectory(tuple(key), 'sub', f'task {key[1]}-{key[2]}-{key[3]}', [1, 2], [0, 1], [0.0, -1.0],
                      format=FormatCheck(ok, [], None if ok else 'malformed', report if ok else None))


class Expert:
    "r_exp from a table of true answers, by task; the same check as a callable (the exercise) and as the package's object."
    def __init__(self, truth: dict): self.truth = truth
    def __call__(self, task, report): return float(report is not None and report == self.truth.get(task))
    def expert_score(self, task, report, match='em'): return self(task, report)


def record(correct: float, d_k: int, ok: bool = True) -> dict:
    "A main rollout's record as the store gives it."
    return {'R_M': (0.1 + 0.9 * correct) if ok else 0.0, 'correct': correct, 'format_ok': ok, 'd_k': d_k, 'main_version': 0}


def random_step(rng, no_choice: bool = False):
    "Records, sub-trajectories, an expert and D_max of a random step; `no_choice`: alignment has nothing to draw at random."
    d_max, records, subs, truth = rng.randint(1, 3), {}, [], {}
    for q in range(rng.randint(1, 3)):
        d_all = rng.choice([0, d_max]) if no_choice else None      # no choice: every rollout of a question keeps exactly its own
        for k in range(rng.randint(2, 4)):
            d = d_all if no_choice else rng.choice([0, 0, 1, 2, 3, 4])
            ok = rng.random() < 0.8
            records[(5, f'q{q}', k)] = record(float(ok and rng.random() < 0.5), d, ok)
            for i in range(d):
                s = sub_trajectory((5, f'q{q}', k, i), rng.random() < 0.8, rng.choice(['Paris', 'Rome']))
                truth[s.prompt] = rng.choice(['Paris', 'Rome'])
                subs.append(s)
    return records, subs, Expert(truth), d_max


def test_step_by_hand(ex):
    # question a, D_max = 2: rollout 0 answered right and delegated twice (reports right, wrong); rollout 1 answered wrong
    # and delegated once (report right): its slots hold that sub-trajectory twice
    records = {(0, 'a', 0): record(1.0, 2), (0, 'a', 1): record(0.0, 1),
               (0, 'b', 0): record(0.0, 0), (0, 'b', 1): record(1.0, 0),       # b: nobody delegated, every slot empty
               (0, 'c', 0): record(0.0, 1), (0, 'c', 1): record(0.0, 0)}       # c: one malformed sub-trajectory fills all 4
    subs = [sub_trajectory((0, 'a', 0, 0), True, 'x'), sub_trajectory((0, 'a', 0, 1), True, 'y'),
            sub_trajectory((0, 'a', 1, 0), True, 'z'), sub_trajectory((0, 'c', 0, 0), False, None)]
    expert = Expert({'task a-0-0': 'x', 'task a-0-1': 'no', 'task a-1-0': 'z'})
    # R_S = 0.1 + 0.9 * correct + 0.5 * r_exp: 1.5 and 1.0 (rollout 0), 0.6 twice (rollout 1); mean 0.925
    r = [1.5, 1.0, 0.6, 0.6]
    mean = sum(r) / 4
    std = (sum((x - mean) ** 2 for x in r) / 4) ** 0.5
    a = [(x - mean) / (std + 1e-6) for x in r]
    want = sorted([((0, 'a', 0, 0), a[0]), ((0, 'a', 0, 1), a[1]), ((0, 'a', 1, 0), a[2]), ((0, 'a', 1, 0), a[3])]
                  + [((0, 'c', 0, 0), 0.0)] * 4)              # c: four equal rewards, no signal; b: nothing to train
    got = sorted(sub_step(ex, records, subs, expert, d_max=2, seed=0))
    assert [k for k, _ in got] == [k for k, _ in want], got
    assert close([a for _, a in got], [a for _, a in want]), got


def test_step_follows_the_rules(ex):
    rng = random.Random(3)
    for case in range(200):
        records, subs, expert, d_max = random_step(rng)
        got = sub_step(ex, records, subs, expert, d_max, seed=case)
        assert got == sub_step(ex, records, subs, expert, d_max, seed=case)            # a function of the seed
        by_key = {s.key: s for s in subs}
        for qid in {key[1] for key in records}:
            rollouts = [key for key in records if key[1] == qid]
            mine = [(k, a) for k, a in got if k[1] == qid]
            has_subs = any(s[1] == qid for s in by_key)
            assert len(mine) == (len(rollouts) * d_max if has_subs else 0), (case, qid)  # D_max slots a rollout, empty ones left out
            for key in rollouts:                                                        # each rollout keeps min(d_k, D_max) of its own
                assert len({k for k, _ in mine if k[:3] == key}) == min(records[key]['d_k'], d_max), (case, key)
            if not mine: continue
            r = [sub_reward(by_key[k].format.ok, records[k[:3]]['correct'], expert(by_key[k].prompt, by_key[k].output),
                            TrainConfig().reward) for k, _ in mine]
            assert close([a for _, a in mine], group_advantages_naive(r, [0] * len(r)), 1e-5), (case, qid)   # one group a question


def test_step_matches_the_package_where_alignment_has_no_choice(ex):
    rng = random.Random(4)
    for case in range(100):
        records, subs, expert, d_max = random_step(rng, no_choice=True)
        cfg = RewardConfig(beta_fmt=0.2, beta_out=0.7, beta_exp=0.4)
        rewards = dict(zip([s.key for s in subs], score_subs(subs, records, cfg, expert)))       # what SubSide.step runs
        al = align_to_dmax(list(children_of(records, rewards).items()), d_max, 'fill_from_query', seed=case)
        adv, _ = sub_advantages(al, rewards, 'question')
        want = sorted((s, float(a)) for s, a in zip(al.slots, adv) if s is not None)
        got = sorted(sub_step(ex, records, subs, expert, d_max, seed=case, beta_fmt=0.2, beta_out=0.7, beta_exp=0.4))
        assert [k for k, _ in got] == [k for k, _ in want] and close([a for _, a in got], [a for _, a in want], 1e-5), case


def test_step_takes_the_records_as_the_store_gives_them(ex):
    records, subs, expert, d_max = random_step(random.Random(5))
    assert subs and any(r['d_k'] == 0 for r in records.values())              # a step with delegations and without
    store = MemoryStore()
    store.put_records('run', 5, records); store.finish_step('run', 5, len(records))
    from_store = store.get_records('run', 5, schema=Record)                    # JSON and back, each checked by the schema
    assert sub_step(ex, from_store, subs, expert, d_max, seed=1) == sub_step(ex, records, subs, expert, d_max, seed=1)
