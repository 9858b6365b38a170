import os

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('HF_DATASETS_OFFLINE', '1')

import pytest

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


def pytest_collection_modifyitems(config, items):
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


@pytest.fixture()
def fails_in_process():
    """`(command, args) -> message`: the message of the SystemExit that `command` (a console script's function) raises on
    the command line `args`, parsed as its script parses them, run from the repository root without a new interpreter."""
    import inspect
    from pathlib import Path
    from fastcore.script import anno_parser
    def fails(command, args: list[str]) -> str:
        params = inspect.signature(command.__wrapped__).parameters
        kw = {k: v for k, v in vars(anno_parser(command.__wrapped__).parse_args(args)).items() if k in params}   # not fastcore's own --pdb, --xtra
        cwd = os.getcwd(); os.chdir(Path(__file__).parents[1])
        try:
            with pytest.raises(SystemExit) as e: command(**kw)
        finally: os.chdir(cwd)
        return str(e.value.code)
    return fails


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
