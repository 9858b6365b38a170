"The mgrpo-train console script, run as a user would: validation before any work, a tiny run, resume."
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mgrpo_ref.cli import mgrpo_train

EXE = shutil.which('mgrpo-train') or str(Path(sys.executable).parent / 'mgrpo-train')
ROOT = Path(__file__).parent.parent
SHIPPED = ROOT / 'mgrpo_ref' / 'checkpoints' / 'warmstart'   # the shipped tiny warm start: a run from it needs no SFT first (test_tiny_run_and_resume makes one)
TINY = 'questions_per_step=2,rollout.k=2,rollout.max_turns_main=3,rollout.max_turns_sub=3,eval_questions=2,eval_samples=1,checkpoint_every=1'


def run(*args, exe=(EXE,)):
    return subprocess.run([*exe, *args], capture_output=True, text=True, timeout=600, cwd=ROOT)


def test_bad_input_fails_before_any_work(tmp_path, fails_in_process):
    (tmp_path / 'bad.json').write_text(json.dumps({'rollout': {'k': 'eight'}}))
    cases = [(['--config', str(tmp_path / 'bad.json')], "TrainConfig.rollout.k must be int, got 'eight'"),
             (['--set', 'main_optim.lr=fast'], "TrainConfig.main_optim.lr must be a number, got 'fast'"),
             (['--set', 'd_max=0'], 'TrainConfig.d_max must be an integer >= 1, got 0'),
             (['--set', 'd_max=0', '--set', 'rollout.k=4'], 'TrainConfig.d_max must be an integer >= 1, got 0'),   # a second --set adds, not replaces
             (['--mode', 'ppo'], "TrainConfig.mode must be one of"),
             (['--set', 'rollout.k=1'], 'TrainConfig.rollout.k (K) must be >= 2'),
             (['--set', 'learning_rate=1'], "unknown TrainConfig fields ['learning_rate']"),
             (['--checkpoint', str(tmp_path / 'nope')], 'is not a folder'),
             (['--resume'], '--resume: no checkpoint in'),
             (['--set', 'models.main=/nowhere/model'], "TrainConfig.models.main: cannot load '/nowhere/model'"),
             (['--set', 'data.retriever=x'], "unknown TrainConfig.data fields ['retriever']"),
             (['--dataset', 'squad:x.jsonl'], "DataConfig.dataset must be 'world' or LOADER:PATH"),
             (['--dataset', 'gaia:' + str(tmp_path / 'none.jsonl')], 'no benchmark file at'),
             (['--config', 'configs/toy-cpu.json', '--set', 'accel.mixed_precision=fp16'], "AccelConfig.mixed_precision must be 'no' or 'bf16'")]
    for i, (args, msg) in enumerate(cases):
        out = tmp_path / 'run'
        if i < 1:                                         # as a user runs it: the console script's exit status and stderr
            r = run(*args, '--out', str(out))
            assert r.returncode != 0 and msg in r.stderr, (args, r.stderr[-500:])
        else: assert msg in fails_in_process(mgrpo_train, [*args, '--out', str(out)]), args   # the same parser and function, in this process
        assert not out.exists(), args                     # failed before the warm start wrote anything


