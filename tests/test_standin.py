"""A budget that no episode meets changes nothing: the run at rollout.max_context 384 whose episodes all stayed under it is,
bitwise on one machine, the run at 1,024. This is the rule by which `mgrpo-contrasts` (21b_contrasts) lets such a 384-token
run stand in for the 1,024-token one instead of training it again."""
import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from mgrpo_ref.config import TrainConfig
from mgrpo_ref.contrast_tables import budget_reached
from mgrpo_ref.experiments import ExperimentConfig, run_experiment
from mgrpo_ref.warmstart import shipped_warmstart

TIMES = ('time/', 'seconds')          # wall-clock fields: the only ones allowed to differ


def lines(run: Path, name: str = 'metrics.jsonl') -> list[dict]:
    return [json.loads(l) for l in (run / name).read_text().splitlines()]


def test_a_budget_never_met_gives_the_larger_budgets_run_bitwise(tmp_path):
    torch.set_num_threads(1)
    runs = {}
    for budget in (384, 1024):
        train = TrainConfig.from_dict({'steps': 3, 'questions_per_step': 2, 'rollout': {'k': 2, 'max_context': budget}, 'eval_every': 0,
                                       'eval_questions': 8, 'eval_samples': 2, 'checkpoint_every': 0})
        run_experiment(ExperimentConfig(arms=('mgrpo',), seeds=(0,), train=train, workers=1), tmp_path / str(budget), shipped_warmstart(), progress=False)
        runs[budget] = tmp_path / str(budget) / 'mgrpo' / 'seed0'
    small, large = runs[384], runs[1024]
    assert budget_reached(lines(small)) == 0.0                 # the smaller budget ended no episode, in training or evaluation (its cut metrics were logged)
    strip = lambda ls: [{k: v for k, v in m.items() if not k.startswith(TIMES)} for m in ls]
    assert strip(lines(small)) == strip(lines(large))           # every metric of every step, exactly
    assert lines(small, 'eval_questions.jsonl') == lines(large, 'eval_questions.jsonl')
    for agent in ('main', 'sub'):
        a, b = (load_file(r / 'checkpoint' / agent / 'model.safetensors') for r in (small, large))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), agent
