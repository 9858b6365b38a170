"Data-parallel training on two CPU processes (gloo), DDP and FSDP: both ranks end with the same parameters, and those of one process."
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import TRAINED_ALIKE, apart

WORKER = Path(__file__).parent / 'ddp_worker.py'


@pytest.fixture(scope='module')
def start(tmp_path_factory, warm_policies):
    from mgrpo_ref.warmstart import save_policies
    return save_policies({r: warm_policies[r] for r in ('main', 'sub')}, tmp_path_factory.mktemp('warm'))


def start_params(start: Path) -> dict:
    "The starting parameters of each agent, flattened in the order ddp_worker.py saves them."
    from mgrpo_ref.policy import Policy
    return {r: torch.cat([p.detach().flatten() for p in Policy.load(start / r).model.parameters()]) for r in ('main', 'sub')}


def launch(n: int, out: Path, start: Path, overrides: dict | None = None, resume: bool = False) -> dict:
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', str(n), str(WORKER), str(out), str(start),
           json.dumps(overrides or {}), *(['resume'] if resume else [])]
    env = {**os.environ, 'OMP_NUM_THREADS': '1'}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads((out / 'ddp.json').read_text())


@pytest.fixture(scope='module')
def one_process(tmp_path_factory, start) -> Path:
    "A one-process run of the worker's config: what the multi-process runs must reproduce."
    out = tmp_path_factory.mktemp('one')
    launch(1, out, start)
    return out


def test_two_processes_train_like_one(tmp_path, start, one_process):
    two, one = launch(2, tmp_path / 'two', start), json.loads((one_process / 'ddp.json').read_text())
    assert two['num_processes'] == 2 and one['num_processes'] == 1
    assert two['spread'] == {'main': 0.0, 'sub': 0.0}                              # DDP kept the ranks identical
    assert two['versions'] == one['versions'] and min(two['versions'].values()) >= 1, (two['versions'], one['versions'])
    p2, p1, p0 = torch.load(tmp_path / 'two' / 'params.pt'), torch.load(one_process / 'params.pt'), start_params(start)
    for r in ('main', 'sub'):                     # the same rollouts (seeded per question), the same whole-batch gradient
        assert apart(p2[r], p1[r], p0[r]) < TRAINED_ALIKE, (r, apart(p2[r], p1[r], p0[r]), float((p2[r] - p1[r]).abs().max()))
    m2 = [json.loads(l) for l in (tmp_path / 'two' / 'metrics.jsonl').read_text().splitlines()]
    m1 = [json.loads(l) for l in (one_process / 'metrics.jsonl').read_text().splitlines()]
    for a, b in zip(m2[1:], m1[1:]):
        for k in ('main/reward', 'sub/reward', 'main/gen_tokens', 'sub/episodes', 'align/kept', 'main/tokens', 'main/loss'):
            assert abs(a[k] - b[k]) < 1e-5, (k, a[k], b[k])
    assert abs(two['summary']['eval_accuracy_after'] - one['summary']['eval_accuracy_after']) < 1e-9


FSDP = {'accel': {'shard': 'fsdp'}}


@pytest.fixture(scope='module')
def fsdp_run(tmp_path_factory, start) -> Path:
    out = tmp_path_factory.mktemp('fsdp')
    launch(2, out, start, FSDP)
    return out


def test_fsdp_on_two_processes_trains_like_one(fsdp_run, one_process, start):
    "accel.shard = 'fsdp': each process steps its shards only, and the agents end where one process's do, saved in the HF format."
    from transformers import AutoModelForCausalLM
    two, single = json.loads((fsdp_run / 'ddp.json').read_text()), json.loads((one_process / 'ddp.json').read_text())
    assert two['num_processes'] == 2 and two['sharded'] == {'main': True, 'sub': True} and single['sharded'] == {'main': False, 'sub': False}
    for r in ('main', 'sub'):                     # about half the elements each (shards are padded to equal sizes)
        assert 0.45 * two['numel'][r] < two['stepped_numel'][r] < 0.55 * two['numel'][r], (r, two['stepped_numel'][r], two['numel'][r])
        assert single['stepped_numel'][r] == single['numel'][r]
    assert two['spread'] == {'main': 0.0, 'sub': 0.0}                              # the whole copies agree on every process
    assert two['versions'] == single['versions'] and min(two['versions'].values()) >= 1
    p2, p1, p0 = torch.load(fsdp_run / 'params.pt'), torch.load(one_process / 'params.pt'), start_params(start)
    for r in ('main', 'sub'):
        assert apart(p2[r], p1[r], p0[r]) < TRAINED_ALIKE, (r, apart(p2[r], p1[r], p0[r]), float((p2[r] - p1[r]).abs().max()))
        saved = AutoModelForCausalLM.from_pretrained(fsdp_run / 'checkpoint' / r)      # a plain Hugging Face folder
        assert torch.equal(torch.cat([p.detach().flatten() for p in saved.parameters()]), p2[r])


def test_fsdp_run_resumes_exactly(tmp_path, start, fsdp_run):
    "Stopped after step 1 and resumed (weights and AdamW state from the checkpoint), a sharded run ends bitwise where the uninterrupted one does."
    from mgrpo_ref.warmstart import load_policies, save_policies
    launch(2, tmp_path / 'cut', start, {**FSDP, 'steps': 1})
    other = load_policies(start, ('main', 'sub'))                    # a start that differs: the resumed run must not use it
    for pol in other.values():
        with torch.no_grad():
            for p in pol.model.parameters(): p.add_(0.01)
    resumed = launch(2, tmp_path / 'cut', save_policies(other, tmp_path / 'other'), FSDP, resume=True)
    assert resumed['versions'] == {'main': 2, 'sub': 2}
    p_full, p_cut = torch.load(fsdp_run / 'params.pt'), torch.load(tmp_path / 'cut' / 'params.pt')
    for r in ('main', 'sub'): assert torch.equal(p_full[r], p_cut[r]), (r, float((p_full[r] - p_cut[r]).abs().max()))
