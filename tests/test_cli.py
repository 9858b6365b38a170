"The mgrpo-world console script, run as a user would."
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXE = shutil.which('mgrpo-world') or str(Path(sys.executable).parent / 'mgrpo-world')


def run(*args, check=True):
    r = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=300)
    if check: assert r.returncode == 0, r.stderr
    return r


def test_json_summary():
    s = json.loads(run('--json').stdout.strip().splitlines()[-1])
    assert s['n_pages'] == 456 and s['n_questions'] == {'train': 480, 'test': 120, 'valid': 120}
    assert s['hop_histogram'] == {'train': {'1': 160, '2': 160, '3': 160}, 'test': {'1': 40, '2': 40, '3': 40}, 'valid': {'1': 40, '2': 40, '3': 40}}
    assert s['oracle_accuracy'] == {'train': 1.0, 'test': 1.0, 'valid': 1.0}
    assert s['single_oracle_accuracy'] == {'train': 1.0, 'test': 1.0, 'valid': 1.0}
    assert set(s['search_recall_at_5']) == {'1', '2', '3'}
    for h in ('1', '2', '3'):
        assert s['search_recall_at_5'][h] >= 0.9
        assert s['search_recall_at_1'][h] <= s['search_recall_at_5'][h] - 0.1


def test_out_writes_world_plots_and_summary(tmp_path):
    out = tmp_path / 'run'
    r = run('--seed', '3', '--people', '40', '--companies', '30', '--train-questions', '150', '--test-questions', '45', '--valid-questions', '30',
            '--out', str(out))
    assert 'clean oracle accuracy' in r.stdout
    for f in ('summary.json', 'noise_sweep.csv', 'world.png', 'recall.png', 'noise_sweep.png', 'world/pages.jsonl',
              'world/questions-train.jsonl', 'world/questions-valid.jsonl', 'world/questions-test.jsonl', 'world/config.json'):
        assert (out / f).is_file() and (out / f).stat().st_size > 0, f
    s = json.loads((out / 'summary.json').read_text())
    assert s['seed'] == 3 and s['n_questions'] == {'train': 150, 'test': 45, 'valid': 30}
    assert (out / 'world.png').read_bytes()[:4] == b'\x89PNG'


@pytest.mark.parametrize('args,msg', [(['--people', '-3'], 'WorldConfig.people must be an integer >= 1, got -3'),
                                      (['--family-size', '7'], 'WorldConfig.family_size must be at most 5, got 7'),
                                      (['--test-questions', '9999'], 'test questions of')])
def test_bad_sizes_fail_clearly(args, msg):
    r = run(*args, check=False)
    assert r.returncode != 0 and msg in r.stderr and 'Traceback' not in r.stderr


def test_help_documents_flags():
    h = run('--help').stdout
    for flag in ('--seed', '--family-size', '--out', '--json'):
        assert flag in h
