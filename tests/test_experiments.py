"The mgrpo-experiment and mgrpo-audit console scripts, run as a user would: validation before any work, a tiny comparison and its audit."
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from mgrpo_ref.experiments import collect, mgrpo_experiment
from mgrpo_ref.warmstart import save_policies

EXE = shutil.which('mgrpo-experiment') or str(Path(sys.executable).parent / 'mgrpo-experiment')
TINY = 'questions_per_step=2,rollout.k=2,rollout.max_turns_main=3,rollout.max_turns_sub=3,eval_questions=4,eval_samples=1,checkpoint_every=0'


def run(*args):
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=900)


def test_bad_input_fails_before_any_work(tmp_path, fails_in_process):
    cases = [(['--arms', 'mgrpo,ppo'], "unknown arms ['ppo']; the arms are ['mgrpo', 'mgrpo_outcome', 'mgrpo_per_rollout'"),
             (['--arms', ','], 'unknown arms (none given)'),
             (['--set', 'sub_groups=step'], "TrainConfig.sub_groups must be one of ('question', 'rollout'), got 'step'"),
             (['--table', '../elsewhere'], '--table must be a plain file name'),
             (['--seeds', '0,0'], 'ExperimentConfig.seeds must be distinct'),
             (['--seeds', '0,x'], "--seeds must be comma-separated integers, got '0,x'"),
             (['--set', 'mode=single'], 'TrainConfig.mode is set per run by the experiment'),
             (['--set', 'd_max=0'], 'TrainConfig.d_max must be an integer >= 1, got 0'),
             (['--workers', '0'], 'ExperimentConfig.workers must be >= 1, got 0'),
             (['--checkpoint', str(tmp_path / 'nope')], 'is not a folder')]
    for i, (args, msg) in enumerate(cases):
        out = tmp_path / 'exp'
        if i < 1:                                         # as a user runs it: the console script's exit status and stderr
            r = run(*args, '--out', str(out), '--quiet')
            assert r.returncode != 0 and msg in r.stderr, (args, r.stderr[-500:])
        else: assert msg in fails_in_process(mgrpo_experiment, [*args, '--out', str(out), '--quiet']), args   # the same parser and function, in this process
        assert not out.exists(), args                     # failed before the warm start wrote anything


