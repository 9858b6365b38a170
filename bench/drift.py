"""Why the same command gives other numbers at other commits (issue 30, item 6): a short training run with one
commit's own code, from one fixed warm start, printed to the last bit.

    .venv/bin/python bench/drift.py run COMMIT [--steps 3] [--tag a] [--mode mgrpo] [--set eval_every=0,eval_questions=8]
                                    [--experiment] [--warmstart /tmp/ws0] [--out /tmp/drift]
    .venv/bin/python bench/drift.py compare /tmp/drift/<sha>-a /tmp/drift/<sha2>-a
    .venv/bin/python bench/drift.py probe [--commit HEAD] [--warmstart /tmp/ws0]
    .venv/bin/python bench/drift.py committed RUN [--csv docs/results_steps.csv] [--arm mgrpo] [--seed 0]

`run` makes a git worktree of COMMIT in /tmp/wt-<sha> (`git worktree add --detach`), runs that commit's own
`mgrpo-train` entry point (read from its settings.ini) with PYTHONPATH=/tmp/wt-<sha>, the venv's python, one
torch thread (OMP_NUM_THREADS=1 and torch.set_num_threads(1)):

    mgrpo-train --mode MODE --seed 0 --steps STEPS --checkpoint WARMSTART --out OUT/<sha>-<tag>/run
                --set eval_every=0,eval_questions=8 --quiet

then removes the worktree (`git worktree remove --force`). With --experiment it runs that commit's `mgrpo-experiment
--arms MODE --seeds 0 --workers 1` instead, the command behind the committed tables (run folder: exp/MODE/seed0). WARMSTART is the same folder for every commit: a copy
of HEAD's mgrpo_ref/checkpoints/warmstart (made once: `cp -r mgrpo_ref/checkpoints/warmstart /tmp/ws0`).
It prints, per step, the main and sub rewards, losses and the update's other numbers with full precision (repr),
and the SHA-256 of each final agent's weights (the tensors' bytes, names sorted) and of all of them together;
OUT/<sha>-<tag>/drift.json keeps them. `compare` prints, for two such folders, each step's numbers side by side
with their relative difference, and the largest difference of the final weights. `probe` (COMMIT's code, in a worktree) scores
one micro-batch of the loss (16 sequences, lengths 80-200, 24 loss positions each, random tokens) with the warm-started
main agent two ways: the full-logits token_logprobs of the commits before 5daad18 (copied below) and COMMIT's
chunked LM head, and prints the largest differences of the log-probs and of the gradient of sum(w * log-prob).
`committed` compares a run folder's metrics.jsonl (e.g. `run 935f69c --steps 100 --set ''`, the committed runs'
evaluation) with a committed run's per-step rows (docs/results_steps.csv): each step's sub-task accuracy and zero-signal
shares, and the held-out accuracies, and names the first step that differs.
"""
import argparse, configparser, hashlib, json, os, re, shutil, subprocess, sys, time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = REPO / '.venv' / 'bin' / 'python'
# per step: what the rollouts gave (rewards, counts) and what the update computed from them (losses, norms)
ROLLOUT_KEYS = ('main/reward', 'main/accuracy', 'main/format_ok', 'main/gen_tokens', 'main/tokens', 'sub/reward',
                'sub/subtask_accuracy', 'sub/episodes', 'sub/gen_tokens', 'sub/tokens', 'd_mean',
                'align/kept', 'align/dropped', 'align/duplicated', 'main/zero_signal', 'sub/zero_signal')
UPDATE_KEYS = ('main/loss', 'sub/loss', 'main/grad_norm', 'sub/grad_norm', 'main/entropy', 'sub/entropy',
               'main/ratio_max', 'main/ratio_min', 'sub/ratio_max', 'sub/ratio_min', 'main/approx_kl', 'sub/approx_kl')

RUNNER = r'''
import json, sys, torch, transformers
torch.set_num_threads(1)
json.dump({'torch': torch.__version__, 'transformers': transformers.__version__}, open('versions.json', 'w'))
import importlib, mgrpo_ref
assert mgrpo_ref.__file__.startswith(sys.argv[1]), mgrpo_ref.__file__     # this commit's code, not the venv's editable install
f = getattr(importlib.import_module(sys.argv[2]), sys.argv[3])
f = getattr(f, '__wrapped__', f)                                           # fastcore's call_parse: call the function itself
f(**json.loads(sys.argv[4]))
'''

