"Trackers (TrainConfig.report_to): TensorBoard event files read back with TensorBoard's own reader, W&B offline runs, a missing package."
import copy, json
from pathlib import Path

import pytest

from mgrpo_ref import config
from mgrpo_ref.config import TrainConfig
from mgrpo_ref.rollout import RolloutConfig
from mgrpo_ref.trainer import Trainer, tracker_values


def small_cfg(**kw) -> TrainConfig:
    base = dict(steps=2, questions_per_step=2, rollout=RolloutConfig(k=2, max_turns_main=4, max_turns_sub=3), eval_every=0,
                eval_questions=2, eval_samples=1, checkpoint_every=0, run='tracked')
    return TrainConfig(**{**base, **kw})


def tb_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    "Every scalar of the TensorBoard run in `folder`: tag -> [(step, value)], read by TensorBoard's EventAccumulator."
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    ea = EventAccumulator(str(folder)); ea.Reload()
    return {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()['scalars']}


def test_tensorboard_holds_every_step_metric_under_trl_names(world, warm_policies, tmp_path):
    pytest.importorskip('tensorboard')
    summary = Trainer(world, small_cfg(report_to='tensorboard'), copy.deepcopy(warm_policies), out=tmp_path).fit(progress=False)
    assert summary['steps'] == 2
    got = tb_scalars(tmp_path / 'tensorboard' / 'tracked')
    lines = [json.loads(l) for l in (tmp_path / 'metrics.jsonl').read_text().splitlines()]
    assert [m['step'] for m in lines] == [0, 1, 2]
    for m in lines:                                         # each line's numbers, at its step, to float32 precision
        for k, v in tracker_values(m).items():
            (step, value), = [(s, x) for s, x in got[k] if s == m['step']]
            assert value == pytest.approx(v, rel=1e-6, abs=1e-9), k
    assert {'main/frac_reward_zero_std', 'sub/frac_reward_zero_std', 'main/clip_ratio/region_mean', 'eval/sampled'} <= set(got)
    assert not any(k.endswith('/zero_signal') or k.endswith('/kl_ref') for k in got)          # TRL's names, not ours
    assert json.loads((tmp_path / 'metrics.jsonl').read_text().splitlines()[1])['main/zero_signal'] is not None   # the file keeps ours
    hparams, = (tmp_path / 'tensorboard' / 'tracked').glob('*/hparams.yml')                    # the config, logged once
    assert 'rollout.k: 2' in hparams.read_text() and 'report_to: tensorboard' in hparams.read_text()


def test_wandb_writes_an_offline_run(world, warm_policies, tmp_path, monkeypatch):
    pytest.importorskip('wandb')
    monkeypatch.setenv('WANDB_SILENT', 'true')
    Trainer(world, small_cfg(steps=1, report_to='wandb'), copy.deepcopy(warm_policies), out=tmp_path).fit(progress=False)
    run, = (tmp_path / 'wandb').glob('offline-run-*/run-*.wandb')    # `wandb sync` uploads it later
    data = run.read_bytes()
    assert b'main/frac_reward_zero_std' in data and b'sub/reward' in data


def test_a_tracker_without_its_package_fails_before_any_rollout(world, warm_policies, tmp_path, monkeypatch):
    monkeypatch.setitem(config.TRACKERS, 'tensorboard', ('no_such_package_for_mgrpo',))
    with pytest.raises(ValueError, match=r"TrainConfig.report_to = 'tensorboard': tensorboard needs the package 'no_such_package_for_mgrpo'.*mgrpo-ref\[track\]"):
        Trainer(world, small_cfg(report_to='tensorboard'), copy.deepcopy(warm_policies), out=tmp_path)
    assert not any(tmp_path.iterdir())                    # nothing ran, nothing written
    with pytest.raises(ValueError, match='needs a run folder'):
        Trainer(world, small_cfg(report_to='tensorboard'), copy.deepcopy(warm_policies))
