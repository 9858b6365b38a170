"""Peak memory and seconds of the real warm start's SFT step against `WarmStartConfig.micro_batch`.

    .venv/bin/python bench/sft_memory.py [--micro 8,4,2] [--steps 2] [--threads 1] [--out bench/results/sft-memory-cpu.txt]

The single agent's demonstrations are SmolLM2's longest (about 490 tokens each), so its warm start is the one that
needs the most memory: `make real-warmstart` held 22.4 GB for it at batch 8 (docs/timings.md). Each micro-batch size
runs in its own process (its peak resident memory, ru_maxrss, is its own): SmolLM2 with the rank-8 adapters of
configs/warmstart/smollm2.json, `sft` for STEPS steps of batch_size 8 on the single agent's demonstrations, the same
batches for every size. "peak" is the whole process (base model, demonstrations, activations); the loss of the
last step shows that the sizes train the same thing (equal up to float rounding). The last line is one JSON object.
"""
import argparse, json, os, platform, resource, subprocess, sys, time


def one(micro: int, steps: int, threads: int) -> dict:
    "Run in a child process: the SFT steps at this micro-batch size; its peak RSS and seconds per step."
    import torch
    torch.set_num_threads(threads)
    from mgrpo_ref.config import from_plain
    from mgrpo_ref.warmstart import WarmStartConfig, demonstrations, sft, starting_policy
    from mgrpo_ref.world import WorldConfig, build_world
    fields = json.load(open('configs/warmstart/smollm2.json'))
    cfg = from_plain(WarmStartConfig, {**fields, 'questions': 64, 'micro_batch': micro}, 'WarmStartConfig')
    world = build_world(WorldConfig(seed=0))
    policy = starting_policy(world, cfg, seed=2)
    data = demonstrations(world, cfg, policy.chat)['single']
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    t0 = time.perf_counter()
    losses = sft(policy, data, steps, cfg, desc=f'micro {micro}')
    return {'micro_batch': micro, 'batch_size': cfg.batch_size, 'steps': steps, 'threads': threads,
            'tokens_per_sequence': round(sum(len(x) for x, _ in data) / len(data)),
            'peak_gb': round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2), 'peak_before_sft_gb': round(before, 2),
            'seconds_per_step': round((time.perf_counter() - t0) / steps, 1), 'last_loss': round(losses[-1], 6)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--micro', default='8,4,2', help='micro-batch sizes, one process each')
    ap.add_argument('--steps', type=int, default=2)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--out', default=None, help='also write the report here')
    ap.add_argument('--child', type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        print(json.dumps(one(a.child, a.steps, a.threads))); return
    env = {**os.environ, 'OMP_NUM_THREADS': str(a.threads), 'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_OFFLINE': '1'}
    rows = []
    for m in (int(x) for x in a.micro.split(',')):
        r = subprocess.run([sys.executable, __file__, '--child', str(m), '--steps', str(a.steps), '--threads', str(a.threads)],
                           env=env, capture_output=True, text=True)
        if r.returncode: raise SystemExit(f"micro_batch {m} failed:\n{r.stderr[-2000:]}")
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    lines = [f"{platform.machine()}, {a.threads} torch thread(s); SFT of the single agent's SmolLM2 adapters, batch 8, {a.steps} steps",
             '', '| micro_batch | peak RSS (GB) | of which before SFT | seconds per step | loss of the last step |', '|---:|---:|---:|---:|---:|']
    lines += [f"| {r['micro_batch']} | {r['peak_gb']:.2f} | {r['peak_before_sft_gb']:.2f} | {r['seconds_per_step']:.1f} | {r['last_loss']:.6f} |" for r in rows]
    report = '\n'.join(lines) + '\n\n' + json.dumps(rows)
    print(report)
    if a.out: open(a.out, 'w').write(report + '\n')


if __name__ == '__main__':
    main()