def git(*args, cwd=REPO) -> str: return subprocess.run(['git', *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()

def entry_point(wt: Path, command: str = 'mgrpo-train') -> tuple[str, str]:
    "The module and function of this commit's `command` (settings.ini's console_scripts)."
    cp = configparser.ConfigParser(); cp.read(wt / 'settings.ini')
    m = re.search(command + r'=([\w.]+):(\w+)', cp['DEFAULT']['console_scripts'])
    return m.group(1), m.group(2)

def final_weights(run: Path) -> dict[str, Path]:
    "role -> model.safetensors of the run's last checkpoint (`checkpoint` is a folder, or a link to a versioned one)."
    ck = (run / 'checkpoint').resolve()
    return {p.parent.name: p for p in sorted(ck.glob('*/model.safetensors'))}

def weights_digest(path: Path) -> str:
    from safetensors.torch import load_file
    sd, h = load_file(str(path)), hashlib.sha256()
    for k in sorted(sd):
        h.update(k.encode()); h.update(str(sd[k].dtype).encode()); h.update(sd[k].contiguous().view(-1).numpy().tobytes())
    return h.hexdigest()

def fmt(v) -> str: return repr(v) if not isinstance(v, float) else float.__repr__(v)

def run(commit: str, steps: int, tag: str, warmstart: Path, out: Path, overrides: str, mode: str = 'mgrpo',
        experiment: bool = False, libs: Path | None = None) -> dict:
    sha = git('rev-parse', '--short=7', commit)
    wt, dest = Path(f'/tmp/wt-{sha}'), out / f'{sha}-{tag}'
    if dest.exists(): shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if wt.exists(): git('worktree', 'remove', '--force', str(wt))
    git('worktree', 'add', '--detach', str(wt), sha)
    try:
        if experiment:   # the committed tables' command: mgrpo-experiment --arms ARM --seeds 0 --workers 1 (in this process)
            module, func = entry_point(wt, 'mgrpo-experiment')
            kw = dict(arms=mode, seeds='0', steps=steps, checkpoint=str(warmstart), out=str(dest / 'exp'), set=overrides or None,
                      workers=1, quiet=True)
        else:
            module, func = entry_point(wt)
            kw = dict(mode=mode, seed=0, steps=steps, checkpoint=str(warmstart), out=str(dest / 'run'),
                      set=overrides or None, quiet=True)
        env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(wt), *([str(libs)] if libs else [])]), 'OMP_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1',
               'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_OFFLINE': '1', 'HF_DATASETS_OFFLINE': '1'}
        cmd = [str(PY), '-c', RUNNER, str(wt), module, func, json.dumps(kw)]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True)
        secs = time.perf_counter() - t0
        (dest / 'stdout.txt').write_text(p.stdout); (dest / 'stderr.txt').write_text(p.stderr)
        if p.returncode: raise SystemExit(f'{sha}: training failed (exit {p.returncode}):\n{p.stderr[-3000:]}')
    finally:
        git('worktree', 'remove', '--force', str(wt))
    if experiment: (dest / 'run').symlink_to(dest / 'exp' / mode / 'seed0')
    metrics = [json.loads(l) for l in (dest / 'run' / 'metrics.jsonl').read_text().splitlines()]
    steps_m = [m for m in metrics if 'main/reward' in m or 'sub/reward' in m]
    weights = {r: weights_digest(p) for r, p in final_weights(dest / 'run').items()}
    res = dict(commit=sha, subject=git('log', '-1', '--format=%s', sha)[:100], entry=f'{module}:{func}', kwargs=kw,
               versions=json.loads((dest / 'versions.json').read_text()),
               seconds=round(secs, 1), steps=[{k: m.get(k) for k in ('step', *ROLLOUT_KEYS, *UPDATE_KEYS)} for m in steps_m],
               eval=[{k: v for k, v in m.items() if k.startswith('eval/') or k == 'step'} for m in metrics if 'eval/sampled' in m],
               weights=weights, digest=hashlib.sha256(''.join(f'{r}:{d}\n' for r, d in sorted(weights.items())).encode()).hexdigest())
    (dest / 'drift.json').write_text(json.dumps(res, indent=1) + '\n')
    print(f"commit {sha} ({res['entry']}), {secs:.1f} s, {res['versions']}: {res['subject']}")
    for s in res['steps']:
        print(f"step {s['step']}: " + ', '.join(f'{k}={fmt(s[k])}' for k in ('main/reward', 'sub/reward', 'main/loss', 'sub/loss',
                                                                              'main/grad_norm', 'sub/grad_norm')))
        print('        ' + ', '.join(f'{k}={fmt(v)}' for k, v in s.items() if k not in ('step', 'main/reward', 'sub/reward', 'main/loss',
                                                                                             'sub/loss', 'main/grad_norm', 'sub/grad_norm')))
    for e in res['eval']: print(f"eval at step {e['step']}: " + ', '.join(f'{k}={fmt(v)}' for k, v in e.items() if k != 'step'))
    for r, d in weights.items(): print(f'weights {r}: sha256 {d}')
    print(f"weights all: sha256 {res['digest']}")
    return res

