"""A real model's M-GRPO step, old code against new in one run: the same steps from the same warm start, each phase's
seconds, and generation's and the update's share of this CPU's float32 matmul rate.

    .venv/bin/python bench/real_step.py [--old 6e57779] [--steps 3] [--threads 2]
                                        [--config configs/smollm2-cpu.json] [--checkpoint mgrpo_ref/checkpoints/smollm2]

`--old` is a git revision: its package and its copy of `--config` run in a worktree of it (a temporary folder), the
working tree's run after, each in a process of its own (the float32 matmul route is a process setting), on `--threads`
torch threads. Both train steps 0 .. steps-1 from `--checkpoint`, so they sample the same questions with the same seeds:
the table checks that they sampled the same number of tokens. Phases are those of `bench/step.py` (the store is in
memory, so its I/O is inside "rewards + alignment + advantages"). The FLOP bound:

  matmul rate R       the faster of float32 (2048 x 2048) @ (2048 x 2048) as PyTorch computes it by default (MKL) and
                      through oneDNN (05b_sampling's fast_matmul, where it keeps float32), the best of 5, in GFLOP/s
  generation FLOPs    2 N_body per token fed + 2 H V per sampled token (the LM head; a prefill keeps one position)
  update FLOPs        4 N_body per token of a trained sequence (forward 2, backward 2: the frozen base needs the
                      gradient of its activations, not of its weights; the adapters' own terms are < 2% and left out)
                      + 6 H V per loss token (the head's forward, its recomputation under checkpointing, backward)

where N_body is the base's parameters without the embedding (134.5 M - 28.3 M for SmolLM2), H its width and V its
vocabulary. A token fed counts once however it was computed, so work that the new code does not repeat (a shared
prefix, a row with zero advantage) raises its share: the share is work done per second of the old code's definition.
"""
import argparse, json, os, platform, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = ('main generation', 'sub generation', 'tools', 'episodes', 'rewards + alignment + advantages', 'main update',
          'sub update', 'other')


def worker(config: str, checkpoint: str, steps: int, threads: int) -> None:
    "Train `steps` steps of `config` from `checkpoint` in this process; print one JSON line per step."
    import torch
    torch.set_num_threads(threads)
    from mgrpo_ref.config import TrainConfig, config_fields
    from mgrpo_ref.data import load_task
    from mgrpo_ref.learner import make_accelerator
    from mgrpo_ref.trainer import Trainer, starting_policies
    import mgrpo_ref
    cfg = TrainConfig.from_dict(config_fields(config, None))
    tr = Trainer(load_task(cfg.data), cfg, starting_policies(cfg, checkpoint, named=False), accelerator=make_accelerator(cfg.accel))
    for s in range(steps):
        t0 = time.perf_counter(); m = tr.step(s); wall = time.perf_counter() - t0
        print(json.dumps({'package': str(Path(mgrpo_ref.__file__).parent), 'wall': wall, **{k: v for k, v in m.items() if not isinstance(v, dict)}}), flush=True)


def phases(m: dict) -> dict:
    "One step's seconds per phase from its metrics."
    g = lambda k: m.get(f'time/{k}', 0.0)
    p = {'main generation': g('main_generate'), 'sub generation': g('sub_generate'), 'tools': g('tools'),
         'rewards + alignment + advantages': g('main_score') + g('sub_score_align'), 'main update': g('main_update'),
         'sub update': g('sub_update')}
    p['episodes'] = g('rollout') - p['main generation'] - p['sub generation'] - p['tools']
    p['other'] = m['wall'] - sum(p.values())
    return {k: p[k] for k in PHASES}


