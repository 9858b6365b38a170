"The same command at the same commit on the same machine gives bitwise the same run: two arms trained twice in the experiment's worker processes."
import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from mgrpo_ref.config import TrainConfig
from mgrpo_ref.experiments import ExperimentConfig, run_experiment
from mgrpo_ref.warmstart import shipped_warmstart

TIMES = ('time/', 'seconds')          # wall-clock fields: the only ones allowed to differ


def numbers(run: Path) -> list[dict]:
    "Every metric line of a run, without its wall-clock fields."
    return [{k: v for k, v in json.loads(l).items() if not k.startswith(TIMES)} for l in (run / 'metrics.jsonl').read_text().splitlines()]


def test_a_run_repeated_at_one_commit_is_bitwise_equal(tmp_path):
    train = TrainConfig.from_dict({'steps': 3, 'questions_per_step': 2, 'rollout': {'k': 2, 'max_context': 384}, 'eval_every': 0,
                                   'eval_questions': 4, 'eval_samples': 2, 'checkpoint_every': 0})
    cfg = ExperimentConfig(arms=('mgrpo', 'shared'), seeds=(0,), train=train, workers=2)     # two spawned workers, one thread each
    for rep in ('a', 'b'): run_experiment(cfg, tmp_path / rep, shipped_warmstart(), progress=False)
    for arm, agents in (('mgrpo', ('main', 'sub')), ('shared', ('shared',))):
        a, b = tmp_path / 'a' / arm / 'seed0', tmp_path / 'b' / arm / 'seed0'
        assert numbers(a) == numbers(b), arm                                         # every metric of every step, exactly
        assert numbers(a)[-1].get('main/reward') is not None
        for agent in agents:
            wa, wb = (load_file(r / 'checkpoint' / agent / 'model.safetensors') for r in (a, b))
            assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa), (arm, agent)
