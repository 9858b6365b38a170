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
