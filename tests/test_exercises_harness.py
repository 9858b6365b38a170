"""The exercises check what they claim: for each of the five, the solution passes every test and the untouched stub
fails every one (for want of an implementation), and a plausible wrong solution fails at least one."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS, STUBS = ROOT / 'exercises' / 'solutions.py', ROOT / 'exercises' / 'mgrpo_exercises.py'
EXERCISES = ('advantages', 'alignment', 'reward', 'surrogate', 'step')   # each test is named test_<exercise>_...


def outcomes(path: Path) -> dict[str, str]:
    "The short-summary line of each exercise test (PASSED, FAILED or ERROR, and why), run against the exercise file `path`."
    r = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-rA', '-p', 'no:cacheprovider', str(ROOT / 'tests' / 'exercises')],
                       capture_output=True, text=True, timeout=300, env={**os.environ, 'MGRPO_EXERCISES': str(path), 'COLUMNS': '300'})
    lines = [l for l in r.stdout.splitlines() if l.startswith(('PASSED ', 'FAILED ', 'ERROR '))]
    return {l.split()[1].split('::')[-1]: l for l in lines}


def test_solutions_pass_and_stubs_fail_every_exercise():
    solved, stubbed = outcomes(SOLUTIONS), outcomes(STUBS)
    assert solved.keys() == stubbed.keys() and len(solved) >= 11, (list(solved), list(stubbed))
    assert {name.split('_')[1] for name in solved} == set(EXERCISES), list(solved)      # every test belongs to an exercise
    for exercise in EXERCISES:
        tests = [name for name in solved if name.startswith(f'test_{exercise}_')]
        assert tests, exercise
        for name in tests:
            assert solved[name].startswith('PASSED'), solved[name]
            assert stubbed[name].startswith('FAILED') and 'NotImplementedError' in stubbed[name], stubbed[name]


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


WRONG = [   # (exercise, what is wrong, a line of solutions.py, what replaces it)
    ('advantages', 'the sample std (ddof = 1)', '/ len(rs)) ** 0.5', '/ max(len(rs) - 1, 1)) ** 0.5'),
    ('alignment', 'drops the same sub-trajectories whatever the seed', 'rng.sample(subs, d_max)', 'subs[:d_max]'),
    ('reward', 'no format gate', 'if not format_ok: return 0.0', 'if False: return 0.0'),
    ('surrogate', 'a symmetric clip', '1 + eps_high)', '1 + eps_low)'),
    ('step', 'groups per main rollout', '[s[:2] for s in filled]', '[s[:3] for s in filled]'),
    ('step', 'counts a duplicated slot once', 'if s is not None]', 'if s is not None]; filled = list(dict.fromkeys(filled))'),
    ('step', "ignores the main rollout's outcome", "records[key[:3]]['correct']", '0.0'),
    ('step', 'leaves out the rollouts that never delegated', 'children = {tuple(key): [] for key in records}',
     'children = {tuple(key): [] for key in records if records[key]["d_k"]}'),
]


@pytest.mark.parametrize('exercise,why,old,new', WRONG, ids=[f'{w[0]}: {w[1]}' for w in WRONG])
def test_a_wrong_solution_fails(tmp_path, exercise, why, old, new):
    src = SOLUTIONS.read_text()
    assert src.count(old) == 1, old
    (tmp_path / 'wrong.py').write_text(src.replace(old, new))
    wrong, checks = load(tmp_path / 'wrong.py', 'wrong_solution'), load(ROOT / 'tests' / 'exercises' / 'test_exercises.py', 'exercise_checks')
    failed = []
    for name in [n for n in dir(checks) if n.startswith(f'test_{exercise}_')]:
        try: getattr(checks, name)(wrong)
        except Exception: failed.append(name)             # a failed check, or a crash: the test fails either way
    assert failed, f'no test of {exercise!r} catches a solution that {why}'
