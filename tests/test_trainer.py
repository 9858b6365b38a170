"The co-located trainer: config validation, the seam between the sides, skipped updates, every mode, exact resume."
import copy, json, math

import pytest
import torch

from mgrpo_ref.rollout import RolloutConfig, SubRequest
from mgrpo_ref.store import MemoryStore
from mgrpo_ref.config import OptimConfig, TrainConfig
from mgrpo_ref.learner import AgentTrainer
from mgrpo_ref.trainer import Trainer
from mgrpo_ref.loss import LossConfig
from mgrpo_ref.rewards import RewardConfig


def small_cfg(**kw):
    base = dict(steps=1, questions_per_step=3, rollout=RolloutConfig(k=3, max_turns_main=4, max_turns_sub=3, max_turns_single=6),
                eval_every=0, eval_questions=4, eval_samples=1, checkpoint_every=0, main_optim=OptimConfig(lr=3e-3),
                sub_optim=OptimConfig(lr=3e-3))
    return TrainConfig(**{**base, **kw})


def params(policy):
    return torch.cat([p.detach().flatten().clone() for p in policy.model.parameters()])


@pytest.fixture
def warm(warm_policies):
    return {r: copy.deepcopy(p) for r, p in warm_policies.items()}


@pytest.mark.parametrize('kw, msg', [
    (dict(mode='ppo'), 'TrainConfig.mode must be one of'),
    (dict(d_max=0), 'TrainConfig.d_max must be an integer >= 1, got 0'),
    (dict(rollout=RolloutConfig(k=1)), 'TrainConfig.rollout.k (K) must be >= 2'),
    (dict(questions_per_step=0), 'TrainConfig.questions_per_step must be >= 1, got 0'),
    (dict(align_mode='ragged'), "TrainConfig.align_mode must be 'fill_from_query' or 'empty'"),
])
def test_bad_config_fails_before_anything_runs(kw, msg):
    with pytest.raises(ValueError) as e: TrainConfig(**kw)
    assert msg in str(e.value)


def test_missing_policy_or_checkpoint_is_named(world, policy, tmp_path):
    with pytest.raises(ValueError, match=r"mode 'mgrpo' needs policies for \['main', 'sub'\], missing \['sub'\]"):
        Trainer(world, small_cfg(), {'main': policy})
    with pytest.raises(FileNotFoundError, match='no checkpoint to resume from'):
        Trainer(world, small_cfg(), {'main': policy, 'sub': policy}, out=tmp_path, resume=True)
    (tmp_path / 'metrics.jsonl').write_text('{"step": 0}\n')               # a fresh run never appends to another run
    with pytest.raises(FileExistsError, match='already holds a run'):
        Trainer(world, small_cfg(), {'main': policy, 'sub': policy}, out=tmp_path)


class SpyStore(MemoryStore):
    def __init__(self):
        super().__init__(); self.written = []
    def put_records(self, run, step, records):
        self.written.append(records); super().put_records(run, step, records)


def test_sides_exchange_only_statistics(world, warm):
    "The main side never holds sub-agent tokens and the sub side never holds main-agent tokens."
    store = SpyStore()
    tr = Trainer(world, small_cfg(), warm, store=store)
    seen = {'main': [], 'sub': []}
    for role, t in tr.trainers.items():
        orig = t.update
        t.update = lambda trajs, adv, orig=orig, role=role: (seen[role].extend({x.role for x in trajs}), orig(trajs, adv))[1]
    m = tr.step(0)
    assert seen['main'] == ['main'] * len(seen['main']) and set(seen['sub']) <= {'sub'}
    assert m['sub/episodes'] > 0
    # what crossed the store: one record of scalars per main rollout, nothing else
    (records,) = store.written
    assert len(records) == 3 * 3 and all(set(r) == {'R_M', 'correct', 'format_ok', 'd_k', 'main_version'} for r in records.values())
    assert all(isinstance(v, (int, float, bool)) for r in records.values() for v in r.values())
    # neither side keeps a reference to the other's policy
    assert all(v is not warm['sub'] for v in vars(tr.main).values())
    assert all(v is not warm['main'] for v in vars(tr.sub).values())
    assert tr.main.client is tr.sub and not tr.sub.agent.cache            # the sub side emptied its own cache


def test_zero_signal_skips_and_is_counted(world, policy):
    "Fresh policies write malformed turns: every reward is 0, so both agents skip and nothing moves."
    pols = {'main': copy.deepcopy(policy), 'sub': copy.deepcopy(policy)}
    before = {r: params(p) for r, p in pols.items()}
    tr = Trainer(world, small_cfg(), pols)
    m = tr.step(0)
    assert m['main/skipped'] == m['sub/skipped'] == 'zero_signal' and m['main/zero_signal'] == 1.0
    assert all(torch.equal(before[r], params(pols[r])) for r in pols)
    assert tr.trainers['main'].skipped['zero_signal'] == 1 and tr.trainers['main'].version == 0