def test_tiny_run_and_resume(tmp_path, runs_in_process):
    "A tiny run as a user starts it (its own process), then resumed in this process (the same parser and function)."
    out = tmp_path / 'run'
    r = run('--steps', '2', '--warmstart-steps', '3', '--set', TINY, '--out', str(out), '--quiet')
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(r.stdout.strip().splitlines()[-1])
    assert {'eval_accuracy_before', 'eval_accuracy_after', 'steps', 'seconds', 'mode', 'seed'} <= set(s)
    assert s['mode'] == 'mgrpo' and s['steps'] == 2
    assert s['eval_paired']['greedy']['questions'] == 2 and {'mean', 'low', 'high', 'up', 'down'} <= set(s['eval_paired']['sampled'])   # before and after, question by question
    from mgrpo_ref.paired import gain_words                                                  # and in words, before the summary
    assert f"greedy accuracy {s['eval_greedy_before']:.3f} -> {s['eval_greedy_after']:.3f}: {gain_words(s['eval_paired']['greedy'])}" in r.stdout
    for f in ('metrics.jsonl', 'summary.json', 'curves.png', 'config.json', 'checkpoint/state.json', 'warmstart/main/config.json'):
        assert (out / f).is_file(), f
    runs_in_process(mgrpo_train, ['--steps', '3', '--set', TINY, '--out', str(out), '--resume', '--quiet'])
    steps = [json.loads(l)['step'] for l in (out / 'metrics.jsonl').read_text().splitlines()]
    assert steps == [0, 1, 2, 3]


def test_a_used_output_folder_is_refused_before_any_work(tmp_path, fails_in_process):
    (tmp_path / 'metrics.jsonl').write_text('{"step": 0}\n')
    assert 'already holds a run (metrics.jsonl)' in fails_in_process(mgrpo_train, ['--out', str(tmp_path)])   # the script's parser and function
    assert not (tmp_path / 'warmstart').exists()


def test_config_files_load_and_toy_cpu_is_the_defaults():
    from mgrpo_ref.config import TrainConfig
    configs = {p.name: TrainConfig.from_dict(json.loads(p.read_text())) for p in (ROOT / 'configs').glob('*.json')}
    assert configs['toy-cpu.json'] == TrainConfig()
    from dataclasses import asdict                    # and every field is written out, so a new field shows up in the file
    assert json.loads((ROOT / 'configs/toy-cpu.json').read_text()) == json.loads(json.dumps(asdict(TrainConfig())))
    gpu = configs['qwen3-gpu.json']                   # the published hyperparameters
    assert (gpu.rollout.k, gpu.main_optim.lr, gpu.sub_optim.lr, gpu.loss.eps_low, gpu.loss.eps_high, gpu.loss.beta_kl) == (8, 1e-6, 1e-6, 0.2, 0.28, 0.0)
    assert gpu.rollout.main_sampling.temperature == gpu.rollout.sub_sampling.temperature == 1.0
    assert gpu.models.main.startswith('Qwen/Qwen3') and gpu.accel.mixed_precision == 'bf16'
    real = configs['smollm2-cpu.json']                 # the real model: adapters, turns of 40 tokens
    assert real.models.lora is not None and real.rollout.main_sampling.max_new_tokens == real.rollout.sub_sampling.max_new_tokens == 40
    from mgrpo_ref.config import from_plain             # configs/warmstart/ holds WarmStartConfig fields
    from mgrpo_ref.warmstart import WarmStartConfig
    warm = {p.name: from_plain(WarmStartConfig, json.loads(p.read_text()), p.name) for p in (ROOT / 'configs/warmstart').glob('*.json')}
    assert warm['smollm2.json'].base == 'smollm2'


def summary_of(r) -> dict:
    "The summary a command prints last: from a process's result, or from the (stdout, stderr) of conftest.runs_in_process."
    if isinstance(r, tuple): return json.loads(r[0].strip().splitlines()[-1])
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_toy_cpu_config_runs_two_steps(tmp_path, runs_in_process):
    s = summary_of(runs_in_process(mgrpo_train, ['--config', 'configs/toy-cpu.json', '--steps', '2', '--checkpoint', str(SHIPPED),
                                                 '--set', TINY, '--out', str(tmp_path / 'run'), '--quiet']))
    assert s['steps'] == 2 and json.loads((tmp_path / 'run' / 'config.json').read_text())['data']['dataset'] == 'world'


