"The memory model (nbs/24_memory.ipynb) against measured peaks on CPU, and `mgrpo-config --memory`."
import json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow      # 87-117 s of CI's pytest: it runs bench/memory.py's real updates; `make slow` runs it
def test_memory_model_is_within_25_percent_of_measured_peaks():
    "Two cases of bench/memory.py, each in its own process: the real AgentTrainer.update, padded batches, a 32,000- and an 8,000-token vocabulary."
    r = subprocess.run([sys.executable, 'bench/memory.py', '--cases', 'update,update-long-context', '--quick'],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    assert [x['case'] for x in rows] == ['update', 'update-long-context']
    for x in rows: assert abs(x['predicted_mb'] - x['measured_mb']) <= 0.25 * x['measured_mb'], x


def test_mgrpo_config_memory_prints_every_term(fails_in_process):
    exe = Path(sys.executable).parent / 'mgrpo-config'
    r = subprocess.run([exe, 'configs/toy-cpu.json', '--memory', '--checkpoint', 'mgrpo_ref/checkpoints/warmstart'],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    for term in ('weights', 'gradients', 'adamw', 'activations', 'kv_cache', 'update_peak', 'sampling_peak', 'peak per device'):
        assert term in r.stdout, term
    assert '| sampling rows | 64 | 128 |' in r.stdout                 # B x K main rollouts, x D_max sub-episodes
    from mgrpo_ref.cli import mgrpo_config                           # what fails, in this process (the script's function)
    assert 'no model for the main agent' in fails_in_process(mgrpo_config, ['configs/toy-cpu.json', '--memory'])
