"""A soak run of decoupled training: many steps with Redis killed and restarted every few steps and the sub server
killed once and restarted from its checkpoint, then checked against co-located training of the same run.

    .venv/bin/python bench/soak.py [--steps 100] [--redis-every 20] [--sub-kill-at 50] [--checkpoint DIR] [--out runs/soak]

The run is the tests' small config (2 questions x K = 2 a step, M-GRPO, a checkpoint every 5 steps) from the
shipped warm start (or `--checkpoint`). The main server waits 2 s for a reply and then asks again
(`on_timeout='resend'`), so it rides out the sub server's absence; both servers ride out Redis's by retrying
(its data persist in an append-only file). Redis is killed (SIGKILL) when the main server has logged a
multiple of `--redis-every` steps and restarted a second later; the sub server is killed (SIGKILL) once it has
trained `--sub-kill-at` steps (at least 5: after its first checkpoint) and restarted with `resume`. Printed: steps trained by the sub server, steps
missing or trained twice, records consumed per step (each step must consume exactly its B x K records), the
restarts, the largest parameter difference from co-located training, and the wall time. The last line is one
JSON object; the exit status is 1 if a check fails.
"""
import argparse, json, multiprocessing, shutil, sys, time
from collections import Counter
from pathlib import Path

from mgrpo_ref import servers
from mgrpo_ref.config import TrainConfig
from mgrpo_ref.data import load_task
from mgrpo_ref.rollout import RolloutConfig
from mgrpo_ref.store import LocalRedis
from mgrpo_ref.trainer import Trainer
from mgrpo_ref.warmstart import load_policies, shipped_warmstart


def lines(path: Path) -> list[dict]:
    return [json.loads(l) for l in path.read_text().splitlines()] if path.exists() else []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--steps', type=int, default=100)
    ap.add_argument('--redis-every', type=int, default=20, help='kill and restart Redis after every this many main steps')
    ap.add_argument('--sub-kill-at', type=int, default=None, help='kill the sub server once it has trained this many steps (default: half)')
    ap.add_argument('--checkpoint', default=None, help='starting policies (main/ and sub/); default: the shipped warm start')
    ap.add_argument('--out', default='runs/soak')
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    kill_at = a.sub_kill_at or a.steps // 2
    if not 5 <= kill_at < a.steps: ap.error(f"--sub-kill-at must be after the first checkpoint (step 5) and before the last step, got {kill_at}")
    start = Path(a.checkpoint) if a.checkpoint else shipped_warmstart()
    out = Path(a.out); shutil.rmtree(out, ignore_errors=True); out.mkdir(parents=True)
    cfg = TrainConfig(steps=a.steps, questions_per_step=2, rollout=RolloutConfig(k=2), eval_every=0, eval_questions=2, eval_samples=1,
                      checkpoint_every=5, run='soak')
    ctx = multiprocessing.get_context('spawn')
    def sub_server(resume: bool):
        p = ctx.Process(target=servers.run_sub_server, args=(cfg, redis.url, out / 'run/sub_server', None if resume else start),
                        kwargs=dict(resume=resume, threads=1)); p.start(); return p
    t0, redis_restarts, sub_restarts = time.monotonic(), [], []
    with LocalRedis(out / 'redis') as redis:
        sub = sub_server(False)
        main = ctx.Process(target=servers.run_main_server, args=(cfg, redis.url, out / 'run', start),
                           kwargs=dict(threads=1, timeout=2.0, on_timeout='resend', progress=False)); main.start()
        next_redis = a.redis_every
        while main.is_alive():
            done = len([m for m in lines(out / 'run/metrics.jsonl') if 'time/at' in m])
            if done >= next_redis and next_redis < a.steps:
                redis.kill(); time.sleep(1.0); redis.start(); redis_restarts.append(done); next_redis += a.redis_every
            if not sub_restarts and len(lines(out / 'run/sub_server/metrics.jsonl')) >= kill_at:
                sub.kill(); sub.join(); sub = sub_server(True); sub_restarts.append(kill_at)
            if sub.exitcode not in (None, 0): main.kill(); break          # a sub server that failed (its error is above)
            time.sleep(0.05)
        main.join(); sub.join(600)
        codes = (main.exitcode, sub.exitcode)
    wall = time.monotonic() - t0
    trained = [m['step'] for m in lines(out / 'run/sub_server/metrics.jsonl')]
    counts = Counter(trained)
    missing = [s for s in range(1, a.steps + 1) if s not in counts]
    doubled = sorted(s for s, n in counts.items() if n > 1)
    per_step = cfg.questions_per_step * cfg.rollout.k
    records = [m['sub/records'] for m in lines(out / 'run/sub_server/metrics.jsonl')]
    colo = Trainer(load_task(cfg.data), cfg, load_policies(start, ('main', 'sub')))
    colo.fit(progress=False)
    from mgrpo_ref.policy import Policy
    diff = {role: max((p - q).abs().max().item() for p, q in zip(colo.policies[role].model.parameters(), Policy.load(out / 'run' / path).model.parameters()))
            for role, path in (('main', 'checkpoint/main'), ('sub', 'sub_server/checkpoint/sub'))}
    result = dict(steps=a.steps, exit_codes=codes, sub_steps_trained=len(trained), steps_missing=missing, steps_doubled=doubled,
                  records_per_step=per_step, steps_with_other_record_counts=sum(r != per_step for r in records),
                  redis_restarts_after_main_step=redis_restarts, sub_server_restarts_after_step=sub_restarts,
                  max_param_diff=diff, wall_s=round(wall, 1))
    ok = codes == (0, 0) and not missing and not doubled and result['steps_with_other_record_counts'] == 0 and max(diff.values()) <= 1e-6
    print(f"decoupled soak, {a.steps} steps: exit codes {codes}; the sub server trained {len(trained)} steps "
          f"({len(missing)} missing, {len(doubled)} trained twice); every step consumed {per_step} records: "
          f"{result['steps_with_other_record_counts'] == 0}")
    print(f"Redis killed and restarted {len(redis_restarts)} times (after main steps {redis_restarts}); the sub server "
          f"killed and resumed {len(sub_restarts)} time (after step {sub_restarts}); largest parameter difference from "
          f"co-located training: main {diff['main']:.1e}, sub {diff['sub']:.1e}; wall time {wall:.0f} s (the co-located check not included)")
    print(json.dumps(result))
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
