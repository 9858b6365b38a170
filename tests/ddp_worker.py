"""One data-parallel training run, launched by tests/test_ddp.py as
`torchrun --nproc_per_node N tests/ddp_worker.py OUT START [OVERRIDES [resume]]`.

Every process trains its share of each step's questions; afterwards rank 0 checks that every process holds the same
parameters and writes what it found to OUT/ddp.json, with its parameters in OUT/params.pt for a comparison with one process.
OVERRIDES is a JSON object of TrainConfig fields over the test's config (e.g. {"accel": {"shard": "fsdp"}}); `resume`
continues the run from OUT/checkpoint."""
import json, sys
from pathlib import Path

import torch

from mgrpo_ref.config import TrainConfig, deep_merge
from mgrpo_ref.learner import make_accelerator
from mgrpo_ref.trainer import Trainer
from mgrpo_ref.warmstart import load_policies
from mgrpo_ref.world import build_world


def stepped_numel(opt) -> int:
    "Elements this process's optimizer steps: the whole agent under DDP, its shards under FSDP."
    return sum((p.to_local() if hasattr(p, 'to_local') else p).numel() for g in opt.param_groups for p in g['params'])


out, start = Path(sys.argv[1]), sys.argv[2]
overrides = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
resume = len(sys.argv) > 4 and sys.argv[4] == 'resume'
torch.set_num_threads(1)
# the passes of several processes on one as well (AgentTrainer turns skip_zero_advantage and share_prefix off for them:
# every process must run as many passes as the others), so that one process and two sum the same terms
base = {'steps': 2, 'questions_per_step': 4, 'eval_every': 0, 'eval_questions': 4, 'eval_samples': 2,
        'rollout': {'k': 4, 'max_turns_main': 3, 'max_turns_sub': 3}, 'accel': {'cpu': True},
        'loss': {'skip_zero_advantage': False, 'share_prefix': False}}
cfg = TrainConfig.from_dict(deep_merge(base, overrides))
acc = make_accelerator(cfg.accel)
trainer = Trainer(build_world(seed=0), cfg, load_policies(start, cfg.roles), out=out, accelerator=acc, resume=resume)
summary = trainer.fit(progress=False)
params = {r: torch.cat([p.detach().flatten() for p in pol.model.parameters()]) for r, pol in trainer.policies.items()}
gathered = {r: acc.gather(v[None]) for r, v in params.items()}                      # (num_processes, n_params)
if acc.is_main_process:
    spread = {r: float((g - g[0]).abs().max()) for r, g in gathered.items()}         # largest difference from rank 0
    (out / 'ddp.json').write_text(json.dumps({'num_processes': acc.num_processes, 'spread': spread, 'summary': summary,
                                              'versions': {r: t.version for r, t in trainer.trainers.items()},
                                              'sharded': {r: t.sharded for r, t in trainer.trainers.items()},
                                              'stepped_numel': {r: stepped_numel(t.opt) for r, t in trainer.trainers.items()},
                                              'numel': {r: int(v.numel()) for r, v in params.items()}}))
    torch.save(params, out / 'params.pt')
