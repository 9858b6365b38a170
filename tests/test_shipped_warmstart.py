"The warm start shipped as package data: its files are installed, its weights are the documented ones, and it lands in its documented accuracy band."
import hashlib, json, os, re, subprocess, sys
from pathlib import Path

from mgrpo_ref.warmstart import ROLES, load_policies, shipped_warmstart

README = Path(__file__).parents[1] / 'mgrpo_ref' / 'checkpoints' / 'README.md'

def test_shipped_hashes_match_readme():
    folder = shipped_warmstart()
    listed = dict((p, h) for h, p in re.findall(r'^([0-9a-f]{64})  (\S+)$', README.read_text(), re.M))
    assert sorted(listed) == [f'{r}/model.safetensors' for r in sorted((*ROLES, 'shared'))]
    for path, digest in listed.items():
        assert hashlib.sha256((folder / path).read_bytes()).hexdigest() == digest, path
    assert sorted(load_policies(folder)) == sorted(ROLES)

def test_shipped_lands_in_its_band():
    # the README's documented rollout: 120 test questions x 2 samples at T = 1; it printed 0.133 (0.07-0.20 is about 3 SE)
    exe = Path(sys.executable).parent / 'mgrpo-rollout'
    r = subprocess.run([exe, '--checkpoint', str(shipped_warmstart()), '--questions', '120', '--k', '2', '--json'],
                       capture_output=True, text=True, env={**os.environ, 'OMP_NUM_THREADS': '1'}, timeout=600)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout.strip().splitlines()[-1])
    assert 0.07 <= s['accuracy'] <= 0.20, s['accuracy']
    assert s['format_ok_rate']['main'] >= 0.9 and s['format_ok_rate']['sub'] >= 0.9, s['format_ok_rate']

def test_shipped_is_package_data(tmp_path):
    # a wheel built from the checkout carries the shipped warm start
    r = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '-q', '-w', str(tmp_path),
                        str(Path(__file__).parents[1])], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    import zipfile
    names = zipfile.ZipFile(next(tmp_path.glob('*.whl'))).namelist()
    for role in (*ROLES, 'shared'):
        assert f'mgrpo_ref/checkpoints/warmstart/{role}/model.safetensors' in names
    assert 'mgrpo_ref/checkpoints/warmstart/warmstart.json' in names
