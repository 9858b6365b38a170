"Mode 'shared': one model for both roles, one update on the sum of the two roles' losses, one folder in its warm start and checkpoints."
import copy, json, math

import pytest
import torch

from mgrpo_ref.config import OptimConfig, TrainConfig
from mgrpo_ref.learner import AgentTrainer, SharedUpdate
from mgrpo_ref.loss import LossConfig
from mgrpo_ref.policy import Policy
from mgrpo_ref.rollout import InProcessSubAgent, RolloutConfig, rollout_mgrpo
from mgrpo_ref.tools import Toolbox
from mgrpo_ref.trainer import Trainer
from mgrpo_ref.warmstart import shipped_warmstart


def naive_role_loss(model, trajs, adv, cfg: LossConfig) -> torch.Tensor:
    "One role's loss by a loop over trajectories and tokens: per token -min(rho A, clip(rho) A), a mean per sequence, a mean over sequences."
    per_seq = []
    for t, a in zip(trajs, adv):
        ids = torch.tensor([t.input_ids])                                                  # (1, L)
        logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)          # (L-1, V)
        terms = []
        for pos in range(1, len(t.input_ids)):
            if not t.loss_mask[pos]: continue
            lp = logp[pos - 1, t.input_ids[pos]]
            rho = torch.exp(lp - t.logprobs[pos])
            terms.append(-torch.minimum(rho * a, rho.clamp(1 - cfg.eps_low, 1 + cfg.eps_high) * a))
        if terms: per_seq.append(torch.stack(terms).mean())
    return torch.stack(per_seq).mean()


@pytest.fixture(scope='module')
def batch(world):
    "A real step's main and sub batches, sampled by one model (the shipped main agent) playing both roles, with made-up advantages and a repeated slot."
    one = Policy.load(shipped_warmstart() / 'main')
    cfg = RolloutConfig(k=2)
    client = InProcessSubAgent(one, Toolbox.for_world(world), cfg)
    mains, _ = rollout_mgrpo(world.questions['train'][:3], one, client, cfg)
    subs = client.pop()
    subs = subs + subs[:1]                                                                 # a slot that alignment repeats
    g = torch.Generator().manual_seed(0)
    return one, (mains, torch.randn(len(mains), generator=g)), (subs, torch.randn(len(subs), generator=g))


def test_shared_update_is_the_gradient_of_the_naive_sum_of_both_roles_losses(batch):
    one, main, sub = batch
    cfg = LossConfig()
    shared_model = copy.deepcopy(one)
    shared = SharedUpdate(AgentTrainer(shared_model, 'shared', OptimConfig(grad_clip=0), cfg))
    shared.part('main').update(*main); shared.part('sub').update(*sub)
    info = shared.step()
    naive = copy.deepcopy(one).model
    loss = naive_role_loss(naive, *main, cfg) + naive_role_loss(naive, *sub, cfg)
    loss.backward()
    assert math.isclose(info['loss'], loss.item(), rel_tol=1e-5, abs_tol=1e-6)
    assert info['sequences'] == len(main[0]) + len(sub[0])                                # the repeated slot counts twice
    got = dict(shared_model.model.named_parameters())
    worst = max((got[n].grad - p.grad).abs().max().item() for n, p in naive.named_parameters())
    assert worst < 1e-6, worst


def test_a_shared_run_trains_one_model_for_both_roles_and_resumes_exactly(world, tmp_path):
    cfg = TrainConfig(mode='shared', steps=2, questions_per_step=2, rollout=RolloutConfig(k=2), eval_every=0, eval_questions=2,
                      eval_samples=1, checkpoint_every=1)
    one = Policy.load(shipped_warmstart() / 'main')
    tr = Trainer(world, cfg, {'shared': copy.deepcopy(one)}, out=tmp_path / 'a')
    assert tr.players['main'] is tr.players['sub'] is tr.policies['shared'] and list(tr.trainers) == ['shared']
    tr.fit(progress=False)
    lines = [json.loads(l) for l in (tmp_path / 'a' / 'metrics.jsonl').read_text().splitlines()]
    assert all('shared/version' in m and 'main/reward' in m and 'sub/reward' in m for m in lines[1:])
    assert all(('shared/loss' in m) == (m['shared/skipped'] is None) for m in lines[1:])          # one update's diagnostics, or why it skipped
    assert sorted(p.name for p in (tmp_path / 'a' / 'checkpoint').iterdir()) == ['shared', 'state.json']
    assert lines[-1]['shared/version'] == tr.trainers['shared'].version >= 1
    # stopped after step 1 and resumed: the same weights as the uninterrupted run
    Trainer(world, TrainConfig(**{**cfg.__dict__, 'steps': 1}), {'shared': copy.deepcopy(one)}, out=tmp_path / 'b').fit(progress=False)
    resumed = Trainer(world, cfg, {'shared': copy.deepcopy(one)}, out=tmp_path / 'b', resume=True)
    resumed.fit(progress=False)
    for (n, p), q in zip(tr.policies['shared'].model.named_parameters(), resumed.policies['shared'].model.parameters()):
        assert torch.equal(p, q), n


def test_a_shared_model_is_not_decoupled_and_needs_its_one_folder(world):
    cfg = TrainConfig(mode='shared', steps=1, questions_per_step=2, rollout=RolloutConfig(k=2))
    one = Policy.load(shipped_warmstart() / 'main')
    with pytest.raises(ValueError, match="mode 'shared' cannot be decoupled"):
        Trainer(world, cfg, {'main': one}, remote_sub=lambda *a: None)
    with pytest.raises(ValueError, match=r"mode 'shared' needs policies for \['shared'\], missing \['shared'\]"):
        Trainer(world, cfg, {'main': one, 'sub': one})
