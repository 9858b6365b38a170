"Properties of the clipped policy loss: naive-loop oracle, micro-batch invariance, REINFORCE at rho = 1, clipping, masking, KL."
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from mgrpo_ref.learner import loss_batch, policy_loss_backward, reference_logprobs
from mgrpo_ref.loss import LossConfig, LossInfo, clipped_loss_naive, clipped_surrogate
from mgrpo_ref.policy import SamplingConfig, tiny_policy, token_logprobs
from mgrpo_ref.rollout import RolloutConfig, run_tool_episodes
from mgrpo_ref.tools import Toolbox

AGGS = ('seq-mean-token-mean', 'token-mean')


def random_batch(seed, n=None, t=None, spread=0.5):
    g = torch.Generator().manual_seed(seed)
    n = n or int(torch.randint(1, 9, (1,), generator=g)); t = t or int(torch.randint(1, 12, (1,), generator=g))
    lp = -torch.rand(n, t, generator=g, dtype=torch.float64) * 4
    old = lp + torch.randn(n, t, generator=g, dtype=torch.float64) * spread
    ref = lp + torch.randn(n, t, generator=g, dtype=torch.float64) * spread
    adv = torch.randn(n, generator=g, dtype=torch.float64)
    adv[torch.rand(n, generator=g) < 0.2] = 0.0
    mask = (torch.rand(n, t, generator=g) < 0.6).double()
    mask[0, 0] = 1.0                                                  # at least one loss token
    return lp, old, ref, adv, mask


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(AGGS), st.floats(0, 0.5), st.floats(0, 0.5), st.sampled_from([0.0, 0.04, 1.0]))
def test_matches_naive_loop(seed, agg, eps_low, eps_high, beta):
    lp, old, ref, adv, mask = random_batch(seed)
    cfg = LossConfig(eps_low=eps_low, eps_high=eps_high, beta_kl=beta, aggregation=agg)
    loss, info = clipped_surrogate(lp, old, adv, mask, cfg, ref_logp=ref)
    expect = clipped_loss_naive(lp.tolist(), old.tolist(), adv.tolist(), mask.int().tolist(), cfg, ref.tolist())
    assert abs(loss.item() - expect) <= 1e-6 * max(1.0, abs(expect))
    assert info.tokens == int(mask.sum()) and info.sequences == int((mask.sum(1) > 0).sum())


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(AGGS))
def test_micro_batch_losses_and_infos_add_up(seed, agg):
    lp, old, ref, adv, mask = random_batch(seed, n=7)
    cfg = LossConfig(aggregation=agg, beta_kl=0.1)
    whole, info = clipped_surrogate(lp, old, adv, mask, cfg, ref_logp=ref)
    n_seqs, n_tokens = int((mask.sum(1) > 0).sum()), int(mask.sum())
    parts = [clipped_surrogate(lp[i:i + 3], old[i:i + 3], adv[i:i + 3], mask[i:i + 3], cfg, ref_logp=ref[i:i + 3],
                               n_seqs=n_seqs, n_tokens=n_tokens) for i in range(0, 7, 3) if mask[i:i + 3].any()]
    total = sum((p[1] for p in parts), LossInfo())
    assert abs(sum(p[0].item() for p in parts) - whole.item()) < 1e-9
    for f in ('sequences', 'tokens', 'clipped_low', 'clipped_high', 'ratio_min', 'ratio_max'):
        assert getattr(total, f) == getattr(info, f), f
    for f in ('kl_behaviour_sum', 'kl_ref_sum'):
        assert math.isclose(getattr(total, f), getattr(info, f), rel_tol=1e-9, abs_tol=1e-12), f


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(AGGS))
def test_gradient_case_analysis(seed, agg):
    "d loss / d logp is 0 exactly on the clipped side and -Â·rho / normaliser elsewhere; 0 off the mask."
    lp, old, _, adv, mask = random_batch(seed, spread=0.6)
    cfg = LossConfig(aggregation=agg)
    lp = lp.clone().requires_grad_()
    clipped_surrogate(lp, old, adv, mask, cfg)[0].backward()
    rho = (lp.detach() - old).exp()
    A = adv[:, None].expand_as(rho)
    clipped = ((A > 0) & (rho > 1 + cfg.eps_high)) | ((A < 0) & (rho < 1 - cfg.eps_low))
    norm = mask.sum() if agg == 'token-mean' else (mask.sum(1, keepdim=True) * (mask.sum(1) > 0).sum())
    expect = torch.where((mask > 0) & ~clipped, -A * rho / norm, torch.zeros_like(rho))
    torch.testing.assert_close(lp.grad, expect, rtol=1e-9, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(AGGS))
def test_masked_tokens_never_contribute(seed, agg):
    lp, old, ref, adv, mask = random_batch(seed)
    cfg = LossConfig(aggregation=agg, beta_kl=0.5)
    off = mask == 0
    garbage = lambda x, v: torch.where(off, torch.full_like(x, v), x)
    a, ia = clipped_surrogate(lp, old, adv, mask, cfg, ref_logp=ref)
    lp2 = garbage(lp, 50.0).requires_grad_()
    b, ib = clipped_surrogate(lp2, garbage(old, float('nan')), adv, mask, cfg, ref_logp=garbage(ref, -1e4))
    b.backward()
    assert a.item() == b.item() and ia == ib
    assert (lp2.grad[off] == 0).all()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**6))
