"""This project's single-agent GRPO step against TRL's `GRPOTrainer`, on one workload, A/B in one process.

    .venv/bin/pip install -e ".[bench]"          # TRL, for this script only
    .venv/bin/python bench/vs_trl.py [--repeats 5] [--questions 8] [--k 8] [--tokens 32] [--threads 2]
    .venv/bin/python bench/vs_trl.py --model smollm2 --lora 8 --questions 4 --k 8 --tokens 40 --micro 8 --repeats 3

The workload, the same on both sides:
- model: one freshly initialised tiny Qwen3 of the world's tokenizer (0.38 M parameters), or with `--model
  smollm2` SmolLM2-135M-Instruct (`load_smollm2`) with fresh rank-`--lora` peft adapters on the frozen base
  (TRL gets the same PeftModel: TRL trains what requires grad, as this project's `trainable_parameters`),
  copied, so both start from identical weights; float32 on the CPU, no gradient checkpointing, the same
  torch threads;
- prompts: B training questions of the built-in world per step, the same ones in the same order, as the
  single agent's chat prompt (system + user); the token ids TRL builds are checked equal to ours;
- K completions per prompt, at most `--tokens` new tokens at T = 1 (no top-p, no top-k), stopping at the
  same tokens (the single agent's closing tags and end of turn; SmolLM2's closing tags are several tokens, which
  TRL's `generate` cannot stop at without a tokenizer, so with `--model smollm2` both stop only at end of turn);
- reward: one Python function of the completion's text (the share of the question's words it repeats),
  so that groups have signal and neither side skips its update;
- GRPO: group-normalised advantages, the clipped surrogate with eps 0.2 / 0.28, no KL (no reference model),
  one pass (mu = 1) in micro-batches of `--micro` (16), the sequence-mean-of-token-means loss (TRL's loss_type 'grpo');
- optimizer: AdamW, lr 3e-4 constant, betas (0.9, 0.99), eps 1e-8, no weight decay, gradient norm clipped
  at 1.0; one optimizer step per generation batch (TRL: gradient_accumulation_steps = steps_per_generation
  = B*K/micro, so it samples once per step and takes no extra forward pass for old log-probs).

Settings that differ, and why they do not change the work: TRL samples with `model.generate` and one global
generator, this project with its own loop and a generator per sequence (the same distribution, other draws,
so completion lengths differ a little: tokens/s is the fair rate); TRL divides by the group's std with
ddof = 1, this project with ddof = 0; this project records behaviour log-probs while sampling, TRL uses the
detached current ones, which are equal when mu = 1 (neither runs an extra forward pass). One step of each
alternates after a warm-up step of each: a TRL step is timed from the end of this project's step to TRL's
`on_step_end` (its data loading, generation, micro-batches and optimizer step; logging every 10 steps, TRL's
default, falls in the next interval), inside `trainer.train()`, so it is the step a TRL user runs. The last
line is one JSON object.
"""
import argparse, copy, json, platform, re, statistics, tempfile, time

import torch

from mgrpo_ref.advantages import main_advantages
from mgrpo_ref.loss import LossConfig
from mgrpo_ref.adapters import AdapterConfig, add_adapters
from mgrpo_ref.policy import SamplingConfig, load_smollm2, tiny_policy, trainable_parameters
from mgrpo_ref.protocol import SYSTEM_PROMPTS
from mgrpo_ref.rollout import RolloutConfig, rollout_single
from mgrpo_ref.tools import Toolbox
from mgrpo_ref.config import OptimConfig
from mgrpo_ref.learner import AgentTrainer
from mgrpo_ref.world import build_world

LR, BETAS, CLIP = 3e-4, (0.9, 0.99), 1.0


def overlap(text: str, question: str) -> float:
    "The toy reward both sides optimise: the share of the question's words that the completion repeats."
    q, c = set(re.findall(r'\w+', question.lower())), set(re.findall(r'\w+', text.lower()))
    return len(q & c) / max(len(q), 1)


