"""Time of the M-GRPO core on the statistics of one step: rewards, trajectory alignment and both agents' advantages.

    .venv/bin/python bench/core.py [--questions 64] [--k 8] [--d-max 4] [--scale 4] [--repeats 7]

A step's batch is B questions x K main rollouts; each main rollout delegates d_k times, d_k drawn from a
distribution like the oracle's traces on the 1-3-hop world (mostly 1-3, some 0 and some above D_max), and
formats and answers are right or wrong at random. The main and sub trajectories are real `Trajectory` records
with `FormatCheck` verdicts; their tokens are left out (the core never reads them). The script times

  rewards      score_mains + score_subs (with the verifiable expert score)
  alignment    align_to_dmax(fill_from_query)
  advantages   main_advantages + sub_advantages

for B and for scale x B (same K, D_max), alternating the two sizes; the last line is one JSON object with
the medians (ms) and the ratio of the totals, which should be close to the scale (linear cost).
"""
import argparse, json, platform, random, statistics, time

import torch

from mgrpo_ref.advantages import main_advantages, sub_advantages
from mgrpo_ref.alignment import align_to_dmax
from mgrpo_ref.protocol import FormatCheck
from mgrpo_ref.rewards import RewardConfig, SubtaskAnswers, score_mains, score_subs
from mgrpo_ref.rollout import Trajectory
from mgrpo_ref.world import build_world

D_PROBS = {0: 0.05, 1: 0.30, 2: 0.30, 3: 0.22, 4: 0.08, 5: 0.03, 6: 0.02}   # d_k per main rollout


def make_batch(world, questions: int, k: int, seed: int = 0):
    "Main and sub trajectories (no tokens) of one synthetic step, with realistic d_k, formats and answers."
    rng = random.Random(seed)
    qs = [world.questions['train'][i % len(world.questions['train'])] for i in range(questions)]
    mains, subs, answers = [], [], {}
    for b, q in enumerate(qs):
        qid = f'{q.qid}#{b}'; answers[qid] = q.answer
        p_right = rng.random()
        for kk in range(k):
            d = rng.choices(list(D_PROBS), weights=list(D_PROBS.values()))[0]
            m = Trajectory((0, qid, kk), 'main', q.question, [], [], [])
            for i in range(d):
                hop = q.chain[min(i, len(q.chain) - 1)]
                ok = rng.random() < 0.9
                report = hop.answer if ok and rng.random() < 0.6 else 'unknown'
                s = Trajectory((0, qid, kk, i), 'sub', hop.question, [], [], [], format=FormatCheck(ok, [], None, report if ok else None))
                subs.append(s); m.sub_keys.append(s.key)
            ok = rng.random() < 0.95
            out = q.answer if rng.random() < p_right else 'wrong answer'
            m.format = FormatCheck(ok, [], None, out if ok else None)
            mains.append(m)
    return mains, subs, answers


def step(mains, subs, answers, expert, cfg, d_max):
    "The core of one step; returns the seconds of each stage."
    t0 = time.perf_counter()
    r_main, records = score_mains(mains, answers, cfg)
    r_sub = dict(zip([s.key for s in subs], score_subs(subs, records, cfg, expert)))
    t1 = time.perf_counter()
    al = align_to_dmax([(m.key, m.sub_keys) for m in mains], d_max, seed=0)
    t2 = time.perf_counter()
    main_advantages([m.key for m in mains], r_main)
    sub_advantages(al, r_sub)
    t3 = time.perf_counter()
    return {'rewards': t1 - t0, 'alignment': t2 - t1, 'advantages': t3 - t2, 'total': t3 - t0}, len(al)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--questions', type=int, default=64)
    ap.add_argument('--k', type=int, default=8)
    ap.add_argument('--d-max', type=int, default=4)
    ap.add_argument('--scale', type=int, default=4)
    ap.add_argument('--repeats', type=int, default=7)
    a = ap.parse_args()
    torch.set_num_threads(1)
    world = build_world(seed=0)
    expert, cfg = SubtaskAnswers(world), RewardConfig(beta_exp=0.1)
    sizes = {'B': a.questions, f'{a.scale}B': a.questions * a.scale}
    batches = {n: make_batch(world, b, a.k) for n, b in sizes.items()}
    times = {n: [] for n in sizes}
    for n, (mains, subs, answers) in batches.items(): step(mains, subs, answers, expert, cfg, a.d_max)   # warm-up
    for _ in range(a.repeats):
        for n, (mains, subs, answers) in batches.items():
            t, slots = step(mains, subs, answers, expert, cfg, a.d_max)
            times[n].append(t)
    result = {'device': platform.processor() or platform.machine(), 'K': a.k, 'D_max': a.d_max}
    for n, (mains, subs, _) in batches.items():
        med = {s: 1e3 * statistics.median(t[s] for t in times[n]) for s in times[n][0]}
        result[n] = {'questions': sizes[n], 'main': len(mains), 'sub': len(subs), 'slots': sizes[n] * a.k * a.d_max,
                     **{f'{s}_ms': round(v, 2) for s, v in med.items()}}
        print(f"{n:>4}: B={sizes[n]:4d}  {len(mains):5d} main, {len(subs):5d} sub, {sizes[n] * a.k * a.d_max:5d} slots  "
              + '  '.join(f'{s} {v:7.2f} ms' for s, v in med.items()))
    big, small = result[f'{a.scale}B'], result['B']
    result['total_ratio'] = round(big['total_ms'] / small['total_ms'], 2)
    print(f"{a.scale}x the batch costs {result['total_ratio']}x the time (linear: {a.scale}x)")
    print(json.dumps(result))


if __name__ == '__main__':
    main()
