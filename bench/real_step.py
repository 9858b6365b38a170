"""Where a real model's M-GRPO step goes, against what this CPU can do: the phases of each step of a finished run
(its metrics.jsonl), and generation and training tokens/s against the FLOP bound from a matmul measured now.

    .venv/bin/python bench/real_step.py [--run runs/real-demo] [--threads 2]

The run is read, not rerun (`make real-demo` makes it). The phases are those of `bench/step.py` (the step's metrics
`time/...`; the store is in memory, so its I/O is inside "rewards + alignment + advantages"). The FLOP bound:

  matmul rate R       float32 (2048 x 2048) @ (2048 x 2048), the best of 5, on --threads threads, in GFLOP/s
  generation FLOPs    2 N_body per token fed (prompts, observations, sampled tokens: an episode's tokens, each once
                      with the turn cache) + 2 H V per sampled token (the LM head; prefill keeps one position)
  update FLOPs        4 N_body per token of a trained sequence (forward 2, backward 2: the frozen base needs the
                      gradient of its activations, not of its weights; the adapters' own terms are < 2% and left
                      out) + 6 H V per loss token (the head's forward, its recomputation under checkpointing, backward)

where N_body is the base's parameters without the embedding (134.5 M - 28.3 M for SmolLM2), H its width and V its
vocabulary. Tokens/s at 100% of R is the bound; the share of it says how much of the step is matmul-bound work.
"""
import argparse, json, platform, statistics, time
from pathlib import Path

import torch

from step import PHASES, phases


def matmul_gflops(threads: int, n: int = 2048, reps: int = 5) -> float:
    "The best of `reps` float32 n x n matmuls on `threads` threads, in GFLOP/s."
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b                                                          # warm-up
    best = min(_timed(lambda: a @ b) for _ in range(reps))
    return 2 * n ** 3 / best / 1e9


def _timed(f) -> float:
    t0 = time.perf_counter(); f(); return time.perf_counter() - t0


def shape(config) -> tuple[int, int, int]:
    "(N_body, H, V) of the base: parameters without the embedding table, width, vocabulary."
    from mgrpo_ref.memory import parameter_count
    H, V = config.hidden_size, config.vocab_size
    return parameter_count(config) - V * H * (1 if config.tie_word_embeddings else 2), H, V


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--run', default='runs/real-demo', help='a finished run folder (metrics.jsonl, config.json)')
    p.add_argument('--threads', type=int, default=2, help='threads of the matmul measurement (the run used torch\'s default: the cores)')
    a = p.parse_args(argv)
    from mgrpo_ref.memory import model_config
    run = Path(a.run)
    lines = [json.loads(l) for l in (run / 'metrics.jsonl').read_text().splitlines()]
    train = [m for m in lines if m['step'] > 0 and 'time/rollout' in m]
    if len(train) < 2: raise SystemExit(f"{run}/metrics.jsonl has fewer than 2 training steps")
    for m, nxt in zip(train, train[1:]): m['wall'] = nxt['time/at'] - m['time/at']   # start to next start: a checkpoint's save included
    steps = train[:-1]                                                                 # the last one's end is the final evaluation's
    n_body, H, V = shape(model_config('smollm2'))
    R = matmul_gflops(a.threads)
    print(f"{run}: {len(steps)} steps; {platform.processor() or platform.machine()}, torch {torch.__version__}; "
          f"matmul {R:.1f} GFLOP/s on {a.threads} threads; N_body {n_body / 1e6:.1f} M, H {H}, V {V:,}")
    rows = [phases(m, m['wall'], 0.0) for m in steps]
    med = {k: statistics.median(r[k] for r in rows) for k in PHASES}
    wall = statistics.median(m['wall'] for m in steps)
    print(f"\n| phase | seconds (median of {len(steps)} steps) | share |\n|---|---:|---:|")
    for k in PHASES: print(f"| {k} | {med[k]:.1f} | {med[k] / wall:.0%} |")
    print(f"| step | {wall:.1f} | 100% |")
    gen_s = sum(m.get('time/main_generate', 0) + m.get('time/sub_generate', 0) for m in steps)
    fed = sum(m.get('main/episode_tokens', 0) + m.get('sub/episode_tokens', 0) for m in steps)
    sampled = sum(m.get('main/gen_tokens', 0) + m.get('sub/gen_tokens', 0) for m in steps)
    upd_s = sum(m.get('time/main_update', 0) + m.get('time/sub_update', 0) for m in steps)
    trained = sum(m.get('main/episode_tokens', 0) * (m.get('main/skipped', 1) is None)
                  + m.get('sub/episode_tokens', 0) * (m.get('sub/skipped', 1) is None) for m in steps)
    loss_tokens = int(sum((m.get("main/tokens") or 0) + (m.get("sub/tokens") or 0) for m in steps))
    gen_flops = 2 * n_body * fed + 2 * H * V * sampled
    upd_flops = 4 * n_body * trained + 6 * H * V * loss_tokens
    print(f"\n| work | tokens | seconds | tokens/s | GFLOP/s | share of the matmul rate |\n|---|---:|---:|---:|---:|---:|")
    print(f"| generation (sampled tokens; {fed:,} fed) | {sampled:,} | {gen_s:.0f} | {sampled / gen_s:.1f} | {gen_flops / gen_s / 1e9:.1f} | {gen_flops / gen_s / 1e9 / R:.0%} |")
    if upd_s > 0:
        print(f"| update (tokens of trained sequences; {loss_tokens:,} loss tokens) | {trained:,} | {upd_s:.0f} | {trained / upd_s:.1f} | "
              f"{upd_flops / upd_s / 1e9:.1f} | {upd_flops / upd_s / 1e9 / R:.0%} |")
    print(json.dumps({'run': str(run), 'steps': len(steps), 'matmul_gflops': R, 'step_seconds': wall, 'phases': med,
                      'gen_tokens_per_s': sampled / gen_s, 'gen_share': gen_flops / gen_s / 1e9 / R,
                      'update_tokens_per_s': trained / upd_s if upd_s else None,
                      'update_share': upd_flops / upd_s / 1e9 / R if upd_s else None}))


if __name__ == '__main__':
    main()