def our_step(policy, trainer, toolbox, questions, cfg: RolloutConfig, step: int) -> tuple[int, int]:
    "One single-agent GRPO step of this project: sample, reward, advantages, update; returns (generated, trained) tokens."
    trajs, _ = rollout_single(questions, policy, toolbox, cfg, step, seed=0)          # one turn each: max_turns_single = 1
    text = {q.qid: q.question for q in questions}
    rewards = [overlap(t.turns[0], text[t.key[1]]) for t in trajs]
    adv, _ = main_advantages([t.key for t in trajs], rewards)
    trainer.update(trajs, adv)
    gen = sum(t.n_generated for t in trajs)
    return gen, sum(len(t.input_ids) for t in trajs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--repeats', type=int, default=5, help='timed steps of each side, after one warm-up step each')
    ap.add_argument('--questions', type=int, default=8, help='B: prompts per step')
    ap.add_argument('--k', type=int, default=8, help='K: completions per prompt (the group)')
    ap.add_argument('--tokens', type=int, default=32, help='most new tokens per completion')
    ap.add_argument('--threads', type=int, default=2, help='torch threads, for both sides')
    ap.add_argument('--model', choices=('tiny', 'smollm2'), default='tiny', help="the policy: the tiny model, or SmolLM2-135M-Instruct with adapters")
    ap.add_argument('--lora', type=int, default=8, help='with --model smollm2: the adapters\' rank')
    ap.add_argument('--micro', type=int, default=16, help='sequences per micro-batch, for both sides')
    a = ap.parse_args()
    MICRO = a.micro
    if a.questions * a.k % MICRO: raise SystemExit(f"--questions x --k must be a multiple of the micro-batch {MICRO}")
    torch.set_num_threads(a.threads)
    import transformers, trl
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    transformers.utils.logging.set_verbosity_error()

    world = build_world(seed=0)
    toolbox = Toolbox.for_world(world)
    if a.model == 'tiny': ours = tiny_policy(world, seed=0)
    else:
        ours = add_adapters(load_smollm2(), AdapterConfig(r=a.lora), seed=0)
        eos = ours.tokenizer.eos_token_id
        ours.stops = lambda role: ({eos}, [])                              # end of turn only, as TRL (docstring)
    theirs = copy.deepcopy(ours)
    stops, _ = ours.stops('single')
    theirs.model.generation_config.eos_token_id = sorted(stops)         # TRL stops at the model's eos ids
    steps = 1 + a.repeats
    questions = world.questions['train'][:steps * a.questions]
    batches = [questions[i * a.questions:(i + 1) * a.questions] for i in range(steps)]
    rollout = RolloutConfig(k=a.k, main_sampling=SamplingConfig(max_new_tokens=a.tokens), max_turns_single=1)
    trainer = AgentTrainer(ours, 'single', OptimConfig(lr=LR, betas=BETAS, grad_clip=CLIP), LossConfig(micro_batch=MICRO))

    msgs = lambda q: [{'role': 'system', 'content': SYSTEM_PROMPTS['single']}, {'role': 'user', 'content': q.question}]
    for q in questions[:4]:                                              # TRL renders the same prompt tokens
        trl_ids = ours.tokenizer(ours.tokenizer.apply_chat_template(msgs(q), tokenize=False, add_generation_prompt=True),
                                 add_special_tokens=False).input_ids
        assert trl_ids == ours.chat.prompt_ids(SYSTEM_PROMPTS['single'], q.question), 'prompt token ids differ'
    data = Dataset.from_list([{'prompt': msgs(q), 'question': q.question} for q in questions])
    prompt_tokens = [len(ours.chat.prompt_ids(SYSTEM_PROMPTS['single'], q.question)) for q in questions]

    def reward(completions, question, **_):
        return [overlap(c[0]['content'] if isinstance(c, list) else c, q) for c, q in zip(completions, question)]

    res = {'ours': [], 'trl': []}                                        # (seconds, generated tokens, trained tokens) per step

    class AB(TrainerCallback):
        "At each TRL step's end: time it, then run this project's step on the same questions."
        def on_train_begin(self, args, state, control, **kw): self.mark = time.perf_counter()
        def on_step_end(self, args, state, control, **kw):
            s, dt = state.global_step - 1, time.perf_counter() - self.mark
            n = a.questions * a.k
            gen = round(grpo._metrics['train']['completions/mean_length'][-1] * n)
            res['trl'].append((dt, gen, gen + a.k * sum(prompt_tokens[s * a.questions:(s + 1) * a.questions])))
            t0 = time.perf_counter()
            g, t = our_step(ours, trainer, toolbox, batches[s], rollout, s)
            res['ours'].append((time.perf_counter() - t0, g, t))
            self.mark = time.perf_counter()

    ga = a.questions * a.k // MICRO
    with tempfile.TemporaryDirectory() as tmp:
        args = GRPOConfig(output_dir=tmp, per_device_train_batch_size=MICRO, gradient_accumulation_steps=ga, steps_per_generation=ga,
                          num_generations=a.k, max_completion_length=a.tokens, max_steps=steps, num_iterations=1,
                          temperature=1.0, top_p=1.0, top_k=0, beta=0.0, epsilon=0.2, epsilon_high=0.28, loss_type='grpo',
                          scale_rewards='group', learning_rate=LR, lr_scheduler_type='constant', warmup_steps=0,
                          optim='adamw_torch', adam_beta1=BETAS[0], adam_beta2=BETAS[1], adam_epsilon=1e-8, weight_decay=0.0,
                          max_grad_norm=CLIP, use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False,
                          shuffle_dataset=False, dataloader_num_workers=0, report_to='none', save_strategy='no',
                          disable_tqdm=True, seed=0)
        grpo = GRPOTrainer(model=theirs.model, reward_funcs=reward, args=args, train_dataset=data,
                           processing_class=theirs.tokenizer, callbacks=[AB()])
        grpo.train()

    def summary(rows):
        rows = rows[1:]                                                  # the warm-up step
        sec = statistics.median(r[0] for r in rows)
        return {'seconds_per_step': round(sec, 4), 'tokens_per_s': round(statistics.median((r[1] + r[2]) / r[0] for r in rows), 1),
                'generated_tokens_per_step': round(statistics.mean(r[1] for r in rows), 1),
                'trained_tokens_per_step': round(statistics.mean(r[2] for r in rows), 1), 'steps': [round(r[0], 4) for r in rows]}

    o, t = summary(res['ours']), summary(res['trl'])
    print(f"{'':6} {'s/step':>8} {'tok/s':>9} {'generated':>10} {'trained':>8}")
    for name, s in (('ours', o), ('TRL', t)):
        print(f"{name:6} {s['seconds_per_step']:8.3f} {s['tokens_per_s']:9.1f} {s['generated_tokens_per_step']:10.1f} {s['trained_tokens_per_step']:8.1f}")
    print(f"ratio of seconds per step (ours / TRL): {o['seconds_per_step'] / t['seconds_per_step']:.3f}")
    print(json.dumps({'ours': o, 'trl': t, 'ratio_seconds_per_step': round(o['seconds_per_step'] / t['seconds_per_step'], 3),
                      'ratio_tokens_per_s': round(o['tokens_per_s'] / t['tokens_per_s'], 3),
                      'workload': {'model': a.model, 'lora_rank': a.lora if a.model != 'tiny' else None, 'questions': a.questions, 'k': a.k,
                                   'max_new_tokens': a.tokens, 'micro_batch': MICRO, 'parameters': sum(p.numel() for p in ours.model.parameters()),
                                   'trained_parameters': sum(p.numel() for p in trainable_parameters(ours.model)), 'repeats': a.repeats},
                      'machine': f'{platform.machine()}, {torch.get_num_threads()} torch threads',
                      'versions': {'torch': torch.__version__, 'transformers': transformers.__version__, 'trl': trl.__version__,
                                   'peft': __import__('peft').__version__}}))


if __name__ == '__main__':
    main()
