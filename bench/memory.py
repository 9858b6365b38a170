"""The memory model (`mgrpo_ref.memory`, nbs/24_memory.ipynb) against measured peaks on CPU.

    .venv/bin/python bench/memory.py [--out bench/results/memory-cpu.txt]

Each case runs in its own process, so that its peak resident memory (ru_maxrss) is its own; "measured" is that
peak minus the process's resident memory (VmRSS) just before the model was built. The processes run with glibc's mmap
threshold fixed at 128 KiB (MALLOC_MMAP_THRESHOLD_), so that a freed tensor goes back to the system and the peak
is that of the tensors. With glibc's default (a threshold that rises to 32 MiB as large blocks are freed), the
LM head's chunks come from the heap, fragment it, and the same update peaks several times higher on CPU: the
last column measures that once. The cases drive the real code:
`AgentTrainer.update` twice (so that gradients and AdamW states exist, as they do from a run's second step on)
on synthetic, right-padded trajectories of a Qwen3-shaped model, with and without gradient checkpointing and under bf16
autocast, and on two processes (torchrun, gloo) with `accel.shard` = 'ddp' and 'fsdp', where the busiest process's
peak counts; and `sample` of many rows to a long context. The prediction for an update is `update_peak`; for a
process that only samples, the weights, the KV cache and the draw. The last line is one JSON object.
"""
import argparse, json, os, resource, subprocess, sys, time

import torch

CASES = {   # name: (hidden, layers, intermediate, vocab, context, micro_batch, checkpointing, bf16, kind, rows)
    'update': (256, 4, 768, 32000, 512, 8, False, False, 'update', 0),
    'update-checkpointing': (256, 4, 768, 32000, 512, 8, True, False, 'update', 0),
    'update-bf16': (256, 4, 768, 32000, 256, 4, False, True, 'update', 0),
    'update-long-context': (128, 2, 384, 8000, 2048, 2, False, False, 'update', 0),
    'sampling': (256, 4, 768, 32000, 768, 0, False, False, 'sample', 64),
    'update-ddp-2proc': (512, 4, 1536, 32000, 128, 2, False, False, 'update', 0),    # weights, not activations, dominate:
    'update-fsdp-2proc': (512, 4, 1536, 32000, 128, 2, False, False, 'update', 0),   # what sharding changes
}
PROCESSES = {'update-ddp-2proc': ('ddp', 2), 'update-fsdp-2proc': ('fsdp', 2)}   # cases run under torchrun: accel.shard, processes
FIXED = {'MALLOC_MMAP_THRESHOLD_': '131072'}   # glibc: every allocation over 128 KiB is its own mapping, returned to the system when freed


def rss() -> float:
    "Peak resident memory of this process so far, bytes (Linux reports KB)."
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_now() -> float:
    "Resident memory of this process now, bytes (VmRSS): the baseline, which the earlier peak (world, tokenizer, census) must not inflate."
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS:')) * 1024


