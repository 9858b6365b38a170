"""Seconds per training step of decoupled M-GRPO (two server processes over Redis) against co-located M-GRPO,
on the same config and warm start, and the bytes the statistics channel carries per step.

    .venv/bin/python bench/decoupled.py [--checkpoint runs/warmstart] [--steps 6] [--set "questions_per_step=8,rollout.k=8"]
                                        [--threads 1] [--repeats 2] [--out runs/bench_decoupled]

Each repeat trains the same M-GRPO run (same seed, same starting policies) three ways, one after the other:

  co-located   `Trainer.fit` in this process, `--threads` torch threads
  decoupled    `servers.decoupled`: a main server and a sub server process (`--threads` each) and a private
               redis-server on loopback; synchronous (the sub-agent is never stale), so it trains exactly what
               the co-located run trains
  lag 1        the same with `max_lag=1`: the sub server may answer step s+1's delegations before it has
               trained on step s

Seconds per step are the medians of the gaps between the steps' start times (`time/at` in metrics.jsonl)
from step 2 on, so process start-up and the evaluations before and after are left out; `run s` is the
whole call, start-up and evaluations included. The statistics bytes per step (`stats/bytes`) are the
records and completion marker the main side writes; the trajectory bytes are what shipping the step's
tokens would cost instead (`servers.trajectory_bytes`: 9 bytes a token); the delegation bytes are the task and
report texts that the agents exchange (in memory when co-located); `max lag` is the most steps the answering
sub-agent was behind. Without `--checkpoint` the
policies are warm-started first (`--warmstart-steps` SFT steps per role). It also draws the first decoupled
run's timeline (4 steps) in OUT/timeline.png. The last line is one JSON object.
"""
import argparse, json, platform, shutil, statistics, time
from pathlib import Path

import torch

from mgrpo_ref import servers
from mgrpo_ref.config import TrainConfig, config_fields
from mgrpo_ref.trainer import Trainer, warm_start_folder
from mgrpo_ref.warmstart import load_policies
from mgrpo_ref.world import WorldConfig, build_world


def read_metrics(out: Path) -> list[dict]:
    "The training steps' lines of a run's metrics (evaluation-only lines left out)."
    return [m for m in map(json.loads, (out / 'metrics.jsonl').read_text().splitlines()) if 'time/at' in m]


def figures(out: Path, seconds: float) -> dict:
    "Seconds per step (median gap between step starts, step 2 on), the run's seconds and bytes per step."
    ms = read_metrics(out)
    gaps = [b['time/at'] - a['time/at'] for a, b in zip(ms[1:], ms[2:])] or [ms[-1]['time/at'] - ms[0]['time/at']]
    return {'s/step': statistics.median(gaps), 'run s': seconds,
            'stats B/step': statistics.mean(m['stats/bytes'] for m in ms),
            'trajectory B/step': statistics.mean(servers.trajectory_bytes(m) for m in ms),
            'delegation B/step': statistics.mean(m.get('delegation/bytes', 0) for m in ms),   # 0: co-located, in memory
            'max lag': max((m.get('sub/lag') or 0) for m in ms),
            'eval_after': json.loads((out / 'summary.json').read_text())['eval_accuracy_after']}


def colocated(world, cfg, start, out, threads) -> dict:
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    Trainer(world, cfg, load_policies(start, ('main', 'sub')), out=out).fit(progress=False)
    return figures(out, time.perf_counter() - t0)


def decoupled(cfg, start, out, threads, max_lag) -> dict:
    t0 = time.perf_counter()
    servers.decoupled(cfg, out, start, threads=threads, max_lag=max_lag, progress=False)
    return figures(out, time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--checkpoint', default=None, help='folder with main/ and sub/ (default: warm-start first)')
    ap.add_argument('--warmstart-steps', type=int, default=60)
    ap.add_argument('--steps', type=int, default=6)
    ap.add_argument('--set', default='questions_per_step=8,rollout.k=8', help='TrainConfig overrides')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--repeats', type=int, default=2)
    ap.add_argument('--out', default='runs/bench_decoupled')
    a = ap.parse_args()
    out = Path(a.out); shutil.rmtree(out, ignore_errors=True); out.mkdir(parents=True)
    world = build_world(WorldConfig(seed=0))
    cfg = TrainConfig.from_dict({**config_fields(None, a.set), 'steps': a.steps, 'eval_every': 0, 'checkpoint_every': 0,
                                 'eval_questions': 8, 'eval_samples': 1, 'run': 'bench'})
    start = Path(a.checkpoint) if a.checkpoint else warm_start_folder(world, cfg, out, a.warmstart_steps)
    arms = {'co-located': lambda o: colocated(world, cfg, start, o, a.threads),
            'decoupled': lambda o: decoupled(cfg, start, o, a.threads, 0),
            'lag 1': lambda o: decoupled(cfg, start, o, a.threads, 1)}
    runs = {name: [] for name in arms}
    for r in range(a.repeats):                                   # alternate the arms so a noisy neighbour hits all of them
        for name, arm in arms.items():
            runs[name].append(arm(out / f'{name.replace(" ", "_")}-{r}'))
            print(f'repeat {r} {name:>10}: ' + ', '.join(f'{k} {v:.3f}' for k, v in runs[name][-1].items()), flush=True)
    fig = servers.plot_timeline(out / 'decoupled-0', steps=4)           # the README's timeline (make docs copies it)
    fig.savefig(out / 'timeline.png', dpi=110)
    med = {name: {k: statistics.median(x[k] for x in xs) for k in xs[0]} for name, xs in runs.items()}
    base = med['co-located']['s/step']
    print(f"\n{a.steps} steps, B = {cfg.questions_per_step}, K = {cfg.rollout.k}, D_max = {cfg.d_max}, {a.threads} torch thread(s) "
          f"per process, {a.repeats} repeats (medians), {platform.machine()}, torch {torch.__version__}\n")
    print('| arm | s/step | vs co-located | run s | statistics B/step | delegation B/step | trajectory B/step | max lag | held-out accuracy after |')
    print('|---|---|---|---|---|---|---|---|---|')
    for name, m in med.items():
        print(f"| {name} | {m['s/step']:.3f} | x{m['s/step'] / base:.2f} | {m['run s']:.1f} | {m['stats B/step']:.0f} | "
              f"{m['delegation B/step']:.0f} | {m['trajectory B/step']:.0f} | {m['max lag']:.0f} | {m['eval_after']:.3f} |")
    print(json.dumps({'config': {'steps': a.steps, 'B': cfg.questions_per_step, 'K': cfg.rollout.k, 'threads': a.threads,
                                 'repeats': a.repeats}, 'medians': med}))


if __name__ == '__main__':
    main()