def run_arm(root: Path, config: str, checkpoint: str, steps: int, threads: int) -> list[dict]:
    "The worker in a process of its own, importing the package under `root`."
    env = {**os.environ, 'PYTHONPATH': str(root), 'OMP_NUM_THREADS': str(threads)}
    cmd = [sys.executable, str(Path(__file__).resolve()), '--worker', '--config', config, '--checkpoint', checkpoint,
           '--steps', str(steps), '--threads', str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root)
    if out.returncode: raise SystemExit(f"the run under {root} failed:\n{out.stderr[-3000:]}")
    rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{')]
    if rows[0]['package'] != str(root / 'mgrpo_ref'): raise SystemExit(f"imported {rows[0]['package']}, not {root}/mgrpo_ref")
    return rows


def matmul_rates(threads: int, n: int = 2048, reps: int = 5) -> dict:
    "Float32 (n x n) @ (n x n) in GFLOP/s, the best of `reps`: as PyTorch computes it by default, and through oneDNN where it keeps float32."
    import torch
    from mgrpo_ref.sampling import onednn_keeps_float32
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    def best():
        a @ b
        return 2 * n ** 3 / min(_timed(lambda: a @ b) for _ in range(reps)) / 1e9
    out = {'default': best()}
    if onednn_keeps_float32():
        torch.set_float32_matmul_precision('medium'); out['oneDNN'] = best(); torch.set_float32_matmul_precision('highest')
    return out


def _timed(f) -> float:
    t0 = time.perf_counter(); f(); return time.perf_counter() - t0


def work(rows: list[dict], shape: tuple[int, int, int]) -> dict:
    "Generation's and the update's tokens, seconds and FLOPs over `rows`."
    n_body, H, V = shape
    fed = sum(m.get('main/episode_tokens', 0) + m.get('sub/episode_tokens', 0) + m.get('single/episode_tokens', 0) for m in rows)
    sampled = sum(m.get('main/gen_tokens', 0) + m.get('sub/gen_tokens', 0) + m.get('single/gen_tokens', 0) for m in rows)
    gen_s = sum(m.get('time/main_generate', 0) + m.get('time/sub_generate', 0) for m in rows)
    upd_s = sum(m.get('time/main_update', 0) + m.get('time/sub_update', 0) for m in rows)
    trained = sum(m.get(f'{r}/episode_tokens', 0) * (m.get(f'{r}/skipped', 1) is None) for m in rows for r in ('main', 'sub', 'single'))
    loss_tokens = sum((m.get(f'{r}/tokens') or 0) for m in rows for r in ('main', 'sub', 'single'))
    return {'fed': fed, 'sampled': sampled, 'gen_s': gen_s, 'gen_flops': 2 * n_body * fed + 2 * H * V * sampled,
            'trained': trained, 'upd_s': upd_s, 'upd_flops': 4 * n_body * trained + 6 * H * V * loss_tokens}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--old', default='6e57779', help='git revision of the old code (default: the commit before the speed work)')
    p.add_argument('--steps', type=int, default=3, help='training steps per arm (0 .. steps-1)')
    p.add_argument('--threads', type=int, default=2, help='torch threads of each arm and of the matmul measurement')
    p.add_argument('--config', default='configs/smollm2-cpu.json', help="each arm's config, a path inside its tree")
    p.add_argument('--checkpoint', default='mgrpo_ref/checkpoints/smollm2', help='the warm start both arms start from (of the working tree)')
    p.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker: return worker(a.config, a.checkpoint, a.steps, a.threads)
    checkpoint = str((ROOT / a.checkpoint).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / 'old'
        subprocess.run(['git', '-C', str(ROOT), 'worktree', 'add', '--detach', str(old), a.old], check=True, capture_output=True)
        try:
            t0 = time.time()
            arms = {'old': run_arm(old, a.config, checkpoint, a.steps, a.threads)}
            arms['new'] = run_arm(ROOT, a.config, checkpoint, a.steps, a.threads)
            seconds = time.time() - t0
        finally: subprocess.run(['git', '-C', str(ROOT), 'worktree', 'remove', '--force', str(old)], capture_output=True)
    sys.path.insert(0, str(ROOT))
    import torch
    from mgrpo_ref.memory import model_config, parameter_count
    from mgrpo_ref.trainer import machine
    meta = Path(checkpoint) / 'main' / 'policy.json'                  # adapters name their base there
    base = json.loads(meta.read_text()).get('base') if meta.exists() else None
    mc = model_config('smollm2') if base == 'smollm2' else None     # FLOP counts for SmolLM2's shape only
    R = matmul_rates(a.threads)
    rate = max(R.values())
    git_head = subprocess.run(['git', '-C', str(ROOT), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(['git', '-C', str(ROOT), 'status', '--porcelain', '--', 'mgrpo_ref'], capture_output=True, text=True).stdout.strip())
    info = machine()
    print(f"{a.config}, steps 0-{a.steps - 1} from {a.checkpoint}, {a.threads} threads, one arm after the other ({seconds:.0f} s): "
          f"old = {a.old}, new = {git_head}{' + uncommitted changes' if dirty else ''}; {info['cpu']} ({info['cpu_capability']}), torch {info['torch']}, "
          f"transformers {info['transformers']}; float32 matmul rate " + ', '.join(f'{k} {v:.1f}' for k, v in R.items()) + ' GFLOP/s')
    same = [(o.get('main/gen_tokens'), o.get('sub/gen_tokens')) == (n.get('main/gen_tokens'), n.get('sub/gen_tokens')) for o, n in zip(arms['old'], arms['new'])]
    print(f"\nsampled tokens per step, old / new: " + '; '.join(f"{o.get('main/gen_tokens')}+{o.get('sub/gen_tokens')} / {n.get('main/gen_tokens')}+{n.get('sub/gen_tokens')}"
                                                        for o, n in zip(arms['old'], arms['new'])) + f" ({sum(same)} of {len(same)} steps the same)")
    print(f"\n| phase | old (s, mean of {a.steps} steps) | new | new / old |\n|---|---:|---:|---:|")
    mean = {k: {ph: statistics.mean(phases(m)[ph] for m in rows) for ph in PHASES} for k, rows in arms.items()}
    walls = {k: statistics.mean(m['wall'] for m in rows) for k, rows in arms.items()}
    for ph in PHASES: print(f"| {ph} | {mean['old'][ph]:.1f} | {mean['new'][ph]:.1f} | {mean['new'][ph] / mean['old'][ph]:.2f} |" if mean['old'][ph] > 0.05 else f"| {ph} | {mean['old'][ph]:.1f} | {mean['new'][ph]:.1f} | |")
    print(f"| **step** | **{walls['old']:.1f}** | **{walls['new']:.1f}** | **{walls['new'] / walls['old']:.2f}** |")
    shares = {}
    if mc is not None:
        V, H = mc.vocab_size, mc.hidden_size
        shape = (parameter_count(mc) - V * H * (1 if mc.tie_word_embeddings else 2), H, V)
        print(f"\n| arm | work | tokens | seconds | tokens/s | GFLOP/s | share of {rate:.0f} GFLOP/s |\n|---|---|---:|---:|---:|---:|---:|")
        for k, rows in arms.items():
            w = work(rows, shape)
            g, u = w['gen_flops'] / w['gen_s'] / 1e9, w['upd_flops'] / w['upd_s'] / 1e9
            shares[k] = {'generation': g / rate, 'update': u / rate}
            print(f"| {k} | generation (sampled; {w['fed']:,} fed) | {w['sampled']:,} | {w['gen_s']:.0f} | {w['sampled'] / w['gen_s']:.1f} | {g:.1f} | {g / rate:.0%} |")
            print(f"| {k} | update (tokens of trained sequences) | {w['trained']:,} | {w['upd_s']:.0f} | {w['trained'] / w['upd_s']:.1f} | {u:.1f} | {u / rate:.0%} |")
    print(json.dumps({'old': a.old, 'new': git_head, 'dirty': dirty, 'steps': a.steps, 'threads': a.threads, 'matmul_gflops': R,
                      'step_seconds': walls, 'ratio': walls['new'] / walls['old'], 'same_sampled_tokens': sum(same), 'phases': mean,
                      'shares': shares, 'machine': info, 'seconds': seconds}))


if __name__ == '__main__':
    main()
