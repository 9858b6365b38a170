"""mgrpo_minimal.py, the whole loop written out in one file, trains as the package does: a few steps of it leave bitwise
the weights that `Trainer` in mode 'mgrpo' leaves with the same config, and a changed clip value breaks the equality."""
import importlib.util
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import torch

from mgrpo_ref.config import TrainConfig
from mgrpo_ref.trainer import Trainer
from mgrpo_ref.warmstart import load_policies, shipped_warmstart

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location('mgrpo_minimal', ROOT / 'mgrpo_minimal.py')
mm = importlib.util.module_from_spec(spec); spec.loader.exec_module(mm)

# B = 2, K = 3 (the main agent has signal in 2 of the 3 steps), mu = 2: the second pass has ratios != 1, so the clip
# acts (on 0.5-3% of the tokens here); with mu = 1 the ratio is 1 up to rounding and no clip value would matter.
CFG = mm.Config(steps=3, questions_per_step=2, k=3, num_iterations=2, eval_questions=0, threads=1)


def trainer_config(c: mm.Config, one_pass: bool = True) -> TrainConfig:
    "Trainer's config of the same run: each field the minimal file has, set from it; the rest are the defaults it assumes."
    optim = {'lr': c.lr, 'betas': [c.beta1, c.beta2], 'grad_clip': c.grad_clip, 'weight_decay': 0.0}
    return TrainConfig.from_dict({
        'mode': 'mgrpo', 'steps': c.steps, 'questions_per_step': c.questions_per_step, 'rollout': {'k': c.k}, 'd_max': c.d_max,
        'align_mode': 'fill_from_query', 'sub_groups': 'question', 'num_iterations': c.num_iterations, 'seed': c.seed,
        'reward': {'alpha_fmt': c.alpha_fmt, 'alpha_acc': c.alpha_acc, 'beta_fmt': c.beta_fmt, 'beta_out': c.beta_out,
                   'beta_exp': c.beta_exp, 'match': 'em'},
        # micro_batch, head_chunk, share_prefix and skip_zero_advantage change only the order of float sums: with each
        # agent's whole batch as one forward pass and one LM-head call, as in the minimal file, the sums are the same sums
        # and the bits the same bits
        'loss': {'eps_low': c.eps_low, 'eps_high': c.eps_high, 'beta_kl': 0.0, 'aggregation': 'seq-mean-token-mean',
                 **({'micro_batch': 1024, 'head_chunk': 1 << 20, 'share_prefix': False, 'skip_zero_advantage': False} if one_pass else {})},
        'main_optim': optim, 'sub_optim': optim, 'eval_every': 0, 'checkpoint_every': 0})


@pytest.fixture(scope='module')
def one_thread():
    "Both runs with one torch thread (what the minimal file sets): a thread count can change the order of float sums."
    before = torch.get_num_threads(); torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope='module')
def trainer_run(world, one_thread):
    "Trainer's weights after CFG.steps steps from the shipped warm start, and each step's metrics."
    policies = load_policies(shipped_warmstart(), ('main', 'sub'))
    trainer = Trainer(world, trainer_config(CFG), policies)
    metrics = [trainer.step(s) for s in range(CFG.steps)]
    return {r: p.model.state_dict() for r, p in policies.items()}, metrics


def minimal_run(cfg: mm.Config):
    main, sub, history = mm.train(cfg, log=lambda line: None)
    return {'main': main.model.state_dict(), 'sub': sub.model.state_dict()}, history


def largest_difference(a: dict, b: dict) -> float:
    return max((a[k] - b[k]).abs().max().item() for k in a)


