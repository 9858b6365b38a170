"Warm start: demonstrations follow the rollout engine's tokenisation, SFT learns, the command works."
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mgrpo_ref.oracle import OracleNoise, OracleSetup, solve
from mgrpo_ref.policy import Sample, SamplingConfig, tiny_policy
from mgrpo_ref.rollout import RolloutConfig, run_tool_episodes
from mgrpo_ref.tools import Toolbox
from mgrpo_ref.warmstart import (WarmStartConfig, demonstrations, episode_tokens, load_policies, save_policies, sft,
                                 sft_loss, warm_start)


class Replay:
    "A stand-in policy that replays one oracle episode's turns, to compare token sequences with the engine's."
    def __init__(self, policy, turns):
        self.inner, self.turns = policy, list(turns)
        self.chat, self.tokenizer, self.pad_id = policy.chat, policy.tokenizer, policy.pad_id

    def decode(self, ids): return self.inner.decode(ids)

    def sample(self, prompts, cfg, seeds, role, cache=None, keys=None, share_prefix=True):   # replays whole turns: no KV cache to keep
        ids = self.tokenizer(self.turns.pop(0), add_special_tokens=False).input_ids
        return [Sample(ids, [0.0] * len(ids), 'stop')]


def test_demonstrations_match_the_rollout_engine(world, policy):
    "An oracle sub-episode tokenised for SFT equals the trajectory the engine builds when the same turns are sampled."
    setup = OracleSetup.for_world(world)
    toolbox = Toolbox.for_world(world)
    for q in world.questions['train'][:5]:
        ep = solve(q, setup, 'mgrpo', sub_noise=OracleNoise(), seed=0)
        for i, sub in enumerate(ep.subs):
            ids, mask = episode_tokens(sub, policy.chat)
            # replay the oracle's turns through the engine, with the same per-episode tool seed
            key = (0, q.qid, 0, i)
            box = Toolbox(toolbox.search, toolbox.pages)
            box.session = lambda seed, _s=setup, _q=q, _i=i: _s.session(f'0/{_q.qid}/sub{_i}')
            t = run_tool_episodes(Replay(policy, sub.turns), 'sub', [(key, sub.prompt)], box, RolloutConfig(), seed=0)[0]
            assert t.format.ok and t.input_ids == ids and t.loss_mask == mask


def test_sft_fits_demonstrations(world):
    pol = tiny_policy(world, seed=3)
    data = demonstrations(world, WarmStartConfig(questions=10, samples_per_question=1), pol.chat)['sub'][:16]
    before = sft_loss(pol.model, data, pol.pad_id).item()
    sft(pol, data, 40, WarmStartConfig(batch_size=16, lr=3e-3))
    with torch.no_grad(): after = sft_loss(pol.model, data, pol.pad_id).item()
    assert after < 0.3 * before, (before, after)


def test_sft_loss_counts_only_agent_tokens(world, policy):
    ids, mask = [1, 5, 6, 7, 8], [0, 0, 1, 1, 0]
    with torch.no_grad():
        lp = policy.logprobs([ids])[0]
        want = -(lp[2] + lp[3]) / 2
        assert torch.allclose(sft_loss(policy.model, [(ids, mask)], policy.pad_id), want, atol=1e-5)


def test_warm_start_roundtrip(tmp_path, world):
    cfg = WarmStartConfig(questions=8, samples_per_question=1, steps_main=2, steps_sub=2, steps_single=2, batch_size=4)
    pols, curves = warm_start(world, cfg)
    assert set(pols) == set(curves) == {'main', 'sub', 'single'} and all(len(c) == 2 for c in curves.values())
    save_policies(pols, tmp_path / 'ws', meta={'note': 'test'})
    again = load_policies(tmp_path / 'ws')
    p = pols['main'].chat.prompt_ids('s', 'Who founded X?')
    a = pols['main'].sample([p], SamplingConfig(max_new_tokens=8), [1], 'main')[0]
    b = again['main'].sample([p], SamplingConfig(max_new_tokens=8), [1], 'main')[0]
    assert a.token_ids == b.token_ids
    with pytest.raises(FileNotFoundError, match='no policy folder'):
        load_policies(tmp_path / 'nope')


def test_bad_warm_start_config():
    with pytest.raises(ValueError, match='WarmStartConfig.batch_size must be >= 1, got 0'):
        WarmStartConfig(batch_size=0)
    with pytest.raises(ValueError, match='WarmStartConfig.steps_sub must be >= 0, got -1'):
        WarmStartConfig(steps_sub=-1)
    with pytest.raises(ValueError, match='OracleNoise.first_result'):
        WarmStartConfig(sub_noise=OracleNoise(first_result=2))


EXE = shutil.which('mgrpo-rollout') or str(Path(sys.executable).parent / 'mgrpo-rollout')