def test_nonfinite_loss_skips_update(world, warm):
    pol = warm['sub']
    tr = AgentTrainer(pol, 'sub', OptimConfig(), LossConfig())
    trainer = Trainer(world, small_cfg(mode='frozen_main'), warm)
    trainer.sub.run([SubRequest((0, 'q', k, 0), 'Who founded Plibrox Labs?') for k in range(2)])
    subs = trainer.sub.agent.pop()
    with torch.no_grad(): next(pol.model.parameters())[0, 0] = float('nan')
    before = params(pol)
    m = tr.update(subs, torch.tensor([1.0, -1.0]))
    assert m['skipped'] == 'nonfinite' and tr.skipped['nonfinite'] == 1 and tr.version == 0
    after = params(pol)
    assert torch.equal(before.nan_to_num(7.0), after.nan_to_num(7.0)) and not tr.opt.state
    with torch.no_grad(): next(pol.model.parameters())[0, 0] = 0.0
    assert tr.update(subs, torch.tensor([1.0, -1.0]))['skipped'] is None and tr.version == 1   # training goes on


@pytest.mark.parametrize('mode', ['mgrpo', 'frozen_sub', 'frozen_main', 'mgrpo_ragged', 'single'])
def test_every_mode_runs_a_step(world, warm, mode):
    before = {r: params(p) for r, p in warm.items()}
    tr = Trainer(world, small_cfg(mode=mode), warm)
    m = tr.step(0)
    roles = ('single',) if mode == 'single' else ('main', 'sub')
    for r in roles:
        frozen = mode == f'frozen_{r}'
        assert m[f'{r}/skipped'] == 'frozen' if frozen else m[f'{r}/skipped'] in (None, 'zero_signal')
        moved = not torch.equal(before[r], params(warm[r]))
        assert moved == (m[f'{r}/skipped'] is None), (r, m[f'{r}/skipped'])
    if mode in ('mgrpo', 'single'): assert m[f'{roles[0]}/skipped'] is None             # the warm start leaves signal
    if mode == 'mgrpo_ragged': assert m['align/duplicated'] == m['align/filled'] == m['align/empty'] == 0
    if mode in ('mgrpo', 'frozen_main', 'frozen_sub'):
        assert sum(m[f'align/{c}'] for c in ('kept', 'duplicated', 'filled', 'empty')) == 3 * 3 * 2


def test_resume_reproduces_uninterrupted_run(world, warm_policies, tmp_path):
    cfg = small_cfg(steps=4, eval_every=2, checkpoint_every=2, reward=RewardConfig(beta_exp=0.5))   # the expert term gives the sub signal
    full = {r: copy.deepcopy(p) for r, p in warm_policies.items()}
    Trainer(world, cfg, full, out=tmp_path / 'full').fit(progress=False)

    cut = {r: copy.deepcopy(p) for r, p in warm_policies.items()}
    tr = Trainer(world, cfg, cut, out=tmp_path / 'cut')
    orig = tr.step
    def crash(s):
        if s == 3: raise KeyboardInterrupt('simulated crash during step 4')
        return orig(s)
    tr.step = crash
    with pytest.raises(KeyboardInterrupt): tr.fit(progress=False)
    assert json.loads((tmp_path / 'cut' / 'checkpoint' / 'state.json').read_text())['step'] == 2
    resumed = {r: copy.deepcopy(p) for r, p in warm_policies.items()}      # weights come from the checkpoint
    Trainer(world, cfg, resumed, out=tmp_path / 'cut', resume=True).fit(progress=False)

    for r in full: assert torch.equal(params(full[r]), params(resumed[r])), r
    last = json.loads((tmp_path / 'cut' / 'metrics.jsonl').read_text().splitlines()[-1])
    assert last['main/version'] > 0 and last['sub/version'] > 0            # both agents were updated along the way
    strip = lambda path: [{k: v for k, v in json.loads(l).items() if not k.startswith('time/')}
                          for l in (path / 'metrics.jsonl').read_text().splitlines()]
    a, b = strip(tmp_path / 'full'), strip(tmp_path / 'cut')
    assert [m['step'] for m in b] == [0, 1, 2, 3, 4] and a == b
    s = json.loads((tmp_path / 'cut' / 'summary.json').read_text())
    assert {'eval_accuracy_before', 'eval_accuracy_after', 'steps', 'seconds', 'mode', 'seed'} <= set(s)