def rel(a, b):
    if a is None or b is None: return '' if a == b else 'missing'
    if a == b: return '='
    return f'{abs(a - b) / max(abs(a), abs(b), 1e-300):.2e}'

def compare(a: Path, b: Path) -> None:
    import torch
    from safetensors.torch import load_file
    A, B = (json.loads((p / 'drift.json').read_text()) for p in (a, b))
    print(f"{A['commit']} vs {B['commit']}: final weights {'EQUAL' if A['digest'] == B['digest'] else 'differ'}")
    for sa, sb in zip(A['steps'], B['steps']):
        same_rollouts = all(sa.get(k) == sb.get(k) for k in ROLLOUT_KEYS)
        print(f"step {sa['step']}: rollout numbers {'identical' if same_rollouts else 'DIFFER'}")
        for k in (*ROLLOUT_KEYS, *UPDATE_KEYS):
            if sa.get(k) != sb.get(k): print(f'   {k:22s} {fmt(sa.get(k)):>24s} {fmt(sb.get(k)):>24s}  rel {rel(sa.get(k), sb.get(k))}')
    wa, wb = final_weights(a / 'run'), final_weights(b / 'run')
    for r in sorted(set(wa) & set(wb)):
        da, db = load_file(str(wa[r])), load_file(str(wb[r]))
        diff = max((da[k] - db[k]).abs().max().item() for k in da)
        scale = max(da[k].abs().max().item() for k in da)
        print(f'final weights {r}: max |difference| {diff:.3e} (largest |weight| {scale:.3e})')

def committed(run: Path, csv_path: Path, arm: str, seed: str) -> None:
    import csv
    rows = {int(r['step']): r for r in csv.DictReader(open(csv_path)) if r['arm'] == arm and r['seed'] == seed}
    metrics = [json.loads(l) for l in (run / 'metrics.jsonl').read_text().splitlines()]
    cols = {'subtask_accuracy': 'sub/subtask_accuracy', 'main_zero_signal': 'main/zero_signal', 'sub_zero_signal': 'sub/zero_signal',
            'sampled': 'eval/sampled', 'greedy': 'eval/greedy'}
    first, same, differ = None, 0, 0
    for m in metrics:
        r = rows.get(m['step'])
        for c, k in cols.items():
            if r is None or k not in m or r[c] == '': continue
            eq = float(r[c]) == m[k]
            same, differ = same + eq, differ + (not eq)
            if not eq and first is None: first = (m['step'], c, float(r[c]), m[k])
            if c in ('sampled', 'greedy'): print(f"step {m['step']:3d} {c:8s} committed {float(r[c]):.4f}  this run {m[k]:.4f}  {'equal' if eq else 'DIFFERENT'}")
    print(f'{csv_path.name} {arm} seed {seed} vs {run}: {same} values equal, {differ} different; '
          + ('no step differs' if first is None else f'first difference at step {first[0]} ({first[1]}: committed {first[2]!r}, this run {first[3]!r})'))

def full_logits_logprobs(model, ids, attention_mask, temperature=1.0, positions=None):
    "token_logprobs as it was before 5daad18 (git show 279c1d4:mgrpo_ref/policy.py): the LM head over every position, then gather."
    import torch, torch.nn.functional as F
    T = temperature if temperature > 0 else 1.0
    want = (attention_mask if positions is None else positions).bool().clone()
    want[:, 0] = False
    logits = model(input_ids=ids, attention_mask=attention_mask).logits
    z = logits[F.pad(want[:, 1:], (0, 1))].float() / T
    logp_all = torch.log_softmax(z, -1)
    zero = torch.zeros(ids.shape, dtype=z.dtype, device=z.device)
    return zero.masked_scatter(want, logp_all.gather(-1, ids[want][:, None]).squeeze(-1))

