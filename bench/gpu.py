"""The GPU config's code path on randomly initialised models of a real architecture: generation tokens/s,
training tokens/s and model FLOPs utilisation (MFU) of co-located M-GRPO steps.

    .venv/bin/python bench/gpu.py [--config configs/qwen3-gpu.json] [--size qwen3-0.6b] [--steps 3] [--peak-tflops 989]
                                   [--set "questions_per_step=8"] [--out runs/bench_gpu]
    .venv/bin/python bench/gpu.py --size tiny --set accel.cpu=true,accel.main_device=null,accel.sub_device=null   # CPU smoke

It reads the GPU config (`configs/qwen3-gpu.json`: bf16 autocast, gradient checkpointing, the main agent on
cuda:0 and the sub-agent on cuda:1; with one GPU pass `--set accel.sub_device=cuda:0`), keeps its rollout,
loss and optimizer settings, and swaps what cannot be had offline: both agents are Qwen3 models of `--size`
built from config with fresh weights (no download), over the built-in world's word-level tokenizer (so the
vocabulary, and the embedding, are far smaller than Qwen3's 151,936 tokens), and the questions and tools are
the built-in world's. Untrained models write malformed turns, so episodes end early: the figures measure the
engine (sampling with the KV cache, the micro-batched update), not an agent.

  generation tok/s   tokens sampled by both agents / seconds of the rollout phase
  training tok/s     tokens of every trajectory in both agents' update batches (prompt, observations and
                     samples: all pass forward and backward) / seconds of the two updates
  MFU                6 x parameters x training tok/s / the device's peak dense bf16 FLOP/s (`--peak-tflops`,
                     989 for an H100 SXM), the usual estimate for the forward and backward passes
                     (attention FLOPs and the recomputation of gradient checkpointing left out)

The first step is a warm-up and left out; figures are medians over the other steps. The last line is one JSON
object.
"""
import argparse, json, platform, random, statistics, time
from dataclasses import asdict
from pathlib import Path

import torch

from mgrpo_ref.models import build_tokenizer, world_texts
from mgrpo_ref.policy import Policy
from mgrpo_ref.rollout import InProcessSubAgent, rollout_mgrpo, run_tool_episodes
from mgrpo_ref.tools import Toolbox
from mgrpo_ref.config import TrainConfig, config_fields
from mgrpo_ref.learner import AgentTrainer, make_accelerator
from mgrpo_ref.world import build_world

SIZES = {  # Qwen3 architecture sizes from the published configs (tied embeddings); 'tiny' for a CPU smoke run
    'qwen3-0.6b': dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128),
    'qwen3-1.7b': dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128),
    'tiny': dict(hidden_size=96, intermediate_size=256, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=24),
}


def qwen3(tok, size: str, seed: int):
    "A Qwen3ForCausalLM of `size` with fresh weights over `tok`'s vocabulary (float32; the config's dtype and autocast apply in training)."
    from transformers import Qwen3Config, Qwen3ForCausalLM
    torch.manual_seed(seed)
    config = Qwen3Config(vocab_size=len(tok), max_position_embeddings=40960, rope_theta=1e6, tie_word_embeddings=True,
                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None, **SIZES[size])
    return Qwen3ForCausalLM(config).float().eval()


def synced() -> float:
    if torch.cuda.is_available(): torch.cuda.synchronize()
    return time.perf_counter()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--config', default='configs/qwen3-gpu.json')
    ap.add_argument('--size', default='qwen3-0.6b', choices=sorted(SIZES))
    ap.add_argument('--steps', type=int, default=3)
    ap.add_argument('--peak-tflops', type=float, default=989.0, help='peak dense bf16 TFLOP/s of one device')
    ap.add_argument('--set', default='questions_per_step=8,rollout.main_sampling.max_new_tokens=256,rollout.sub_sampling.max_new_tokens=256,rollout.max_context=4096')
    ap.add_argument('--out', default='runs/bench_gpu')
    a = ap.parse_args()

    cfg = TrainConfig.from_dict({**config_fields(a.config, a.set), 'data': {'dataset': 'world'}, 'models': {}})
    world = build_world(seed=cfg.data.world_seed)
    tok, toolbox = build_tokenizer(world_texts(world)), Toolbox.for_world(world)
    acc = make_accelerator(cfg.accel)
    policies = {r: Policy(qwen3(tok, a.size, seed=i), tok) for i, r in enumerate(('main', 'sub'))}
    device = {'main': cfg.accel.main_device, 'sub': cfg.accel.sub_device}
    temp = {'main': cfg.rollout.main_sampling.temperature, 'sub': cfg.rollout.sub_sampling.temperature}
    trainers = {r: AgentTrainer(p, r, getattr(cfg, f'{r}_optim'), cfg.loss, temp[r], cfg.num_iterations, acc, device[r],
                                cfg.accel.gradient_checkpointing) for r, p in policies.items()}
    n_params = {r: sum(p.numel() for p in pol.model.parameters()) for r, pol in policies.items()}
    rng, rows = random.Random(cfg.seed), []
    for s in range(a.steps):
        qs = rng.sample(world.questions['train'], cfg.questions_per_step)
        client = InProcessSubAgent(policies['sub'], toolbox, cfg.rollout, cfg.seed)
        t0 = synced()
        mains, _ = rollout_mgrpo(qs, policies['main'], client, cfg.rollout, s, cfg.seed)
        jobs = [((s, q.qid, k, 0), q.chain[0].question) for q in qs for k in range(cfg.rollout.k)]   # one delegation per rollout
        subs = run_tool_episodes(policies['sub'], 'sub', jobs, toolbox, cfg.rollout, cfg.seed)
        t1 = synced()
        batches = {'main': mains, 'sub': subs}
        for r, trajs in batches.items():    # random advantages: an update costs the same whatever their values
            trainers[r].update(trajs, torch.randn(len(trajs), generator=torch.Generator().manual_seed(s)))
        t2 = synced()
        row = {'step': s, 'rollout_s': t1 - t0, 'update_s': t2 - t1,
               'gen_tokens': sum(t.n_generated for t in mains + subs),
               'train_tokens': {r: sum(len(t.input_ids) for t in trajs) for r, trajs in batches.items()}}
        rows.append(row); print(json.dumps(row))
    rows = rows[1:] or rows                                                     # the first step warms up
    gen = statistics.median(m['gen_tokens'] / m['rollout_s'] for m in rows)
    train = statistics.median(sum(m['train_tokens'].values()) / m['update_s'] for m in rows)
    flops = statistics.median(sum(6 * n_params[r] * n for r, n in m['train_tokens'].items()) / m['update_s'] for m in rows)
    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() and not cfg.accel.cpu else f'cpu ({platform.machine()})'
    out = {'device': name, 'size': a.size, 'params': n_params, 'mixed_precision': cfg.accel.mixed_precision,
           'gradient_checkpointing': cfg.accel.gradient_checkpointing, 'steps_measured': len(rows),
           's_per_step': statistics.median(m['rollout_s'] + m['update_s'] for m in rows), 'generation_tok_s': gen,
           'training_tok_s': train, 'mfu': flops / (a.peak_tflops * 1e12), 'peak_tflops': a.peak_tflops,
           'torch': torch.__version__, 'config': a.config, 'set': a.set}
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / 'result.json').write_text(json.dumps({**out, 'train_config': asdict(cfg), 'steps': rows}, indent=1) + '\n')
    print(json.dumps(out))


if __name__ == '__main__':
    main()
