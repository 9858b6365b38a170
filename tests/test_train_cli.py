"The mgrpo-train console script, run as a user would: validation before any work, a tiny run, resume."
import json
import shutil
import subprocess
import sys
from pathlib import Path

EXE = shutil.which('mgrpo-train') or str(Path(sys.executable).parent / 'mgrpo-train')
TINY = 'questions_per_step=2,rollout.k=2,rollout.max_turns_main=3,rollout.max_turns_sub=3,eval_questions=2,eval_samples=1,checkpoint_every=1'


def run(*args):
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=600)


def test_bad_input_fails_before_any_work(tmp_path):
    (tmp_path / 'bad.json').write_text(json.dumps({'rollout': {'k': 'eight'}}))
    cases = [(['--config', str(tmp_path / 'bad.json')], "TrainConfig.rollout.k must be int, got 'eight'"),
             (['--set', 'main_optim.lr=fast'], "TrainConfig.main_optim.lr must be a number, got 'fast'"),
             (['--set', 'd_max=0'], 'TrainConfig.d_max must be an integer >= 1, got 0'),
             (['--mode', 'ppo'], "TrainConfig.mode must be one of"),
             (['--set', 'rollout.k=1'], 'TrainConfig.rollout.k (K) must be >= 2'),
             (['--set', 'learning_rate=1'], "unknown TrainConfig fields ['learning_rate']"),
             (['--checkpoint', str(tmp_path / 'nope')], 'is not a folder'),
             (['--resume'], '--resume: no checkpoint in')]
    for args, msg in cases:
        out = tmp_path / 'run'
        r = run(*args, '--out', str(out))
        assert r.returncode != 0 and msg in r.stderr, (args, r.stderr[-500:])
        assert not out.exists(), args                     # failed before the warm start wrote anything


def test_tiny_run_and_resume(tmp_path):
    out = tmp_path / 'run'
    r = run('--steps', '2', '--warmstart-steps', '3', '--set', TINY, '--out', str(out), '--quiet')
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(r.stdout.strip().splitlines()[-1])
    assert {'eval_accuracy_before', 'eval_accuracy_after', 'steps', 'seconds', 'mode', 'seed'} <= set(s)
    assert s['mode'] == 'mgrpo' and s['steps'] == 2
    for f in ('metrics.jsonl', 'summary.json', 'curves.png', 'config.json', 'checkpoint/state.json', 'warmstart/main/config.json'):
        assert (out / f).is_file(), f
    r = run('--steps', '3', '--set', TINY, '--out', str(out), '--resume', '--quiet')
    assert r.returncode == 0, r.stderr[-2000:]
    steps = [json.loads(l)['step'] for l in (out / 'metrics.jsonl').read_text().splitlines()]
    assert steps == [0, 1, 2, 3]


def test_a_used_output_folder_is_refused_before_any_work(tmp_path):
    (tmp_path / 'metrics.jsonl').write_text('{"step": 0}\n')
    r = run('--out', str(tmp_path))
    assert r.returncode != 0 and 'already holds a run (metrics.jsonl)' in r.stderr, r.stderr[-500:]
    assert not (tmp_path / 'warmstart').exists()
