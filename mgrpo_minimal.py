"""
M-GRPO in one file: the whole training loop of a two-agent system on the toy world, readable top to bottom.

    python mgrpo_minimal.py --steps 40
    python mgrpo_minimal.py --steps 2 --questions-per-step 2 --k 2 --eval-questions 8

A main agent (planner) answers multi-hop questions by delegating one-hop sub-tasks to a sub-agent (executor),
which runs a search/visit tool loop and reports back. Both are tiny LLMs, warm-started on oracle demonstrations;
M-GRPO (Hong et al., arXiv 2511.13288) trains both with group-relative advantages. One step:

    1. B questions, K main rollouts each; rollout k delegates d_k sub-tasks, each a sub-agent episode
    2. R_M per main rollout; R_S per sub-trajectory (its format, its main rollout's outcome, the expert term)
    3. align: every main rollout gets exactly D_max sub-trajectory slots (drop, duplicate, or fill from the question)
    4. advantages: A_M over the K rollouts of a question, A_S over the K * D_max slots of a question
    5. two clipped-surrogate updates, each agent with its own AdamW, on its own tokens only

What it KEEPS, written out below: R_M, and R_S with the expert term (beta_exp = 0.5, as the training config has
it); alignment to D_max slots (drops and duplicates drawn at random, `fill_from_query` for a rollout that never
delegated); group-relative advantages for both agents (std with ddof = 0, + 1e-6; a group of equal rewards gets 0);
the clipped surrogate (eps_low 0.2, eps_high 0.28, seq-mean-token-mean) on each agent's own sampled tokens; two
AdamW updates, one per agent, each skipped when its whole batch has no signal, gradients clipped at norm 1.0.
What it TAKES from the package `mgrpo_ref`, because it is not M-GRPO: the world and its questions (`build_world`),
the tools (`Toolbox`: BM25 search, page visits), the protocol and rollout machinery (`rollout_mgrpo`,
`InProcessSubAgent`, `RolloutConfig`, `Policy` and its KV-cache sampling, which records each sampled token's
behaviour log-prob), the answer check (`exact_match`), the sub-tasks' true answers (`SubtaskAnswers`) and the
shipped warm start.

What it DROPS, and why (the package has each; `mgrpo_ref.trainer.Trainer` wires them):
- no KL to a reference model: the project's default beta_KL is 0, so no reference model is loaded anyway;
- no micro-batching: each agent's batch is one forward pass, which the toy models (0.38 M parameters: 383,760, a vocabulary
  of 821 tokens) afford; the LM head runs only where it predicts a sampled token, as the package's does;
- no DDP/FSDP, accelerate, GPU or bf16: one CPU process trains models this small;
- no statistics store and no servers: both agents live in this process; the sub side still reads only what the
  store would carry, each main rollout's outcome (`correct`), never its tokens;
- no checkpoints, resume, metric files, trackers or curves: one printed line per step, an evaluation at the end;
- no other modes (single agent, frozen sub, ragged alignment, shared model), no token-mean aggregation, no F1
  answer matching, no guard against a non-finite loss.

It draws the questions, the rollouts' seeds and alignment's seed as `Trainer` does, so with the same config it
leaves bitwise the weights `Trainer` leaves, as long as each agent's batch is one of the package's micro-batches
and one LM-head chunk (LossConfig.micro_batch, head_chunk); beyond that the two sum the same terms in another
float order (3e-8 apart at most after 3 steps of B = 2, K = 4). tests/test_minimal.py checks both.
"""
import argparse, random, time
from collections import Counter
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F

from mgrpo_ref.policy import Policy, SamplingConfig
from mgrpo_ref.rewards import SubtaskAnswers
from mgrpo_ref.rollout import InProcessSubAgent, RolloutConfig, rollout_mgrpo
from mgrpo_ref.tools import Toolbox, exact_match
from mgrpo_ref.warmstart import shipped_warmstart
from mgrpo_ref.world import WorldConfig, build_world