@pytest.mark.parametrize('mode', ['mgrpo', 'single'])
def test_rollout_command_json(mode, runs_in_process):
    "In this process, through the command's parser and function (tiny_warm below starts it as a user does)."
    from mgrpo_ref.warmstart import mgrpo_rollout
    s = json.loads(runs_in_process(mgrpo_rollout, ['--mode', mode, '--questions', '3', '--k', '2', '--json'])[0].strip().splitlines()[-1])
    assert s['mode'] == mode and s['episodes'] == 6 and 0 <= s['accuracy'] <= 1 and s['gen_tokens_per_s'] > 0
    roles = ['main', 'sub'] if mode == 'mgrpo' else ['single']
    assert set(s['format_ok_rate']) <= set(roles) and set(s['mean_turns']) <= set(roles) and roles[0] in s['format_ok_rate']
    if mode == 'mgrpo': assert sum(s['d_hist'].values()) == 6


@pytest.fixture(scope='module')
def tiny_warm(tmp_path_factory):
    """A tiny warm start made by the command (4 SFT steps per role, on demonstrations of 32 questions: a config file, as
    users give one; the default's whole pool is 8,000 oracle episodes), shared by the tests that read one."""
    out = tmp_path_factory.mktemp('warm') / 'ckpt'
    cfg = out.parent / 'warmstart.json'
    cfg.write_text(json.dumps({'questions': 32, 'samples_per_question': 1}))
    r = subprocess.run([EXE, '--warmstart', '--warmstart-steps', '4', '--warmstart-config', str(cfg), '--save', str(out), '--questions', '1', '--k', '1'],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def test_rollout_command_warmstart_and_checkpoint(tiny_warm, runs_in_process):
    out = tiny_warm
    assert all((out / role / 'config.json').is_file() for role in ('main', 'sub', 'single'))
    made = json.loads((out / 'warmstart.json').read_text())['config']          # the file's fields and the flag's steps, recorded
    assert (made['questions'], made['samples_per_question'], made['steps_main'], made['steps_sub']) == (32, 1, 4, 4)
    from mgrpo_ref.warmstart import mgrpo_rollout
    printed, _ = runs_in_process(mgrpo_rollout, ['--checkpoint', str(out), '--mode', 'single', '--questions', '2', '--k', '1', '--json'])
    assert json.loads(printed.strip().splitlines()[-1])['episodes'] == 2


@pytest.mark.parametrize('args,msg', [(['--mode', 'trio'], "--mode must be 'mgrpo' or 'single', got 'trio'"),
                                      (['--checkpoint', '/nonexistent'], 'has no policy folder'),
                                      (['--k', '0'], '--questions and --k must be >= 1')])
def test_rollout_command_bad_input(args, msg, fails_in_process):
    "Bad input fails with a message that names it: run through the command's own parser and function, in this process (test_sft_steps_command_bad_input runs one case as a user meets it)."
    from mgrpo_ref.warmstart import mgrpo_rollout
    assert msg in fails_in_process(mgrpo_rollout, args)


SFT_STEPS = shutil.which('mgrpo-real-sft-steps') or str(Path(sys.executable).parent / 'mgrpo-real-sft-steps')


def test_sft_steps_command_cuts_a_warm_start_and_resumes(tmp_path, tiny_warm, runs_in_process):
    "mgrpo-real-sft-steps on a tiny warm start: a row per fraction and one for the warm start itself, on validation questions; run again (in this process), it keeps them and fine-tunes nothing."
    out, keep = tmp_path / 'steps.csv', tmp_path / 'keep'
    args = [SFT_STEPS, '--warm', str(tiny_warm), '--fractions', '0.25,0.5', '--questions', '2', '--samples', '1', '--out', str(out), '--keep', str(keep)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    import pandas as pd
    rows = pd.read_csv(out)
    assert list(rows.fraction) == [0.25, 0.5, 1.0] and list(rows.steps_main) == [1, 2, 4] and list(rows.steps_sub) == [1, 2, 4]
    assert (rows.system == 'mgrpo').all() and (rows.questions == 2).all() and rows.sampled_format_ok.between(0, 1).all()
    assert all((keep / f / role).is_dir() for f in ('0.25', '0.5') for role in ('main', 'sub'))
    stamp, text = (keep / 'curves-sub.json').stat().st_mtime_ns, out.read_text()
    from mgrpo_ref.real import mgrpo_real_sft_steps
    runs_in_process(mgrpo_real_sft_steps, args[1:])
    assert out.read_text() == text and (keep / 'curves-sub.json').stat().st_mtime_ns == stamp


def test_sft_steps_command_bad_input(tmp_path):
    "Bad input fails before any work with a message that names it: once as a user meets it (no traceback), then each check in-process."
    from mgrpo_ref.real import mgrpo_real_sft_steps
    files = ['--out', str(tmp_path / 'x.csv'), '--keep', str(tmp_path / 'k')]
    r = subprocess.run([SFT_STEPS, '--fractions', '0.5,x', *files], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "--fractions takes numbers separated by commas, got '0.5,x'" in r.stderr and 'Traceback' not in r.stderr
    for kw, msg in (({'fractions': '0.5,1'}, "--fractions must lie in (0, 1), got '0.5,1'"), ({'warm': '/nonexistent'}, "no real warm start at '/nonexistent'")):
        with pytest.raises(SystemExit, match=re.escape(msg)): mgrpo_real_sft_steps(out=str(tmp_path / 'x.csv'), keep=str(tmp_path / 'k'), **kw)
    assert not (tmp_path / 'x.csv').exists() and not (tmp_path / 'k').exists()
