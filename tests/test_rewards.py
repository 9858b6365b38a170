"Rewards: every cell of the table for arbitrary weights, key joins, and real trajectories."
import math

import pytest
from hypothesis import given, settings, strategies as st

from mgrpo_ref.rewards import (RewardConfig, SubtaskAnswers, correctness, main_reward, score_mains, score_subs,
                               sub_reward)
from mgrpo_ref.rollout import InProcessSubAgent, RolloutConfig, rollout_mgrpo
from mgrpo_ref.tools import Toolbox

weights = st.floats(0, 5, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(weights, weights, weights, weights, weights, st.text(max_size=12), st.text(max_size=12))
def test_reward_table(a_fmt, a_acc, b_fmt, b_out, b_exp, pred, gold):
    cfg = RewardConfig(a_fmt, a_acc, b_fmt, b_out, b_exp)
    c = correctness(pred, gold)
    assert main_reward(False, pred, gold, cfg) == 0.0
    assert main_reward(True, pred, gold, cfg) == pytest.approx(a_fmt + a_acc * c)
    for main_ok in (0.0, 1.0):
        for exp in (0.0, 1.0):
            assert sub_reward(False, main_ok, exp, cfg) == 0.0
            assert sub_reward(True, main_ok, exp, cfg) == pytest.approx(b_fmt + b_out * main_ok + b_exp * exp)


def test_default_rewards_take_three_values():
    assert {main_reward(f, p, 'a') for f in (False, True) for p in ('a', 'b', None)} == {0.0, 0.1, 1.0}


def test_reward_defaults_are_the_runs():
    "RewardConfig's defaults are TrainConfig's, so overriding one reward field keeps the expert term (it once fell to 0)."
    from mgrpo_ref.config import TrainConfig, config_fields
    assert RewardConfig() == TrainConfig().reward and RewardConfig().beta_exp == 0.5
    assert TrainConfig.from_dict(config_fields(None, 'reward.match=f1')).reward == RewardConfig(match='f1')
    assert TrainConfig.from_dict(config_fields(None, 'reward.beta_exp=0')).reward.beta_exp == 0.0
    assert {round(sub_reward(True, m, e), 9) for m in (0.0, 1.0) for e in (0.0, 1.0)} == {0.1, 0.6, 1.0, 1.5}


@pytest.mark.parametrize('field,value', [('alpha_fmt', -0.1), ('beta_out', math.inf), ('beta_exp', float('nan')), ('alpha_acc', '1')])
def test_bad_weights_name_the_field(field, value):
    with pytest.raises(ValueError, match=f'RewardConfig.{field} must be a finite number >= 0'):
        RewardConfig(**{field: value})


def test_subtask_answers_cover_every_gold_hop(world):
    oracle = SubtaskAnswers(world)
    for q in world.questions['train'] + world.questions['test']:
        for h in q.chain:
            assert oracle.answer(h.question) == h.answer
            assert oracle.answer(h.question.lower()) == h.answer


def test_scores_of_real_rollouts(world, policy):
    "Fresh policies write malformed turns: every reward is 0, records exist for every rollout, joins by key."
    cfg = RolloutConfig(k=3)
    client = InProcessSubAgent(policy, Toolbox.for_world(world), cfg)
    qs = world.questions['test'][:4]
    mains, _ = rollout_mgrpo(qs, policy, client, cfg)
    r_m, records = score_mains(mains, {q.qid: q.answer for q in qs})
    assert len(r_m) == 12 and set(records) == {t.key for t in mains}
    assert all(r == (0.0 if not t.format.ok else r) for r, t in zip(r_m, mains))
    subs = client.pop()
    assert len(score_subs(subs, records)) == len(subs)
    assert all(rec['d_k'] == t.d for t, rec in zip(mains, records.values()))