@dataclass
class Config:
    "Everything a run depends on; each field is also a flag (`--questions-per-step 2`)."
    steps: int = 40                  # training steps
    questions_per_step: int = 8      # B: training questions per step
    k: int = 8                       # K: main rollouts per question (the main agent's group size)
    d_max: int = 2                   # D_max: sub-trajectory slots per main rollout
    alpha_fmt: float = 0.1           # R_M for a well-formed main trajectory
    alpha_acc: float = 0.9           # R_M for a correct final answer, on top
    beta_fmt: float = 0.1            # R_S for a well-formed sub-trajectory
    beta_out: float = 0.9            # R_S when the main rollout it served answered correctly
    beta_exp: float = 0.5            # R_S when its report holds the sub-task's true answer (the expert term)
    eps_low: float = 0.2             # clip the ratio below at 1 - eps_low
    eps_high: float = 0.28           # clip the ratio above at 1 + eps_high
    num_iterations: int = 1          # mu: optimizer passes over each step's batch (> 1: the clip acts)
    lr: float = 3e-4                 # AdamW learning rate of each agent (constant)
    beta1: float = 0.9               # AdamW betas
    beta2: float = 0.99
    grad_clip: float = 1.0           # max gradient norm of each agent's update
    eval_questions: int = 120        # held-out questions evaluated at the end (0: none; the test split has 120)
    eval_samples: int = 4            # sampled (T = 1) rollouts per held-out question, besides one greedy
    seed: int = 0                    # seed of question draws, rollouts and alignment
    threads: int = 1                 # torch threads (tiny models: one is enough)


# ---------------------------------------------------------------------------------------------- rewards
def main_rewards(mains, gold: dict, cfg: Config) -> tuple[list[float], dict]:
    "R_M = 0 for a malformed trajectory, else alpha_fmt + alpha_acc * correct; and each rollout's outcome, by key."
    correct = {t.key: float(exact_match(t.output, gold[t.key[1]])) if t.format.ok else 0.0 for t in mains}
    return [cfg.alpha_fmt + cfg.alpha_acc * correct[t.key] if t.format.ok else 0.0 for t in mains], correct

def sub_reward(s, correct: dict, subtasks: SubtaskAnswers, cfg: Config) -> float:
    "R_S = 0 for a malformed sub-trajectory, else beta_fmt + beta_out * correct(its main rollout) + beta_exp * r_exp."
    if not s.format.ok: return 0.0
    truth = subtasks.answer(s.prompt)                                  # None when the task is not a one-hop question
    r_exp = float(truth is not None and exact_match(s.output, truth)) if cfg.beta_exp else 0.0
    return cfg.beta_fmt + cfg.beta_out * correct[s.key[:3]] + cfg.beta_exp * r_exp


# -------------------------------------------------------------------------------------------- alignment
def align(children: dict, d_max: int, seed: int) -> list[tuple[int, tuple | None]]:
    """Exactly d_max slots per main rollout, as (question index, sub-trajectory key or None: an empty slot).
    `children`: rollout key (step, qid, k) -> its sub-trajectory keys in delegation order, rollouts by (qid, k)."""
    by_question = {}
    for key, kids in children.items(): by_question.setdefault(key[1], []).append((key, kids))
    slots = []
    for g, (qid, rollouts) in enumerate(by_question.items()):
        rng = random.Random(f'{seed}:{qid}')                            # one stream per question, as the package draws
        placed = {}
        for key, kids in rollouts:
            if len(kids) >= d_max: placed[key] = rng.sample(kids, d_max)               # d_k >= D: drop at random
            elif kids: placed[key] = kids + [rng.choice(kids) for _ in range(d_max - len(kids))]   # 0 < d_k < D: duplicate
        pool = [s for kept in placed.values() for s in dict.fromkeys(kept)]            # what the question's rollouts kept
        for key, kids in rollouts:                                      # d_k = 0: fill_from_query, or empty slots
            if not kids: placed[key] = [rng.choice(pool) for _ in range(d_max)] if pool else [None] * d_max
        slots += [(g, s) for key, _ in rollouts for s in placed[key]]
    return slots


# ------------------------------------------------------------------------------------------- advantages
def group_advantages(rewards: list[float], groups: list[int]) -> torch.Tensor:
    "(r - mean_g) / (std_g + 1e-6) within each group, std with ddof = 0; a group whose rewards are all equal gets 0."
    r = torch.tensor(rewards, dtype=torch.float64)                      # (N,)
    g = torch.tensor(groups)                                            # (N,)
    adv = torch.zeros_like(r)                                           # (N,)
    for gi in g.unique():
        rg = r[g == gi]                                                 # (n_g,)
        if rg.max() == rg.min(): continue                               # no signal in this group
        mean = rg.sum() / len(rg)
        std = (((rg - mean) ** 2).sum() / len(rg)).sqrt()
        adv[g == gi] = (rg - mean) / (std + 1e-6)
    return adv.float()