def test_k3_nonnegative_and_zero_at_equality(seed):
    lp, old, ref, adv, mask = random_batch(seed, spread=2.0)
    _, info = clipped_surrogate(lp, old, adv, mask, LossConfig(beta_kl=1.0), ref_logp=ref)
    assert info.kl_ref_sum >= 0 and info.kl_behaviour_sum >= 0
    _, same = clipped_surrogate(lp, lp, adv, mask, LossConfig(beta_kl=1.0), ref_logp=lp)
    assert same.kl_ref_sum == 0 and same.kl_behaviour_sum == 0 and same.ratio_min == same.ratio_max == 1.0
    assert same.clipped_low == same.clipped_high == 0


@pytest.fixture(scope='module')
def rollout_batch(world, policy):
    "Real sub-agent trajectories of a tiny policy, with random advantages (some 0)."
    rcfg = RolloutConfig(k=2, sub_sampling=SamplingConfig(max_new_tokens=10), max_turns_sub=2)
    jobs = [((0, q.qid, k, 0), q.chain[0].question) for q in world.questions['train'][:5] for k in range(2)]
    trajs = run_tool_episodes(policy, 'sub', jobs, Toolbox.for_world(world), rcfg, seed=3)
    adv = torch.randn(len(trajs), generator=torch.Generator().manual_seed(0)); adv[::4] = 0
    return trajs, loss_batch(trajs, adv, policy.pad_id)


def grads(model):
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


@pytest.mark.parametrize('agg', AGGS)
@pytest.mark.parametrize('beta', [0.0, 0.2])
def test_micro_batch_gradient_is_big_batch_gradient(world, policy, rollout_batch, agg, beta):
    _, batch = rollout_batch
    ref_policy = tiny_policy(world, seed=5)                          # a different model as the reference
    batch = reference_logprobs(ref_policy.model, batch, micro_batch=3) if beta else batch
    with torch.no_grad():                                            # move the policy off the behaviour one so clips bind
        for p in policy.model.parameters(): p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())) * 0.05)
    try:
        out = []
        for mb in (len(batch), (len(batch) + 1) // 2, 1):           # one chunk, two chunks, N chunks
            policy.model.zero_grad()
            loss, info = policy_loss_backward(policy.model, batch, LossConfig(aggregation=agg, beta_kl=beta, micro_batch=mb))
            out.append((loss, info, grads(policy.model)))
        for loss, info, g in out[1:]:
            assert abs(loss - out[0][0]) < 1e-6
            torch.testing.assert_close(g, out[0][2], rtol=0, atol=1e-6)
            assert (info.tokens, info.clipped_low, info.clipped_high) == (out[0][1].tokens, out[0][1].clipped_low, out[0][1].clipped_high)
        assert out[0][1].clipped_low + out[0][1].clipped_high > 0 and (out[0][1].kl_ref_sum > 0) == (beta > 0)
    finally:
        with torch.no_grad():
            for p in policy.model.parameters(): p.sub_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())) * 0.05)


@pytest.mark.parametrize('agg', AGGS)
def test_first_pass_is_reinforce(policy, rollout_batch, agg):
    "With the sampling weights rho = 1: nothing clips and the gradient is Â·∇logπ averaged as the mode says."
    trajs, batch = rollout_batch
    policy.model.zero_grad()
    _, info = policy_loss_backward(policy.model, batch, LossConfig(aggregation=agg, micro_batch=4))
    g_loss = grads(policy.model)
    assert info.clipped_low == info.clipped_high == 0 and abs(info.ratio_max - 1) < 1e-4 and abs(info.ratio_min - 1) < 1e-4
    assert info.tokens == sum(t.n_generated for t in trajs)
    assert info.silent_tokens == sum(t.n_generated for t, a in zip(trajs, batch.advantages) if a == 0)   # counted, not run
    policy.model.zero_grad()
    logp = token_logprobs(policy.model, batch.input_ids, batch.attention_mask)         # (N, L)
    m, A = batch.loss_mask, batch.advantages[:, None]
    if agg == 'token-mean': surrogate = (A * logp * m).sum() / m.sum()
    else: surrogate = ((A * logp * m).sum(1) / m.sum(1)).mean()
    (-surrogate).backward()
    torch.testing.assert_close(g_loss, grads(policy.model), rtol=0, atol=1e-6)
    policy.model.zero_grad()


def test_loss_batch_is_token_in_token_out(rollout_batch):
    trajs, batch = rollout_batch
    for i, t in enumerate(trajs):
        n = len(t.input_ids)
        assert batch.input_ids[i, :n].tolist() == t.input_ids and batch.attention_mask[i].sum() == n
        assert batch.loss_mask[i, :n].tolist() == t.loss_mask and batch.loss_mask[i, n:].sum() == 0
        assert torch.equal(batch.old_logprobs[i, :n], torch.tensor(t.logprobs, dtype=torch.float32))


def test_bad_input_is_named(rollout_batch):
    trajs, batch = rollout_batch
    with pytest.raises(ValueError, match='batch is empty'): loss_batch([], [], 0)
    with pytest.raises(ValueError, match=r'10 trajectories but advantages of shape \(2,\)'): loss_batch(trajs, [0.0, 1.0], 0)
    with pytest.raises(ValueError, match='micro_batch must be >= 1, got 0'): LossConfig(micro_batch=0)
    with pytest.raises(ValueError, match='eps_high must be >= 0, got -0.1'): LossConfig(eps_high=-0.1)
    with pytest.raises(ValueError, match='beta_kl must be >= 0, got -1'): LossConfig(beta_kl=-1)
    lp, old, _, adv, mask = random_batch(0)
    with pytest.raises(ValueError, match='behaviour log-probs must be finite'):
        clipped_surrogate(lp, torch.where(mask > 0, torch.full_like(old, float('inf')), old), adv, mask)
