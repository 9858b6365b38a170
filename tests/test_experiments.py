"The mgrpo-experiment console script, run as a user would: validation before any work, and a tiny comparison."
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from mgrpo_ref.experiments import collect
from mgrpo_ref.warmstart import save_policies

EXE = shutil.which('mgrpo-experiment') or str(Path(sys.executable).parent / 'mgrpo-experiment')
TINY = 'questions_per_step=2,rollout.k=2,rollout.max_turns_main=3,rollout.max_turns_sub=3,eval_questions=4,eval_samples=1,checkpoint_every=0'


def run(*args):
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=900)


def test_bad_input_fails_before_any_work(tmp_path):
    cases = [(['--arms', 'mgrpo,ppo'], 'ExperimentConfig.arms must be a non-empty subset of'),
             (['--seeds', '0,0'], 'ExperimentConfig.seeds must be distinct'),
             (['--seeds', '0,x'], "--seeds must be comma-separated integers, got '0,x'"),
             (['--set', 'mode=single'], 'TrainConfig.mode is set per run by the experiment'),
             (['--set', 'd_max=0'], 'TrainConfig.d_max must be an integer >= 1, got 0'),
             (['--workers', '0'], 'ExperimentConfig.workers must be >= 1, got 0'),
             (['--checkpoint', str(tmp_path / 'nope')], 'is not a folder')]
    for args, msg in cases:
        out = tmp_path / 'exp'
        r = run(*args, '--out', str(out), '--quiet')
        assert r.returncode != 0 and msg in r.stderr, (args, r.stderr[-500:])
        assert not out.exists(), args                     # failed before the warm start wrote anything


def test_tiny_comparison_from_one_checkpoint(warm_policies, tmp_path):
    ck = save_policies(warm_policies, tmp_path / 'warmstart')
    out = tmp_path / 'exp'
    r = run('--arms', 'mgrpo,frozen_sub,single', '--seeds', '0,1', '--steps', '2', '--set', TINY,
            '--checkpoint', str(ck), '--workers', '2', '--out', str(out), '--quiet')
    assert r.returncode == 0, r.stderr[-3000:]
    df = pd.read_csv(out / 'results.csv')
    assert sorted(zip(df.arm, df.seed)) == sorted((a, s) for a in ('mgrpo', 'frozen_sub', 'single') for s in (0, 1))
    for f in ('results.md', 'comparison.png', 'experiment.json', 'mgrpo/seed1/metrics.jsonl', 'single/seed0/summary.json'):
        assert (out / f).is_file(), f
    assert (out / 'results.md').read_text().count('\n| `') == 3       # one row per arm
    first = (out / 'results.csv').read_text()
    r = run('--arms', 'mgrpo,frozen_sub,single', '--seeds', '0,1', '--steps', '2', '--set', TINY,    # again: finished runs are reused
            '--checkpoint', str(ck), '--workers', '2', '--out', str(out), '--quiet')
    assert r.returncode == 0 and (out / 'results.csv').read_text() == first, r.stderr[-3000:]
    # the two-agent arms of a seed start from the same policies and are evaluated on the same samples
    for s in (0, 1):
        before = df[df.seed == s].set_index('arm')['before']
        assert before['mgrpo'] == before['frozen_sub']


def test_collect_names_a_missing_run(tmp_path):
    with pytest.raises(FileNotFoundError, match='run mgrpo seed 3 has no summary'):
        collect(tmp_path, ('mgrpo',), (3,))