# ------------------------------------------------------------------------------------- loss and update
def update(policy: Policy, opt: torch.optim.Optimizer, trajs: list, adv: torch.Tensor, cfg: Config) -> dict:
    "num_iterations AdamW steps on the clipped surrogate of `trajs` (one advantage each), seq-mean-token-mean."
    if not trajs or not (adv != 0).any(): return {'skipped': 'zero_signal'}   # Adam's momentum alone would move the policy
    # a sub-trajectory that alignment put in several slots is one row, counted as often (the same loss term again);
    # rows shortest first, as the package's micro-batches order them: the same float sums in the same order
    count = Counter((t.key, a) for t, a in zip(trajs, adv.tolist()))
    by_key = {t.key: t for t in trajs}
    rows = sorted(count, key=lambda row: len(by_key[row[0]].input_ids))  # stable: ties keep their order
    trajs = [by_key[key] for key, _ in rows]
    A = torch.tensor([a for _, a in rows])[:, None]                     # (N, 1) each token gets its trajectory's advantage
    w = torch.tensor([float(count[row]) for row in rows])               # (N,) the slots each row stands for
    N, L = len(trajs), max(len(t.input_ids) for t in trajs)
    ids = torch.full((N, L), policy.pad_id, dtype=torch.long)           # (N, L) right-padded token ids
    attn = torch.zeros(N, L, dtype=torch.long)                          # (N, L) 1 on real tokens
    on = torch.zeros(N, L, dtype=torch.bool)                            # (N, L) True where this agent sampled the token
    old = torch.zeros(N, L)                                             # (N, L) behaviour log-probs, recorded when sampled
    for i, t in enumerate(trajs):
        n = len(t.input_ids)
        ids[i, :n], attn[i, :n] = torch.tensor(t.input_ids), 1
        on[i, :n], old[i, :n] = torch.tensor(t.loss_mask) > 0, torch.tensor(t.logprobs)
    before = F.pad(on[:, 1:], (0, 1))                                   # (N, L) the positions that predict those tokens
    n_tok = on.sum(1)                                                   # (N,) loss tokens per trajectory
    for _ in range(cfg.num_iterations):
        # the body (.model) over every token, the LM head (.lm_head) only where it predicts a sampled one: (n, V) logits
        h = policy.model.model(input_ids=ids, attention_mask=attn).last_hidden_state[before]              # (n, H)
        lp = F.log_softmax(policy.model.lm_head(h).float(), -1).gather(-1, ids[on][:, None]).squeeze(-1)   # (n,)
        logp = torch.zeros(N, L).masked_scatter(on, lp)                 # (N, L) log p(x_t | x_<t) on sampled tokens
        ratio = torch.where(on, logp - old, 0.0).exp()                  # (N, L) pi_theta / pi_behaviour
        surrogate = torch.minimum(ratio * A, ratio.clamp(1 - cfg.eps_low, 1 + cfg.eps_high) * A)   # (N, L)
        term = torch.where(on, -surrogate, 0.0)                         # (N, L) only sampled tokens count
        loss = (w * term.sum(1) / n_tok.clamp_min(1)).sum() / w[n_tok > 0].sum()   # token mean per trajectory, then mean
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), cfg.grad_clip)
        opt.step()
        with torch.no_grad(): clipped = on & (((A > 0) & (ratio > 1 + cfg.eps_high)) | ((A < 0) & (ratio < 1 - cfg.eps_low)))
    return {'loss': loss.item(), 'grad_norm': float(norm), 'clip_frac': (clipped.sum() / on.sum()).item(), 'skipped': None}


# ------------------------------------------------------------------------------------------------ a step
def train_step(step: int, world, main: Policy, sub_agent: InProcessSubAgent, opts: dict, subtasks, rollout: RolloutConfig,
               cfg: Config) -> dict:
    "One M-GRPO step: rollouts, rewards, alignment, advantages, one update per agent; returns what the step looked like."
    # 1. questions and rollouts. The draw is Trainer.questions' (a pure function of seed and step), and rollout_mgrpo
    #    gets the step and seed Trainer gives it: every turn samples with the generator seed of (seed, episode key, turn)
    train = world.questions['train']
    questions = random.Random(f'{cfg.seed}:{step}').sample(train, min(cfg.questions_per_step, len(train)))
    gold = {q.qid: q.answer for q in questions}
    mains, _ = rollout_mgrpo(questions, main, sub_agent, rollout, step, cfg.seed)     # B*K trajectories, keys (step, qid, k)
    subs = {s.key: s for s in sub_agent.pop()}                          # the sub-agent's episodes, keys (step, qid, k, i)

    # 2. rewards: the sub side sees only each main rollout's outcome, never its tokens
    r_main, correct = main_rewards(mains, gold, cfg)
    r_sub = {key: sub_reward(s, correct, subtasks, cfg) for key, s in subs.items()}

    # 3. alignment: rollouts in (qid, k) order, each with its sub-trajectories in delegation order; the seed is
    #    SubSide.step's (seed * 100_003 + step), so the drops, duplicates and fills are Trainer's
    children = {key: [] for key in sorted(correct, key=lambda key: (str(key[1]), key[2]))}
    for key in sorted(subs, key=lambda key: key[3]): children[key[:3]].append(key)
    slots = align(children, cfg.d_max, seed=cfg.seed * 100_003 + step)  # B*K*D_max (question, sub key or None)
    filled = [(g, s) for g, s in slots if s is not None]                # empty slots: in no group, in no update

    # 4. advantages: main per question over its K rollouts; sub per question over its K*D_max slots (duplicates count)
    q_index = {qid: i for i, qid in enumerate(dict.fromkeys(t.key[1] for t in mains))}
    a_main = group_advantages(r_main, [q_index[t.key[1]] for t in mains])              # (B*K,)
    a_sub = group_advantages([r_sub[s] for _, s in filled], [g for g, _ in filled])    # (filled slots,)

    # 5. two separate updates: each agent its own tokens, its own AdamW
    upd_main = update(main, opts['main'], mains, a_main, cfg)
    upd_sub = update(sub_agent.policy, opts['sub'], [subs[s] for _, s in filled], a_sub, cfg)
    return {'R_M': sum(r_main) / len(r_main), 'R_S': sum(r_sub.values()) / max(len(r_sub), 1),
            'accuracy': sum(correct.values()) / len(correct), 'sub_episodes': len(subs), 'main': upd_main, 'sub': upd_sub}


