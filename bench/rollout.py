"""Batched vs one-at-a-time rollouts of the tiny policies: episodes/s and generated tokens/s, side by side.

Batched: every episode of the step in each generation call (questions x K main episodes; all their
delegations together). One at a time: each main (or single) episode alone, its delegations alone.

    .venv/bin/python bench/rollout.py [--questions 8] [--k 8] [--repeats 3] [--checkpoint DIR]

Both arms run the same episodes (same questions, seeds and policies; batched == one at a time is a tested
property), alternating A/B after a warm-up; the last line is one JSON object with the medians and ratios.
Without --checkpoint the policies are freshly initialised (their episodes are short: untrained turns are
malformed); pass a warm-started checkpoint folder (with main/ and sub/, or a single policy) for realistic
multi-turn episodes.
"""
import argparse, json, platform, statistics, time
from pathlib import Path

import torch

from mgrpo_ref.policy import Policy, tiny_policy
from mgrpo_ref.rollout import InProcessSubAgent, RolloutConfig, run_main_episodes, run_tool_episodes
from mgrpo_ref.tools import Toolbox
from mgrpo_ref.world import build_world


def run(mode, jobs, main, sub, toolbox, cfg, batched):
    "Run the (key, question) jobs all in one batch, or each episode alone; returns seconds, episodes, tokens."
    t0, episodes, tokens = time.perf_counter(), 0, 0
    for group in ([jobs] if batched else [[j] for j in jobs]):
        if mode == 'single':
            trajs = run_tool_episodes(main, 'single', group, toolbox, cfg, seed=0)
        else:
            client = InProcessSubAgent(sub, toolbox, cfg, seed=0)
            trajs = run_main_episodes(main, group, client, cfg, seed=0) + client.pop()
        episodes += len(trajs); tokens += sum(t.n_generated for t in trajs)
    return time.perf_counter() - t0, episodes, tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--questions', type=int, default=8)
    ap.add_argument('--k', type=int, default=8)
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--checkpoint', default=None, help='folder with main/ and sub/ policies (else fresh tiny ones)')
    ap.add_argument('--threads', type=int, default=0, help='torch threads (0: leave the default)')
    a = ap.parse_args()
    if a.threads: torch.set_num_threads(a.threads)
    world = build_world(seed=0)
    toolbox = Toolbox.for_world(world)
    if a.checkpoint:
        main_pol, sub_pol = Policy.load(Path(a.checkpoint) / 'main'), Policy.load(Path(a.checkpoint) / 'sub')
    else:
        main_pol, sub_pol = tiny_policy(world, seed=1), tiny_policy(world, seed=2)
    cfg = RolloutConfig(k=a.k)
    jobs = [((0, q.qid, k), q.question) for q in world.questions['test'][:a.questions] for k in range(a.k)]
    result = {'machine': f'{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads',
              'questions': a.questions, 'k': a.k, 'repeats': a.repeats, 'checkpoint': a.checkpoint}
    for mode in ('mgrpo', 'single'):
        run(mode, jobs[:4], main_pol, sub_pol, toolbox, cfg, True)             # warm-up
        times = {True: [], False: []}
        for _ in range(a.repeats):
            for batched in (True, False):                                       # alternate A/B
                s, eps, toks = run(mode, jobs, main_pol, sub_pol, toolbox, cfg, batched)
                times[batched].append(s)
        b, o = statistics.median(times[True]), statistics.median(times[False])
        result[mode] = {'episodes': eps, 'generated_tokens': toks,
                        'batched': {'seconds': round(b, 3), 'episodes_per_s': round(eps / b, 1), 'gen_tokens_per_s': round(toks / b, 1)},
                        'one_at_a_time': {'seconds': round(o, 3), 'episodes_per_s': round(eps / o, 1), 'gen_tokens_per_s': round(toks / o, 1)},
                        'speedup': round(o / b, 2)}
        print(f"{mode:6s} {eps} episodes, {toks} generated tokens: batched {eps / b:7.1f} ep/s {toks / b:8.1f} tok/s | "
              f"one at a time {eps / o:7.1f} ep/s {toks / o:8.1f} tok/s | speedup x{o / b:.2f}")
    print(json.dumps(result))


if __name__ == '__main__':
    main()