def _naive_k3_to_reference(model, ref, trajectories) -> float:
    "Mean over loss tokens of k3 = e^(ref - cur) - (ref - cur) - 1, by full logits and a loop over tokens (the oracle)."
    terms = []
    with torch.no_grad():
        for t in trajectories:
            ids = torch.tensor([t.input_ids])
            cur = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)     # (L, V)
            old = torch.log_softmax(ref(input_ids=ids).logits[0].double(), -1)       # (L, V)
            for j, on in enumerate(t.loss_mask):
                if on: d = float(old[j - 1, t.input_ids[j]] - cur[j - 1, t.input_ids[j]]); terms.append(math.expm1(d) - d)
    return sum(terms) / len(terms)


def test_kl_to_reference_is_real(world, warm):
    "beta_kl > 0: the trainer keeps a frozen copy of its starting weights and the logged kl_ref is k3 to it, computed naively."
    pol, start = warm['sub'], copy.deepcopy(warm['sub'].model)
    tr = AgentTrainer(pol, 'sub', OptimConfig(lr=3e-3), LossConfig(beta_kl=0.5))
    trainer = Trainer(world, small_cfg(mode='frozen_main'), warm)
    trainer.sub.run([SubRequest((0, 'q', k, 0), 'Who founded Plibrox Labs?') for k in range(2)])
    subs, adv = trainer.sub.agent.pop(), torch.tensor([1.0, -1.0])
    m1 = tr.update(subs, adv)                                      # the policy is its reference: k3 = 0 up to float rounding
    assert m1['skipped'] is None and 0 <= m1['kl_ref'] < 1e-10     # (the update runs the shared prefix once, the reference each row whole)
    after1 = copy.deepcopy(pol.model)
    m2 = tr.update(subs, adv)                                      # measured before the second step: after1 against start
    assert m2['kl_ref'] > 0 and m2['kl_ref'] == pytest.approx(_naive_k3_to_reference(after1, start, subs), rel=1e-4)
    assert all(torch.equal(a, b) for a, b in zip(tr.reference.parameters(), start.parameters()))   # frozen
    assert not any(p.requires_grad for p in tr.reference.parameters())


def test_trainer_runs_with_beta_kl(world, warm):
    "Two co-located M-GRPO steps with the KL term on both agents: no error, kl_ref logged for both."
    tr = Trainer(world, small_cfg(steps=2, loss=LossConfig(beta_kl=0.1)), warm)
    ms = [tr.step(s) for s in range(2)]
    for r in ('main', 'sub'):
        assert tr.trainers[r].reference is not None
        trained = [m for m in ms if m[f'{r}/skipped'] is None]
        assert trained and all(f'{r}/kl_ref' in m for m in trained)


@pytest.mark.parametrize('stage', ['writing', 'before_link', 'link_swap', 'cleanup'])
def test_a_save_killed_at_any_stage_leaves_a_loadable_checkpoint(world, warm_policies, tmp_path, monkeypatch, stage):
    "A kill during publish_checkpoint: out/checkpoint is the old complete checkpoint or the new one, and a run resumes from it."
    import mgrpo_ref.learner, mgrpo_ref.trainer
    pols = {r: copy.deepcopy(p) for r, p in warm_policies.items()}
    tr = Trainer(world, small_cfg(mode='frozen_sub'), pols, out=tmp_path)
    tr.save_checkpoint(1)                                          # the last complete checkpoint: next step 1
    def kill(*a, **k): raise KeyboardInterrupt(f'killed while saving: {stage}')
    target = {'writing': (mgrpo_ref.learner.torch, 'save'),        # the optimizer state of the first role: half a version written
              'before_link': (mgrpo_ref.trainer.os, 'symlink'), 'link_swap': (mgrpo_ref.trainer.os, 'replace'),
              'cleanup': (mgrpo_ref.trainer.shutil, 'rmtree')}[stage]
    with monkeypatch.context() as m:
        m.setattr(*target, kill)
        with pytest.raises(KeyboardInterrupt): tr.save_checkpoint(2)
    state = json.loads((tmp_path / 'checkpoint' / 'state.json').read_text())
    assert state['step'] == (2 if stage == 'cleanup' else 1)     # the swap is the one moment the checkpoint changes
    again = Trainer(world, small_cfg(mode='frozen_sub'), {r: copy.deepcopy(p) for r, p in warm_policies.items()}, out=tmp_path, resume=True)
    assert again.start == state['step']
    tr.save_checkpoint(3)                                          # the next save cleans up whatever the kill left
    assert len(list(tmp_path.glob('checkpoint-*'))) == 1 and not (tmp_path / 'checkpoint.new').exists()