def one(name: str) -> dict:
    from mgrpo_ref.config import AccelConfig, OptimConfig, TrainConfig
    from mgrpo_ref.learner import AgentTrainer, make_accelerator
    from mgrpo_ref.loss import LossConfig
    from mgrpo_ref.memory import activation_model, agent_memory
    from mgrpo_ref.models import TinyModelConfig, tiny_model
    from mgrpo_ref.policy import Policy, SamplingConfig, sample, tiny_policy
    from mgrpo_ref.rollout import RolloutConfig, Trajectory
    from mgrpo_ref.world import build_world
    h, layers, inter, V, L, mb, ck, bf16, kind, rows = CASES[name]
    shard, procs = PROCESSES.get(name, ('ddp', 1))
    acc = make_accelerator(AccelConfig(cpu=True)) if procs > 1 else None   # the process group before the baseline
    tok = tiny_policy(build_world(seed=0)).tokenizer
    shape = TinyModelConfig(hidden_size=h, num_layers=layers, num_heads=4, num_kv_heads=2, intermediate_size=inter, max_positions=L)
    cfg = TrainConfig(questions_per_step=1, rollout=RolloutConfig(k=max(rows, 2), max_context=L), d_max=1,
                      loss=LossConfig(micro_batch=max(mb, 1)), accel=AccelConfig(cpu=True, gradient_checkpointing=ck, shard=shard,
                                                                                mixed_precision='bf16' if bf16 else 'no'))
    config = tiny_model(V, shape, tokenizer=tok).config
    predicted = agent_memory(config, cfg, 'main', procs, acts=activation_model(config, torch.float32, bf16))
    g = torch.Generator().manual_seed(0)
    before = rss_now(); t0 = time.perf_counter()
    policy = Policy(tiny_model(V, shape, tokenizer=tok), tok)
    if kind == 'update':
        trainer = AgentTrainer(policy, 'main', OptimConfig(), cfg.loss, accelerator=acc or make_accelerator(cfg.accel),
                               gradient_checkpointing=ck, shard=shard)
        n = 2 * mb                                                          # two micro-batches of full-length rows
        lens = [L - i for i in range(n)]                                    # rows of different lengths: every micro-batch is padded, as real ones are
        trajs = [Trajectory((0, 'q', i), 'main', '', torch.randint(4, V, (n_,), generator=g).tolist(), [0] * (L // 4) + [1] * (n_ - L // 4),
                            [0.0] * (L // 4) + [-1.0] * (n_ - L // 4)) for i, n_ in enumerate(lens)]
        adv = torch.tensor([1.0, -1.0] * mb)
        for _ in range(2): trainer.update(trajs, adv)
        want = predicted['update_peak']
    else:
        prompts = [torch.randint(4, V, (64,), generator=g).tolist() for _ in range(rows)]
        out = sample(policy.model, prompts, SamplingConfig(max_new_tokens=L - 64), list(range(rows)), policy.pad_id)
        assert max(len(s.token_ids) for s in out) == L - 64
        want = predicted['weights'] + predicted['kv_cache'] + predicted['draw']
    return dict(case=name, predicted_mb=round(want / 2**20, 1), measured_mb=round((rss() - before) / 2**20, 1),
                seconds=round(time.perf_counter() - t0, 1), rank=acc.process_index if acc else 0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--case', help=argparse.SUPPRESS)             # one case, in this process
    p.add_argument('--cases', default=','.join(CASES), help='comma-separated names of CASES')
    p.add_argument('--out', help='also write the table here')
    p.add_argument('--quick', action='store_true', help='skip the glibc-default measurement')
    a = p.parse_args(argv)
    if a.case: print(json.dumps(one(a.case))); return
    rows = []
    for name in a.cases.split(','):
        launch = ([sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', str(PROCESSES[name][1])]
                  if name in PROCESSES else [sys.executable])
        measure = lambda extra: subprocess.run([*launch, __file__, '--case', name], capture_output=True, text=True,
                                               env={**os.environ, 'OMP_NUM_THREADS': '1', **extra})
        r = measure(FIXED)
        if r.returncode: raise SystemExit(f"case {name!r} failed:\n{r.stderr[-2000:]}")
        ranks = [json.loads(l) for l in r.stdout.splitlines() if l.startswith('{')]      # one line per process
        rows.append(max(ranks, key=lambda x: x['measured_mb']))                         # the busiest process
        rows[-1].pop('rank')
        rows[-1]['ratio'] = round(rows[-1]['measured_mb'] / rows[-1]['predicted_mb'], 3)
        if name == 'update' and not a.quick: rows[-1]['glibc_default_mb'] = json.loads(measure({}).stdout.strip().splitlines()[-1])['measured_mb']
    lines = ['| case | predicted MiB | measured MiB | measured / predicted | seconds | measured, glibc default allocator |',
             '|---|---:|---:|---:|---:|---:|']
    lines += [f"| {r['case']} | {r['predicted_mb']:,.1f} | {r['measured_mb']:,.1f} | {r['ratio']:.2f} | {r['seconds']} | "
              f"{r.get('glibc_default_mb', '')} |" for r in rows]
    text = '\n'.join(lines)
    print(text)
    if a.out: open(a.out, 'w').write(f"$ python bench/memory.py\n{text}\n{json.dumps(rows)}\n")
    print(json.dumps(rows))


if __name__ == '__main__':
    main()