def test_minimal_leaves_the_trainers_weights_bit_for_bit(trainer_run, one_thread):
    want, metrics = trainer_run
    got, history = minimal_run(CFG)
    for m, h in zip(metrics, history):                      # the same rollouts, rewards and skips, step by step
        assert (m['main/reward'], m['sub/reward'], m['sub/episodes']) == (h['R_M'], h['R_S'], h['sub_episodes'])
        assert (m['main/skipped'], m['sub/skipped']) == (h['main']['skipped'], h['sub']['skipped'])
        for role in ('main', 'sub'):
            if not h[role]['skipped']: assert m[f'{role}/loss'] == h[role]['loss'], role
    assert sum(h['main']['skipped'] is None for h in history) >= 2 and all(h['sub']['skipped'] is None for h in history)
    assert all(h[r]['clip_frac'] > 0 for h in history for r in ('main', 'sub') if not h[r]['skipped'])   # the clip acted
    start = load_policies(shipped_warmstart(), ('main', 'sub'))
    for role in ('main', 'sub'):
        assert got[role].keys() == want[role].keys()
        assert largest_difference(want[role], start[role].model.state_dict()) > 1e-4, role   # both agents did move
        assert all(torch.equal(got[role][k], want[role][k]) for k in want[role]), (role, largest_difference(got[role], want[role]))


@pytest.mark.parametrize('change', [{'eps_low': 0.1}, {'eps_high': 0.4}])
def test_a_changed_clip_breaks_the_equality(trainer_run, one_thread, change):
    "The check can fail: a clip value that changes which tokens are clipped gives other weights (here by 4e-4 to 2e-3)."
    want, _ = trainer_run
    got, _ = minimal_run(replace(CFG, **change))
    assert max(largest_difference(got[r], want[r]) for r in ('main', 'sub')) > 1e-4, change   # far above any rounding


def test_with_the_packages_own_chunks_the_weights_agree_to_rounding(one_thread, world):
    """With LossConfig's defaults (micro-batches of 16 trajectories, the LM head 256 positions at a time, the shared prefix
    run once, rows with Â = 0 left out), the package sums the same terms in another order: the weights come out apart by
    float rounding only (not bitwise). Adam divides each gradient by its own running size, so a weight whose gradient is
    near 0 moves by a share of lr = 3e-4 on rounding alone: 7.7e-6 apart at most after 3 steps here (3e-8 with the
    micro-batches alone, which keep every row's pass whole). The bound is a tenth of lr."""
    c = replace(CFG, k=4)
    policies = load_policies(shipped_warmstart(), ('main', 'sub'))
    trainer = Trainer(world, trainer_config(c, one_pass=False), policies)
    for s in range(c.steps): trainer.step(s)
    got, _ = minimal_run(c)
    for role in ('main', 'sub'):
        assert largest_difference(got[role], policies[role].model.state_dict()) < 3e-5, role


def test_the_script_runs_from_the_command_line():
    out = subprocess.run([sys.executable, str(ROOT / 'mgrpo_minimal.py'), '--steps', '1', '--questions-per-step', '2', '--k', '2',
                          '--eval-questions', '2', '--eval-samples', '1'], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert 'step   1 | R_M' in out.stdout and 'held-out accuracy on 2 test questions' in out.stdout, out.stdout


def test_the_configs_agree_on_every_shared_field():
    "A default the minimal file writes down is the package's default too (a drift in either would make the runs differ)."
    t, c = TrainConfig(), mm.Config()
    assert (c.questions_per_step, c.k, c.d_max, c.num_iterations, c.seed) == (t.questions_per_step, t.rollout.k, t.d_max, t.num_iterations, t.seed)
    assert {k: getattr(c, k) for k in ('alpha_fmt', 'alpha_acc', 'beta_fmt', 'beta_out', 'beta_exp')} == \
        {k: v for k, v in asdict(t.reward).items() if k != 'match'}
    assert (c.eps_low, c.eps_high, t.loss.beta_kl, t.loss.aggregation) == (t.loss.eps_low, t.loss.eps_high, 0.0, 'seq-mean-token-mean')
    for o in (t.main_optim, t.sub_optim): assert (c.lr, (c.beta1, c.beta2), c.grad_clip, 0.0) == (o.lr, tuple(o.betas), o.grad_clip, o.weight_decay)
