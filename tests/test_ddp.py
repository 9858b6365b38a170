"Data-parallel training on two CPU processes (gloo): both ranks end with the same parameters, and those of one process."
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

WORKER = Path(__file__).parent / 'ddp_worker.py'


@pytest.fixture(scope='module')
def start(tmp_path_factory, warm_policies):
    from mgrpo_ref.warmstart import save_policies
    return save_policies({r: warm_policies[r] for r in ('main', 'sub')}, tmp_path_factory.mktemp('warm'))


def launch(n: int, out: Path, start: Path) -> dict:
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', str(n), str(WORKER), str(out), str(start)]
    env = {**os.environ, 'OMP_NUM_THREADS': '1'}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads((out / 'ddp.json').read_text())


def test_two_processes_train_like_one(tmp_path, start):
    two, one = launch(2, tmp_path / 'two', start), launch(1, tmp_path / 'one', start)
    assert two['num_processes'] == 2 and one['num_processes'] == 1
    assert two['spread'] == {'main': 0.0, 'sub': 0.0}                              # DDP kept the ranks identical
    assert two['versions'] == one['versions'] and min(two['versions'].values()) >= 1, (two['versions'], one['versions'])
    p2, p1 = torch.load(tmp_path / 'two' / 'params.pt'), torch.load(tmp_path / 'one' / 'params.pt')
    for r in ('main', 'sub'):                     # the same rollouts (seeded per question), the same whole-batch gradient
        assert (p2[r] - p1[r]).abs().max() < 1e-5, (r, float((p2[r] - p1[r]).abs().max()))
    m2 = [json.loads(l) for l in (tmp_path / 'two' / 'metrics.jsonl').read_text().splitlines()]
    m1 = [json.loads(l) for l in (tmp_path / 'one' / 'metrics.jsonl').read_text().splitlines()]
    for a, b in zip(m2[1:], m1[1:]):
        for k in ('main/reward', 'sub/reward', 'main/gen_tokens', 'sub/episodes', 'align/kept', 'main/tokens', 'main/loss'):
            assert abs(a[k] - b[k]) < 1e-5, (k, a[k], b[k])
    assert abs(two['summary']['eval_accuracy_after'] - one['summary']['eval_accuracy_after']) < 1e-9