def test_a_run_saved_before_versioned_checkpoints_migrates(world, warm_policies, tmp_path):
    "An older run's checkpoint/ folder (not a link) is kept as a version and replaced by the link at the next save."
    tr = Trainer(world, small_cfg(mode='frozen_sub'), {r: copy.deepcopy(p) for r, p in warm_policies.items()}, out=tmp_path)
    tr.save_checkpoint(1)
    real = tmp_path / 'checkpoint'; target = real.resolve(); real.unlink(); target.rename(real)   # as an older version wrote it
    assert real.is_dir() and not real.is_symlink()
    tr.save_checkpoint(2)
    assert (tmp_path / 'checkpoint').is_symlink() and json.loads((tmp_path / 'checkpoint/state.json').read_text())['step'] == 2


@pytest.mark.parametrize('mode, budget', [('mgrpo', 200), ('single', 200), ('mgrpo', 10_000)])
def test_cut_metrics_are_the_share_of_episodes_the_budget_ended(world, warm, mode, budget):
    """`main/cut`, `sub/cut` and `single/cut` are the shares of the step's episodes that the context budget ended
    (counted from the trajectories the sides saw), and evaluation logs the same for its episodes."""
    cfg = small_cfg(mode=mode, rollout=RolloutConfig(k=3, max_turns_main=4, max_turns_sub=3, max_turns_single=6, max_context=budget))
    tr = Trainer(world, cfg, {r: warm[r] for r in cfg.agents})
    seen = {}
    decider = 'single' if mode == 'single' else 'main'
    orig = tr.trainers[decider].update
    tr.trainers[decider].update = lambda trajs, adv: (seen.setdefault(decider, list(trajs)), orig(trajs, adv))[1]
    if mode == 'mgrpo':
        pop = tr.sub.agent.pop
        tr.sub.agent.pop = lambda keys=None: seen.setdefault('sub', pop(keys))
    m = tr.step(0)
    share = lambda ts: sum(t.finish == 'context' for t in ts) / len(ts)
    for role, trajs in seen.items():
        assert m[f'{role}/cut'] == pytest.approx(share(trajs)), role
    if budget < 1000: assert max(m[f'{r}/cut'] for r in seen) > 0      # the budget bit somewhere, so the counts were tested
    else: assert all(m[f'{r}/cut'] == 0 for r in seen)
    ev = tr.evaluate()
    keys = {'greedy_cut', 'sampled_cut'} | ({'greedy_cut_sub', 'sampled_cut_sub'} if mode == 'mgrpo' else set())
    assert keys <= set(ev) and all(0 <= ev[k] <= 1 for k in keys)
    if budget > 1000: assert all(ev[k] == 0 for k in keys)


def test_eval_split_valid_evaluates_the_validation_questions(world, warm, tmp_path):
    "Choices are made on the validation split: with eval_split='valid' every evaluation reads the world's validation questions, none of the test split's."
    tr = Trainer(world, small_cfg(eval_split='valid', eval_before=False), warm, out=tmp_path)
    tr.fit(progress=False)
    seen = [q for l in (tmp_path / 'eval_questions.jsonl').read_text().splitlines() for q in json.loads(l)['by_question']]
    assert seen == [q.qid for q in world.questions['valid'][:4]] and all(q.startswith('valid-') for q in seen)


def test_eval_hops_evaluates_the_questions_of_that_depth_only(world, warm, tmp_path):
    "eval_hops=1: every evaluation reads the split's one-hop questions only, in the split's order, and eval_questions takes the first of those."
    tr = Trainer(world, small_cfg(eval_hops=1, eval_before=False), warm, out=tmp_path)
    tr.fit(progress=False)
    seen = [q for l in (tmp_path / 'eval_questions.jsonl').read_text().splitlines() for q in json.loads(l)['by_question']]
    assert seen == [q.qid for q in world.questions['test'] if q.hops == 1][:4]


def test_eval_greedy_false_evaluates_the_samples_only(world, warm, tmp_path):
    "eval_greedy=False: every evaluation runs the sampled episodes alone (no greedy pass), and the summary's paired gain is the sampled one."
    tr = Trainer(world, small_cfg(eval_greedy=False), warm, out=tmp_path)
    s = tr.fit(progress=False)
    evals = [json.loads(l) for l in (tmp_path / 'metrics.jsonl').read_text().splitlines() if 'eval/sampled' in l]
    assert len(evals) == 2 and not any(k.startswith('eval/greedy') for m in evals for k in m)
    by = [json.loads(l)['by_question'] for l in (tmp_path / 'eval_questions.jsonl').read_text().splitlines()]
    assert all(set(r) == {'sampled'} for b in by for r in b.values())
    assert s['eval_greedy_before'] is None and s['eval_accuracy_before'] is not None and list(s['eval_paired']) == ['sampled']