# ----------------------------------------------------------------------------------------- evaluation
def evaluate(world, main: Policy, sub: Policy, toolbox: Toolbox, cfg: Config) -> dict:
    "Held-out accuracy of the two-agent system: greedy (one rollout per question) and sampled at T = 1."
    qs, gold = world.questions['test'][:cfg.eval_questions], {q.qid: q.answer for q in world.questions['test']}
    greedy = SamplingConfig(max_new_tokens=32, temperature=0.0)
    configs = {'greedy': RolloutConfig(k=1, main_sampling=greedy, sub_sampling=greedy), 'sampled': RolloutConfig(k=cfg.eval_samples)}
    out, seed = {}, cfg.seed + 10**6                                   # Trainer.evaluate's seed: not a training episode's
    for name, rc in configs.items():
        finals, _ = rollout_mgrpo(qs, main, InProcessSubAgent(sub, toolbox, rc, seed), rc, seed=seed)
        out[name] = sum(exact_match(t.output, gold[t.key[1]]) for t in finals) / len(finals)
    return out


def train(cfg: Config, log=print) -> tuple[Policy, Policy, list[dict]]:
    "Train both agents from the shipped warm start for cfg.steps steps; returns the two policies and each step's stats."
    torch.set_num_threads(cfg.threads)
    world = build_world(WorldConfig(seed=0))                           # the world the shipped warm start was made for
    toolbox, subtasks = Toolbox.for_world(world), SubtaskAnswers(world)
    warm = shipped_warmstart()
    main, sub = Policy.load(warm / 'main'), Policy.load(warm / 'sub')
    opts = {role: torch.optim.AdamW(p.model.parameters(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), weight_decay=0.0)
            for role, p in (('main', main), ('sub', sub))}
    rollout = RolloutConfig(k=cfg.k)                                   # the package's turn caps, 32-token turns, T = 1
    sub_agent = InProcessSubAgent(sub, toolbox, rollout, cfg.seed)     # answers delegations, keeps the sub-trajectories
    history = []
    for step in range(cfg.steps):
        t0 = time.perf_counter()
        m = train_step(step, world, main, sub_agent, opts, subtasks, rollout, cfg)
        history.append(m)
        show = lambda u: 'skipped' if u['skipped'] else f"loss {u['loss']:+.4f} clip {u['clip_frac']:.3f}"
        log(f"step {step + 1:3d} | R_M {m['R_M']:.3f} R_S {m['R_S']:.3f} acc {m['accuracy']:.3f} | {m['sub_episodes']:3d} sub-episodes"
            f" | main {show(m['main'])} | sub {show(m['sub'])} | {time.perf_counter() - t0:.1f}s")
    return main, sub, history


def parse_args(argv=None) -> Config:
    ap = argparse.ArgumentParser(description='M-GRPO on the toy world, in one file')
    for f in fields(Config): ap.add_argument('--' + f.name.replace('_', '-'), type=type(f.default), default=f.default)
    return Config(**vars(ap.parse_args(argv)))


if __name__ == '__main__':
    cfg = parse_args()
    main, sub, _ = train(cfg)
    if cfg.eval_questions > 0:
        world = build_world(WorldConfig(seed=0))
        ev = evaluate(world, main, sub, Toolbox.for_world(world), cfg)
        print(f"held-out accuracy on {min(cfg.eval_questions, len(world.questions['test']))} test questions: "
              f"greedy {ev['greedy']:.3f}, sampled {ev['sampled']:.3f} ({cfg.eval_samples} samples each, T = 1)")