def test_script_runs_two_steps_with_bf16_autocast_and_gradient_checkpointing(tmp_path):
    "train_mgrpo.py, the entry point for torchrun, with the GPU config's precision options (on the CPU)."
    out = tmp_path / 'run'
    s = summary_of(run('--steps', '2', '--checkpoint', str(SHIPPED), '--out', str(out), '--quiet',
                       '--set', TINY + ',accel.mixed_precision=bf16,accel.gradient_checkpointing=true',
                       exe=(sys.executable, str(ROOT / 'train_mgrpo.py'))))
    assert s['steps'] == 2
    m = [json.loads(l) for l in (out / 'metrics.jsonl').read_text().splitlines()][-1]
    assert m['main/version'] >= 1 or m['main/skipped'] == 'zero_signal', m


def test_benchmark_file_with_a_retrieval_server(tmp_path, world, warm_policies, runs_in_process):
    "--dataset reads a WebWalkerQA-format file and --retriever-url sends search and visit to a /retrieve server."
    from mgrpo_ref.tools import serve_retrieval
    from mgrpo_ref.warmstart import save_policies
    start = save_policies({r: warm_policies[r] for r in ('main', 'sub')}, tmp_path / 'warm')
    rows = [{'Question': q.question, 'Answer': q.answer, 'Root_Url': 'https://example.org', 'Info': {'Hop': 'multi-source'}}
            for q in world.questions['train'][:12]]
    (tmp_path / 'ww.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
    (tmp_path / 'test.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows[:4]))
    server = serve_retrieval(world.pages)
    try:
        s = summary_of(runs_in_process(mgrpo_train, ['--dataset', f'webwalkerqa:{tmp_path}/ww.jsonl', '--retriever-url', server.url, '--steps', '2',
                                                     '--checkpoint', str(start), '--set', TINY + f',data.eval_dataset=webwalkerqa:{tmp_path}/test.jsonl',
                                                     '--out', str(tmp_path / 'run'), '--quiet']))
    finally: server.shutdown()
    assert s['steps'] == 2 and s['eval_accuracy_after'] is not None
    m = [json.loads(l) for l in (tmp_path / 'run' / 'metrics.jsonl').read_text().splitlines()]
    assert m[-1]['eval/questions'] == 2 and sum(x['sub/episodes'] for x in m[1:]) > 0    # the sub-agent searched through the server


def test_mgrpo_config_checks_a_file_and_prints_it_whole(tmp_path, monkeypatch, runs_in_process):
    "In this process, through the script's parser and function (tests/test_memory.py starts the console script)."
    from mgrpo_ref.cli import mgrpo_config
    out, _ = runs_in_process(mgrpo_config, ['configs/toy-cpu.json', '--set', 'rollout.k=4'])
    assert json.loads(out)['rollout']['k'] == 4 and json.loads(out)['accel']['cpu'] is False
    (tmp_path / 'bad.json').write_text(json.dumps({'d_max': 0}))
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit, match=re.escape('TrainConfig.d_max must be an integer >= 1, got 0')): mgrpo_config(str(tmp_path / 'bad.json'))
    with pytest.raises(SystemExit, match=re.escape("TrainConfig.data.dataset: no file at 'data/webwalkerqa_silver.jsonl'")):
        mgrpo_config('configs/qwen3-gpu.json')                        # its data files are the user's to fetch


def test_gpu_benchmark_runs_its_code_path_on_the_cpu(tmp_path):
    "bench/gpu.py as its own process (its Accelerator takes bf16, which accelerate's process-wide state fixes once per process)."
    r = run('bench/gpu.py', '--size', 'tiny', '--steps', '2', '--out', str(tmp_path),
            '--set', 'accel.cpu=true,accel.main_device=null,accel.sub_device=null,questions_per_step=2,rollout.k=2',
            exe=(sys.executable,))
    out = summary_of(r)
    assert out['mixed_precision'] == 'bf16' and out['gradient_checkpointing'] is True
    assert out['generation_tok_s'] > 0 and out['training_tok_s'] > 0 and 0 < out['mfu'] < 1