def test_tiny_ablation_from_one_checkpoint(warm_policies, tmp_path, fails_in_process, runs_in_process):
    "Named arms of one mode (mgrpo with and without the expert term) and a baseline, 2 seeds, 2 steps: the table, its diagnostics, reuse. The first command runs as a user runs it; the others in this process."
    ck = save_policies(warm_policies, tmp_path / 'warmstart')
    out = tmp_path / 'exp'
    args = ('--arms', 'mgrpo,mgrpo_outcome,single', '--seeds', '0,1', '--steps', '2', '--set', TINY,
            '--checkpoint', str(ck), '--workers', '1', '--out', str(out), '--table', 'ablations', '--quiet')   # one process: test_reproducible runs spawned workers
    r = run(*args)
    assert r.returncode == 0, r.stderr[-3000:]
    df = pd.read_csv(out / 'ablations.csv')
    assert sorted(zip(df.arm, df.seed)) == sorted((a, s) for a in ('mgrpo', 'mgrpo_outcome', 'single') for s in (0, 1))
    for f in ('ablations.md', 'ablations.png', 'ablations_diagnostics.png', 'ablations.json', 'ablations_steps.csv', 'mgrpo/seed1/metrics.jsonl', 'single/seed0/summary.json'):
        assert (out / f).is_file(), f
    md = (out / 'ablations.md').read_text()
    assert md.count('\n| `') == 3 + 3 + 2                               # a row per arm in the results and ablation tables, per other arm in the paired one
    assert f'`mgrpo-experiment --arms mgrpo_outcome --seeds 0,1 --steps 2 --set {TINY} --checkpoint {ck} --out {out} --table mgrpo_outcome`' in md
    # each arm's config is what its name says, and the table says what it rewards
    cfg = lambda a: json.loads((out / a / 'seed0' / 'config.json').read_text())
    assert (cfg('mgrpo')['reward']['beta_exp'], cfg('mgrpo_outcome')['reward']['beta_exp'], cfg('mgrpo_outcome')['mode']) == (0.5, 0.0, 'mgrpo')
    rewards = df.drop_duplicates('arm').set_index('arm')['rewards']
    assert '0.5 expert' in rewards['mgrpo'] and 'expert' not in rewards['mgrpo_outcome'] and rewards['single'].startswith('R_M')
    # diagnostics: the two-agent arms log the sub-agent's sub-task accuracy and their slots; the single agent has none
    two = df[df.arm != 'single']
    assert two['subtask_accuracy'].between(0, 1).all() and two['repeated_share'].between(0, 1).all()
    assert df[df.arm == 'single'][['subtask_accuracy', 'sub_zero_signal', 'repeated_share']].isna().all().all()
    first = (out / 'ablations.csv').read_text()
    runs_in_process(mgrpo_experiment, list(args))                         # again: finished runs are reused
    assert (out / 'ablations.csv').read_text() == first
    # the two-agent arms of a seed start from the same policies and are evaluated on the same samples
    for s in (0, 1):
        before = df[df.seed == s].set_index('arm')['before']
        assert before['mgrpo'] == before['mgrpo_outcome']
    # --pool reads finished experiments side by side (here the same one twice) and trains nothing
    runs_in_process(mgrpo_experiment, ['--arms', 'mgrpo,single', '--seeds', '0,1', '--pool', f'{out},{out}', '--out', str(tmp_path / 'pooled'), '--table', 'ws'])
    md = (tmp_path / 'pooled' / 'ws.md').read_text()
    assert md.count('\n| ') == 2 * 4 and md.count('| **pooled** | 8 |') == 2 and not (tmp_path / 'pooled' / 'mgrpo').exists()   # sampled and greedy: a header and 3 rows each
    from mgrpo_ref.audit import mgrpo_audit                               # what fails, in this process (the commands' own parsers and functions)
    assert 'run mgrpo_dmax4 seed 0 has no summary' in fails_in_process(mgrpo_experiment, ['--arms', 'mgrpo_dmax4', '--seeds', '0', '--pool', f'{out},{out}', '--out', str(tmp_path / 'pooled')])
    # mgrpo-audit labels the delegations of the two-agent arms' final checkpoints
    runs_in_process(mgrpo_audit, ['--folders', str(out), '--arms', 'mgrpo,mgrpo_outcome', '--seeds', '0,1', '--questions', '3', '--k', '2', '--out', str(tmp_path / 'audit')])
    a = pd.read_csv(tmp_path / 'audit' / 'audit.csv')
    assert sorted(zip(a.arm, a.seed)) == [('mgrpo', 0), ('mgrpo', 1), ('mgrpo_outcome', 0), ('mgrpo_outcome', 1)] and (a.step == 2).all()
    assert a[['not_a_hop', 'hop_accuracy', 'rollouts_right']].apply(lambda c: c.between(0, 1)).all().all()
    assert (tmp_path / 'audit' / 'audit.md').read_text().count('\n| `') == 2         # a row per arm and step
    assert 'no finished run with a checkpoint' in fails_in_process(mgrpo_audit, ['--folders', str(out), '--arms', 'mgrpo_dmax4', '--seeds', '0'])
    assert "arms ['single'] have no sub-agent" in fails_in_process(mgrpo_audit, ['--folders', str(out), '--arms', 'mgrpo,single', '--seeds', '0'])


def test_collect_names_a_missing_run(tmp_path):
    with pytest.raises(FileNotFoundError, match='run mgrpo seed 3 has no summary'):
        collect(tmp_path, ('mgrpo',), (3,))
