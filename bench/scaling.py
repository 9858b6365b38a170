"""Seconds per M-GRPO step as the batch grows (questions x K at 1x, 2x, 4x, 8x) and as D_max grows, with the
share of bookkeeping (rewards, alignment, advantages, store I/O) at each size.

    .venv/bin/python bench/scaling.py [--checkpoint runs/warmstart] [--steps 4] [--threads 1] [--out runs/bench_scaling]
                                      [--batches 2,4,8,16] [--dmax 1,2,3,4] [--k 8]

Batch sizes: B = 2, 4, 8, 16 questions per step at K = 8 (16 to 128 main rollouts; the toy config is B = 8),
D_max = 2. D_max sizes: 1, 2, 3, 4 at B = 8 (the third batch size), K = 8. Every size trains from the same warm start with the
statistics in a private redis-server on loopback, times each phase as `step.py` does (the first step of each
size is a warm-up; medians of the rest), and draws OUT/scaling.png. Linearity is checked two ways: a
least-squares line seconds = a + b x rollouts through the batch sizes (its largest relative residual), and
the growth exponent, the slope of log(seconds) against log(rollouts) from the smallest to the largest
batch (1 = proportional; below 1 when a fixed cost per step is amortised).
The last line is one JSON object.
"""
import argparse, json, math, platform
from pathlib import Path

import torch

from step import BOOKKEEPING, checked_warm_start, measure, medians, stats_store
from mgrpo_ref.rollout import RolloutConfig
from mgrpo_ref.config import TrainConfig
from mgrpo_ref.world import build_world

def point(world, checkpoint, steps, store, questions: int, k: int, d_max: int) -> dict:
    "Median step seconds and bookkeeping share of one size."
    cfg = TrainConfig(questions_per_step=questions, rollout=RolloutConfig(k=k), d_max=d_max, eval_every=0, checkpoint_every=0,
                      run=f'b{questions}-d{d_max}')
    med = medians(measure(world, cfg, checkpoint, steps, store))
    book = sum(med[k] for k in BOOKKEEPING)
    return {'questions': questions, 'rollouts': questions * cfg.rollout.k, 'd_max': d_max, 'seconds_per_step': round(med['step'], 4),
            'bookkeeping_seconds': round(book, 5), 'bookkeeping_share': round(book / med['step'], 5)}


def affine_fit(batch: list[dict]) -> tuple[float, float, float]:
    "Least-squares seconds = a + b x rollouts over the batch sizes; returns a, b and the largest relative residual."
    xs, ys = [p['rollouts'] for p in batch], [p['seconds_per_step'] for p in batch]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / max(sum((x - mx) ** 2 for x in xs), 1e-12)
    a = my - b * mx
    return a, b, max(abs(a + b * x - y) / y for x, y in zip(xs, ys))


def plot(batch: list[dict], dmax: list[dict], path: Path):
    import matplotlib.pyplot as plt
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9, 3.4))
    x, (a, b, _) = [p['rollouts'] for p in batch], affine_fit(batch)
    ax.plot(x, [p['seconds_per_step'] for p in batch], 'o-', label='measured')
    ax.plot([0, x[-1]], [a, a + b * x[-1]], ':', color='grey', label=f'{a:.2f} s + {1000 * b:.1f} ms x rollouts')
    ax.set(xlabel='main rollouts per step (B x K)', ylabel='seconds per step', title='Batch size (D_max = 2)', xticks=x, xlim=(0, x[-1] * 1.08))
    ax.set_ylim(0, max(p['seconds_per_step'] for p in batch) * 1.15); ax.legend(fontsize=8, loc='upper left')
    for p in batch: ax.annotate(f"{100 * p['bookkeeping_share']:.2f} %", (p['rollouts'], p['seconds_per_step']), textcoords='offset points',
                                xytext=(0, -14), ha='center', fontsize=8, color='C3')
    d = [p['d_max'] for p in dmax]
    bx.plot(d, [p['seconds_per_step'] for p in dmax], 'o-')
    bx.set(xlabel='D_max', ylabel='seconds per step', title=f'D_max (B x K = {dmax[0]["rollouts"]})', xticks=d)
    bx.set_ylim(0, max(p['seconds_per_step'] for p in dmax) * 1.15)
    for p in dmax: bx.annotate(f"{100 * p['bookkeeping_share']:.2f} %", (p['d_max'], p['seconds_per_step']), textcoords='offset points',
                               xytext=(0, -14), ha='center', fontsize=8, color='C3')
    fig.suptitle('red: bookkeeping (rewards, alignment, advantages, store I/O) as a share of the step', fontsize=9, color='C3')
    fig.tight_layout(); fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--checkpoint', default='runs/warmstart', help='folder with main/ and sub/ (make demo writes runs/warmstart)')
    ap.add_argument('--steps', type=int, default=4, help='steps per size (the first is a warm-up)')
    ap.add_argument('--threads', type=int, default=1, help='torch threads')
    ap.add_argument('--out', default='runs/bench_scaling', help='folder for scaling.png and scaling.json')
    ap.add_argument('--batches', default='2,4,8,16', help='questions per step, one size each')
    ap.add_argument('--dmax', default='1,2,3,4', help='D_max values, at the third batch size (or the last)')
    ap.add_argument('--k', type=int, default=8, help='K: rollouts per question')
    a = ap.parse_args()
    batches, dmaxes = [int(x) for x in a.batches.split(',')], [int(x) for x in a.dmax.split(',')]
    checked_warm_start(a.checkpoint)
    torch.set_num_threads(a.threads)
    world, out = build_world(seed=0), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with stats_store(False) as store:
        batch = [point(world, a.checkpoint, a.steps, store, b, a.k, 2) for b in batches]
        dmax = [point(world, a.checkpoint, a.steps, store, batches[min(2, len(batches) - 1)], a.k, d) for d in dmaxes]
    print(f"{'rollouts':>8} {'D_max':>5} {'s/step':>8} {'s/rollout':>9} {'bookkeeping':>11}")
    for p in batch + dmax:
        print(f"{p['rollouts']:8d} {p['d_max']:5d} {p['seconds_per_step']:8.3f} {p['seconds_per_step'] / p['rollouts']:9.4f} "
              f"{100 * p['bookkeeping_share']:10.2f}%")
    first, last = batch[0], batch[-1]
    exponent = math.log(last['seconds_per_step'] / first['seconds_per_step']) / math.log(last['rollouts'] / first['rollouts'])
    a_s, b_s, resid = affine_fit(batch)
    print(f"growth exponent over {first['rollouts']}-{last['rollouts']} rollouts: {exponent:.2f} (1 = linear); "
          f"fit {a_s:.3f} s + {1000 * b_s:.2f} ms per rollout, largest residual {100 * resid:.1f} %")
    plot(batch, dmax, out / 'scaling.png')
    result = {'batch': batch, 'd_max': dmax, 'growth_exponent': round(exponent, 3),
              'fit': {'seconds_fixed': round(a_s, 4), 'seconds_per_rollout': round(b_s, 5), 'largest_relative_residual': round(resid, 4)},
              'max_bookkeeping_share': max(p['bookkeeping_share'] for p in batch + dmax), 'k': a.k, 'steps': a.steps,
              'machine': f'{platform.machine()}, {torch.get_num_threads()} torch threads', 'plot': str(out / 'scaling.png')}
    (out / 'scaling.json').write_text(json.dumps(result, indent=1) + '\n')
    print(json.dumps(result))


if __name__ == '__main__':
    main()
