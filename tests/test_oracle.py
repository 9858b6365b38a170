"Oracle agents: clean accuracy 1.0, smooth degradation with noise, reproducibility."
import pytest

from mgrpo_ref.oracle import OracleNoise, OracleSetup, evaluate, noise_sweep, solve
from mgrpo_ref.world import build_world


@pytest.mark.parametrize('seed', [0, 1])
def test_clean_oracles_solve_everything(seed):
    w = build_world(seed=seed)
    setup = OracleSetup.for_world(w)
    for system in ('mgrpo', 'single'):
        for split in ('train', 'test'):
            r = evaluate(w, split, system, setup=setup)
            assert r['accuracy'] == 1.0 and r['format_ok'] == 1.0, (system, split, r)


def test_noise_degrades_smoothly(world, setup):
    df = noise_sweep(world, values=(0, 0.3, 0.6, 1.0), limit=60, setup=setup)
    for (system, agent, knob), g in df.groupby(['system', 'agent', 'knob']):
        acc = g.sort_values('value').accuracy.tolist()
        assert acc[0] == 1.0 and acc[-1] <= 0.5, (system, knob, acc)
        assert all(b <= a + 0.1 for a, b in zip(acc, acc[1:])), (system, knob, acc)


def test_first_result_is_right_about_as_often_as_chance(world, setup):
    "Visiting the first shuffled result finds the gold page about 1/(results shown) of the time per hop."
    one_hop = [q for q in world.questions['test'] if q.hops == 1]
    eps = [solve(q, setup, 'mgrpo', sub_noise=OracleNoise(first_result=1.0)) for q in one_hop]
    acc = sum(e.output == q.answer for e, q in zip(eps, one_hop)) / len(one_hop)
    assert 0.05 < acc < 0.45, acc


def test_solve_is_reproducible(world, setup):
    noise = OracleNoise(first_result=0.5, skip_visit=0.2)
    for q in world.questions['test'][:10]:
        a = solve(q, setup, 'mgrpo', sub_noise=noise, seed=3)
        b = solve(q, setup, 'mgrpo', sub_noise=noise, seed=3)
        assert a.messages == b.messages and [s.messages for s in a.subs] == [s.messages for s in b.subs]


def test_turn_caps_end_episodes(world):
    setup = OracleSetup.for_world(world, max_turns_main=2)
    q = next(q for q in world.questions['test'] if q.hops == 3)
    ep = solve(q, setup)
    assert not ep.format.ok and 'never finished' in ep.format.error and ep.output is None


def test_bad_noise_is_refused():
    with pytest.raises(ValueError, match=r'OracleNoise.skip_visit must be a probability in \[0, 1\], got -0.1'):
        OracleNoise(skip_visit=-0.1)
