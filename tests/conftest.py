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
    "Tiny main, sub and single policies after a short supervised warm start: some rollouts well-formed, some not."
    from mgrpo_ref.warmstart import WarmStartConfig, warm_start
    policies, _ = warm_start(world, WarmStartConfig(questions=48, steps_main=40, steps_sub=120, steps_single=40, batch_size=8))
    return policies


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