def probe(warmstart: Path, commit: str) -> None:
    if os.environ.get('DRIFT_PROBE_CODE') is None:          # run again in a worktree of `commit`, with its code
        sha = git('rev-parse', '--short=7', commit)
        wt = Path(f'/tmp/wt-{sha}')
        if wt.exists(): git('worktree', 'remove', '--force', str(wt))
        git('worktree', 'add', '--detach', str(wt), sha)
        try:
            env = {**os.environ, 'PYTHONPATH': str(wt), 'OMP_NUM_THREADS': '1', 'DRIFT_PROBE_CODE': str(wt)}
            subprocess.run([str(PY), __file__, 'probe', '--warmstart', str(warmstart), '--commit', sha], env=env, check=True)
        finally: git('worktree', 'remove', '--force', str(wt))
        return
    import torch, mgrpo_ref
    assert mgrpo_ref.__file__.startswith(os.environ['DRIFT_PROBE_CODE']), mgrpo_ref.__file__
    print(f'chunked head: token_logprobs of {commit} ({mgrpo_ref.__file__})')
    torch.set_num_threads(1)
    from mgrpo_ref.policy import Policy, token_logprobs
    pol = Policy.load(str(warmstart / 'main'))
    model, V = pol.model, pol.model.config.vocab_size
    g = torch.Generator().manual_seed(0)
    lens = torch.randint(80, 201, (16,), generator=g)
    L = int(lens.max())
    ids = torch.randint(0, V, (16, L), generator=g)
    mask = (torch.arange(L)[None] < lens[:, None]).long()
    ids = ids * mask + pol.pad_id * (1 - mask)
    pos = mask.clone(); pos[torch.arange(L)[None] < (lens[:, None] - 24)] = 0          # the last 24 tokens of each row
    w = torch.randn(16, L, generator=g) * pos
    def run(f):
        model.zero_grad()
        lp = f()
        (lp * w).sum().backward()
        return lp.detach(), [p.grad.clone() for p in model.parameters()]
    full1, gf1 = run(lambda: full_logits_logprobs(model, ids, mask, positions=pos))
    full2, gf2 = run(lambda: full_logits_logprobs(model, ids, mask, positions=pos))
    chunk, gc = run(lambda: token_logprobs(model, ids, mask, positions=pos))
    on = pos.bool().clone(); on[:, 0] = False
    d = (full1 - chunk)[on].abs()
    print(f'{int(on.sum())} loss positions in one micro-batch of 16 sequences (lengths {int(lens.min())}-{int(lens.max())}), vocabulary {V}')
    print(f'full logits twice: log-probs bitwise equal {torch.equal(full1, full2)}, gradients bitwise equal {all(torch.equal(a, b) for a, b in zip(gf1, gf2))}')
    print(f'full logits vs chunked head: log-probs bitwise equal at {int((d == 0).sum())} of {int(on.sum())} positions; '
          f'largest |difference| {d.max().item():.3e} (|log-prob| up to {full1[on].abs().max().item():.3e}), '
          f'largest relative {(d / full1[on].abs().clamp_min(1e-30)).max().item():.3e}')
    gd = max((a - b).abs().max().item() for a, b in zip(gf1, gc)); gs = max(a.abs().max().item() for a in gf1)
    print(f'full logits vs chunked head: gradients bitwise equal {all(torch.equal(a, b) for a, b in zip(gf1, gc))}; '
          f'largest |difference| {gd:.3e} (largest |gradient| {gs:.3e}, relative {gd / gs:.3e})')

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sp = ap.add_subparsers(dest='cmd', required=True)
    r = sp.add_parser('run'); r.add_argument('commit'); r.add_argument('--steps', type=int, default=3); r.add_argument('--tag', default='a'); r.add_argument('--mode', default='mgrpo', help='a mode, or with --experiment an arm')
    r.add_argument('--experiment', action='store_true', help="run the commit's mgrpo-experiment (one arm, seed 0, one worker) instead of mgrpo-train")
    r.add_argument('--warmstart', type=Path, default=Path('/tmp/ws0')); r.add_argument('--out', type=Path, default=Path('/tmp/drift'))
    r.add_argument('--set', default='eval_every=0,eval_questions=8', help="the run's --set ('' for none: the config's evaluation)")
    r.add_argument('--libs', type=Path, default=None, help='a folder of packages put before the venv\'s, e.g. another transformers: pip install --no-deps --target DIR transformers==5.23.0')
    c = sp.add_parser('compare'); c.add_argument('a', type=Path); c.add_argument('b', type=Path)
    cm = sp.add_parser('committed'); cm.add_argument('run', type=Path); cm.add_argument('--csv', type=Path, default=REPO / 'docs' / 'results_steps.csv')
    cm.add_argument('--arm', default='mgrpo'); cm.add_argument('--seed', default='0')
    pr = sp.add_parser('probe'); pr.add_argument('--warmstart', type=Path, default=Path('/tmp/ws0')); pr.add_argument('--commit', default='HEAD')
    a = ap.parse_args()
    if a.cmd == 'run': run(a.commit, a.steps, a.tag, a.warmstart, a.out, a.set, a.mode, a.experiment, a.libs)
    elif a.cmd == 'compare': compare(a.a, a.b)
    elif a.cmd == 'committed': committed(a.run, a.csv, a.arm, a.seed)
    else: probe(a.warmstart, a.commit)
