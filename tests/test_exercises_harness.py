"""The exercises check what they claim: for each of the five (1 reward, 2 alignment, 3 advantages, 4 surrogate, 5 step,
the order of the method track), the solution passes every test and the untouched stub fails every one (for want of an
implementation), a plausible wrong solution fails at least one, and the package's own alignment passes the alignment tests."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS, STUBS = ROOT / 'exercises' / 'solutions.py', ROOT / 'exercises' / 'mgrpo_exercises.py'
EXERCISES = ('reward', 'alignment', 'advantages', 'surrogate', 'step')   # exercises 1 to 5; each test is named test_<exercise>_...


class Outcomes:
    "A pytest plugin that keeps each test's outcome: PASSED, or FAILED / ERROR with the text of what was raised."
    def __init__(self): self.seen = {}
    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split('::')[-1]
        if report.failed: self.seen[name] = f"{'FAILED' if report.when == 'call' else 'ERROR'} {name} - {report.longreprtext[-2000:]}"
        elif report.when == 'call' and name not in self.seen: self.seen[name] = f'PASSED {name}'


def outcomes(path: Path) -> dict[str, str]:
    """Each exercise test's outcome (PASSED, FAILED or ERROR, and why), run against the exercise file `path` by pytest
    in this process (its `ex` fixture reads MGRPO_EXERCISES in each session), as `pytest tests/exercises` runs them."""
    got = Outcomes()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv('MGRPO_EXERCISES', str(path))
        code = pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', str(ROOT / 'tests' / 'exercises')], plugins=[got])
    assert code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), code
    return got.seen


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
    ('reward', 'no format gate', 'if not format_ok: return 0.0', 'if False: return 0.0'),
    ('reward', 'no expert term by default (beta_exp = 0)', 'def sub_reward(format_ok, main_correct, expert, beta_fmt=0.1, beta_out=0.9, beta_exp=0.5)',
     'def sub_reward(format_ok, main_correct, expert, beta_fmt=0.1, beta_out=0.9, beta_exp=0.0)'),
    ('alignment', 'drops the same sub-trajectories whatever the seed', 'rng.sample(subs, d_max)', 'subs[:d_max]'),
    ('alignment', 'fills from every sub-trajectory of the question, dropped ones too', 'for key, chosen in slots.items():',
     'for key, chosen in [(tuple(k), [tuple(s) for s in ss]) for k, ss in rollouts]:'),
    ('alignment', 'fills from what other questions kept too', 'pool = kept.get(key[:2], [])', 'pool = [s for v in kept.values() for s in v]'),
    ('advantages', 'the sample std (ddof = 1)', '/ len(rs)) ** 0.5', '/ max(len(rs) - 1, 1)) ** 0.5'),
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


class PackageAlignment:
    "The package's alignment (align_to_dmax, mode fill_from_query) behind the exercise's interface: the oracle of the alignment tests."
    calls = []                                            # the counts of every call: which cases had fills, drops

    @classmethod
    def align_rollouts(cls, rollouts, d_max, seed=0):
        from mgrpo_ref.alignment import align_to_dmax
        al = align_to_dmax([(tuple(k), [tuple(s) for s in subs]) for k, subs in rollouts], d_max, 'fill_from_query', seed=seed)
        cls.calls.append(al.counts)
        out = {tuple(k): [] for k, _ in rollouts}
        for s, rollout in zip(al.slots, al.rollout): out[rollout].append(s)
        return out


def test_the_packages_alignment_passes_the_alignment_tests():
    checks = load(ROOT / 'tests' / 'exercises' / 'test_exercises.py', 'exercise_checks')
    names = [n for n in dir(checks) if n.startswith('test_alignment_')]
    assert 'test_alignment_fills_from_what_the_question_kept' in names, names
    PackageAlignment.calls.clear()
    for name in names: getattr(checks, name)(PackageAlignment)
    # the rules were checked on cases where the package filled slots of a question that also dropped sub-trajectories,
    # and on the by-hand case of a fill
    assert sum(1 for c in PackageAlignment.calls if c['filled'] and c['dropped']) > 50, PackageAlignment.calls[:5]
    rollouts = [((0, 'q', 0), [(0, 'q', 0, i) for i in range(4)]), ((0, 'q', 1), [])]
    out = PackageAlignment.align_rollouts(rollouts, 1, seed=0)
    assert PackageAlignment.calls[-1]['filled'] == 1 and out[(0, 'q', 1)] == out[(0, 'q', 0)], out
    try: checks.check_alignment(rollouts, 1, {**out, (0, 'q', 1): [s for s in rollouts[0][1] if s not in out[(0, 'q', 0)]][:1]})
    except AssertionError: pass
    else: raise AssertionError('check_alignment accepts a fill taken from a dropped sub-trajectory')
