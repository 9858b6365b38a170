"The exercises check what they claim: the solutions pass every exercise test, and the untouched stubs fail every one."
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_exercises(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', str(ROOT / 'tests' / 'exercises')],
                          capture_output=True, text=True, timeout=600, env={**os.environ, 'MGRPO_EXERCISES': str(path)})


def test_solutions_pass_and_stubs_fail():
    ok = run_exercises(ROOT / 'exercises' / 'solutions.py')
    assert ok.returncode == 0 and '7 passed' in ok.stdout, ok.stdout[-2000:]
    stubs = run_exercises(ROOT / 'exercises' / 'mgrpo_exercises.py')
    assert stubs.returncode == 1 and '7 failed' in stubs.stdout and 'NotImplementedError' in stubs.stdout, stubs.stdout[-2000:]
