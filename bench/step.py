"""Where an M-GRPO step's time goes: each phase's seconds and share of the step, on the toy config.

    .venv/bin/python bench/step.py [--checkpoint runs/warmstart] [--steps 6] [--threads 1] [--memory-store]
                                   [--set "questions_per_step=8,rollout.k=8"]

It trains co-located M-GRPO from the warm-started policies (`make demo` saves them in runs/warmstart) with
the statistics going through a real redis-server on loopback (a private one; `--memory-store` keeps them in
memory instead), and reads the phases from each step's metrics (`time/...`) plus a timer around the store:

  main generation     the main agent's sampling calls               time/main_generate
  sub generation      the sub-agent's sampling calls                time/sub_generate
  tools               search and visit                              time/tools
  episodes            the rest of the rollout: parsing turns,       time/rollout minus the three above
                      tokenising observations, delegation calls
  rewards + alignment + advantages                                  time/main_score + time/sub_score_align
                                                                    minus the store's seconds
  store I/O           records, completion marker, reading them      timed around the StatsStore calls
  main update, sub update                                           time/main_update, time/sub_update
  other               the trainer's own work between phases         the step's wall time minus all the above

The first step is a warm-up; the table shows medians over the rest. The last line is one JSON object.
`scaling.py` imports `measure` from here.
"""
import argparse, contextlib, json, platform, statistics, time
from pathlib import Path

import torch

from mgrpo_ref.store import LocalRedis, MemoryStore, RedisStore
from mgrpo_ref.config import TrainConfig, config_fields
from mgrpo_ref.trainer import Trainer
from mgrpo_ref.warmstart import load_policies
from mgrpo_ref.world import build_world

PHASES = ('main generation', 'sub generation', 'tools', 'episodes', 'rewards + alignment + advantages', 'store I/O',
          'main update', 'sub update', 'other')
BOOKKEEPING = ('rewards + alignment + advantages', 'store I/O')


class TimedStore:
    "A StatsStore that adds up the seconds spent in its calls."
    def __init__(self, inner): self.inner, self.seconds = inner, 0.0

    def _timed(self, name, *args, **kw):
        t0 = time.perf_counter()
        try: return getattr(self.inner, name)(*args, **kw)
        finally: self.seconds += time.perf_counter() - t0

    def put_records(self, *a, **kw): return self._timed('put_records', *a, **kw)
    def finish_step(self, *a, **kw): return self._timed('finish_step', *a, **kw)
    def get_records(self, *a, **kw): return self._timed('get_records', *a, **kw)


def phases(m: dict, wall: float, store_s: float) -> dict:
    "One step's seconds per phase from its metrics `m`, its wall time and the store's seconds."
    g = lambda k: m.get(f'time/{k}', 0.0)
    p = {'main generation': g('main_generate'), 'sub generation': g('sub_generate'), 'tools': g('tools'),
         'rewards + alignment + advantages': g('main_score') + g('sub_score_align') - store_s, 'store I/O': store_s,
         'main update': g('main_update'), 'sub update': g('sub_update')}
    p['episodes'] = g('rollout') - p['main generation'] - p['sub generation'] - p['tools']
    p['other'] = wall - sum(p.values())
    return {k: p[k] for k in PHASES}


def measure(world, cfg: TrainConfig, checkpoint: str | Path, steps: int, store) -> list[dict]:
    "Train `steps` steps of `cfg` from `checkpoint` with `store`; each step's phases (the warm-up step left out)."
    timed = TimedStore(store)
    tr = Trainer(world, cfg, load_policies(checkpoint, cfg.roles), store=timed)
    rows = []
    for s in range(steps):
        before, t0 = timed.seconds, time.perf_counter()
        m = tr.step(s)
        rows.append({**phases(m, time.perf_counter() - t0, timed.seconds - before), 'step': time.perf_counter() - t0})
    return rows[1:]


def medians(rows: list[dict]) -> dict:
    "Median seconds of each phase and of the step."
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def checked_warm_start(path: str) -> str:
    "`path` if it holds warm-started main/ and sub/ policies, else exit with the command that makes them."
    if not all((Path(path) / r).is_dir() for r in ('main', 'sub')):
        raise SystemExit(f"no warm start (main/ and sub/) at {path!r}: run `make demo` first or pass --checkpoint")
    return path


@contextlib.contextmanager
def stats_store(memory: bool):
    "A RedisStore on a private loopback redis-server, or a MemoryStore."
    if memory: yield MemoryStore(); return
    with LocalRedis() as r: yield RedisStore(r.url)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--checkpoint', default='runs/warmstart', help='folder with main/ and sub/ (make demo writes runs/warmstart)')
    ap.add_argument('--steps', type=int, default=6, help='steps to train (the first is a warm-up)')
    ap.add_argument('--threads', type=int, default=1, help='torch threads (the experiment runs each arm on 1)')
    ap.add_argument('--memory-store', action='store_true', help='statistics in memory instead of a redis-server')
    ap.add_argument('--set', default=None, help='config overrides, e.g. "questions_per_step=8,rollout.k=8"')
    a = ap.parse_args()
    checked_warm_start(a.checkpoint)
    if a.steps < 2: raise SystemExit(f"--steps must be >= 2 (one warm-up), got {a.steps}")
    torch.set_num_threads(a.threads)
    cfg = TrainConfig.from_dict({**config_fields(None, a.set), 'eval_every': 0, 'checkpoint_every': 0})
    with stats_store(a.memory_store) as store:
        med = medians(measure(build_world(seed=0), cfg, a.checkpoint, a.steps, store))
    step = med.pop('step')
    print(f"M-GRPO step on B = {cfg.questions_per_step} x K = {cfg.rollout.k}, D_max = {cfg.d_max}: {step:.3f} s (median of {a.steps - 1})")
    for k in PHASES: print(f"  {k:34} {med[k]:7.3f} s  {100 * med[k] / step:5.1f} %")
    book = sum(med[k] for k in BOOKKEEPING)
    print(f"  bookkeeping (rewards, alignment, advantages, store): {100 * book / step:.2f} % of the step")
    print(json.dumps({'seconds_per_step': round(step, 4), 'seconds': {k: round(v, 4) for k, v in med.items()},
                      'shares': {k: round(v / step, 4) for k, v in med.items()}, 'bookkeeping_share': round(book / step, 4),
                      'store': 'memory' if a.memory_store else 'redis', 'questions': cfg.questions_per_step, 'k': cfg.rollout.k,
                      'd_max': cfg.d_max, 'steps': a.steps, 'machine': f'{platform.machine()}, {torch.get_num_threads()} torch threads'}))


if __name__ == '__main__':
    main()
