import os
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('HF_DATASETS_OFFLINE', '1')
# ATEN_CPU_CAPABILITY=default (or avx2) holds torch's own kernels below an AVX-512 CPU, as a check on a slower machine
# does; oneDNN must be held with them, or torch 2.13's bfloat16 attention on a CPU with AVX-512 BF16 or AMX fails with
# "pack_vnni2 is only supported when avx512 is supported" (torch asks oneDNN what the CPU has, then ATen what it may
# use). A CPU without AVX-512 has neither, so this only makes the held machine consistent, as `make cpu-guard` does.
if os.environ.get('ATEN_CPU_CAPABILITY', '').lower() in ('default', 'avx2'):
    os.environ.setdefault('ONEDNN_MAX_CPU_ISA', 'AVX2')

import pytest
from hypothesis import settings

ROOT = Path(__file__).parents[1]

# Property tests draw their examples from a seed fixed per test (derandomize): the suite passes or fails alike on every run
# and machine, never by the luck of a draw. To search for new failing examples, as when changing the code a property covers:
# HYPOTHESIS_PROFILE=explore pytest tests/test_advantages.py (fresh random draws on every run).
settings.register_profile('fixed', derandomize=True)
settings.register_profile('explore', derandomize=False)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'fixed'))

from mgrpo_ref.world import build_world
from mgrpo_ref.oracle import OracleSetup


@pytest.fixture(scope='session')
def world():
    return build_world(seed=0)


@pytest.fixture(scope='session')
def setup(world):
    return OracleSetup.for_world(world)


def pytest_addoption(parser):
    parser.addoption('--runslow', action='store_true', default=False, help='also run tests marked slow')


# The files whose tests take longest in all (`--durations`, docs/timings.md), slowest first. `make test` runs pytest with
# `--dist loadfile --no-loadscope-reorder`, so its two workers take whole files in collection order: started first,
# these end before the short files do, instead of one worker finishing a long file begun last while the other waits.
# (xdist's own order, most tests first, starts test_course.py's 117 quick checks first and these late.) Order only.
SLOWEST_FILES = ('test_servers.py', 'test_train_cli.py', 'test_real_model.py', 'test_warmstart.py', 'test_bench.py',
                 'test_ddp.py', 'test_experiments.py', 'test_reproducible.py')
assert all((Path(__file__).parent / name).is_file() for name in SLOWEST_FILES), 'a file of SLOWEST_FILES was renamed'


def pytest_collection_modifyitems(config, items):
    first = {name: i for i, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: first.get(item.path.name, len(first)))   # stable: every other file, and each file's own order, kept
    if config.getoption('--runslow'): return
    skip = pytest.mark.skip(reason='slow: run with --runslow')
    for item in items:
        if 'slow' in item.keywords: item.add_marker(skip)


@pytest.fixture(scope='session')
def policy(world):
    from mgrpo_ref.policy import tiny_policy
    return tiny_policy(world, seed=0)


@pytest.fixture(scope='session')
def warm_policies(world):
    "Tiny main, sub and single policies warm-started on the oracle's demonstrations: the shipped warm start (its rollouts are some well-formed, some not, some right), read from disk instead of fine-tuned anew in every worker."
    from mgrpo_ref.warmstart import load_policies, shipped_warmstart
    return load_policies(shipped_warmstart(), ('main', 'sub', 'single'))


@pytest.fixture()
def redis_server(tmp_path):
    "A real redis-server on a free loopback port, persisting to tmp_path, stopped after the test."
    from mgrpo_ref.store import LocalRedis
    with LocalRedis(tmp_path / 'redis') as server:
        yield server


def _command_args(command, args: list[str]) -> dict:
    "The keyword arguments `command` (a console script's function) gets on the command line `args`, parsed as its script parses them."
    import inspect
    from fastcore.script import anno_parser
    params, pos = inspect.signature(command.__wrapped__).parameters, inspect.getclosurevars(command).nonlocals.get('pos')   # call_parse(pos=...)
    return {k: v for k, v in vars(anno_parser(command.__wrapped__, pos=pos).parse_args(args)).items() if k in params}   # not fastcore's own --pdb, --xtra


@contextmanager
def _as_a_command():
    "Run from the repository root; the torch threads, the working folder and torch's random state as they were, after."
    import torch
    cwd, threads = os.getcwd(), torch.get_num_threads()
    os.chdir(ROOT)
    try:
        with torch.random.fork_rng(devices=[]): yield
    finally: os.chdir(cwd); torch.set_num_threads(threads)


@pytest.fixture()
def fails_in_process():
    """`(command, args) -> message`: the message of the SystemExit that `command` (a console script's function) raises on
    the command line `args`, parsed as its script parses them, run from the repository root without a new interpreter."""
    def fails(command, args: list[str]) -> str:
        kw = _command_args(command, args)
        with _as_a_command(), pytest.raises(SystemExit) as e: command(**kw)
        return str(e.value.code)
    return fails


@pytest.fixture()
def runs_in_process(capfd):
    """`(command, args) -> (stdout, stderr)`: what `command` (a console script's function) prints on the command line `args`,
    parsed as its script parses them, run from the repository root in this process. A new interpreter costs its imports
    (torch and transformers: about 6 s of CPU on a slow 2-core machine) before any work; the tests that run a command again,
    or run a second command of a kind, run it here. Every console script is checked to be installed and to load
    (test_package), and each training, experiment, server and rollout command still starts as a user starts it in some test."""
    def runs(command, args: list[str]) -> tuple[str, str]:
        kw = _command_args(command, args)
        capfd.readouterr()
        with _as_a_command(): command(**kw)
        out = capfd.readouterr()
        return out.out, out.err
    return runs


# Two runs that should train alike, compared after AdamW. Summing a gradient in another order (two processes instead of
# one, shards, another CPU's kernels) moves the few weights whose gradient is near 0 by up to a share of lr, since Adam's
# first steps divide a gradient by its own size: a largest-difference bound is then a tolerance tuned to one machine
# (on an Intel Xeon under ATEN_CPU_CAPABILITY=default, DDP against one process: 18 of 383,760 sub-agent weights apart by
# more than 1e-6, the largest by 4.4e-5 = 0.15 lr, where an AMD EPYC gave 1.1e-5). A wrong gradient (a shard missing or
# counted twice, another batch) changes the update of most weights instead. So the measure is the distance between the
# two runs relative to how far training moved them: 1.7e-4 in that case, and of order 1 for a wrong gradient.
TRAINED_ALIKE = 1e-2


def apart(got, want, start) -> float:
    "||got - want|| / ||want - start|| for flattened parameters: two runs' distance relative to the update (TRAINED_ALIKE)."
    return float((got - want).norm() / (want - start).norm())
