"""Sampling throughput with stop strings: the stop check as `policy.sample` did it before (decode the last 8
tokens of every row at every step) against `StopStrings` (decode only after a token that can end a stop string),
and the share of a sampling call each spends checking.

    .venv/bin/python bench/sampling.py [--repeats 3] [--threads 1] [--tiny]

Needs SmolLM2's tokenizer (`make smollm2`): a real 49,152-token byte-level BPE that writes every closing tag
as three to five tokens, so the sub-agent's turns stop on strings (`</search>`, `</visit>`, `</result>`).
The model is a Qwen3-shaped toy with fresh weights: it never writes a tag, so every row runs to
`max_new_tokens` and every step pays the check. Two shapes: many short rows (the toy world's shape, where the
per-token host loop weighs most) and a few long ones (4,096-token prompts, Qwen3's vocabulary, where the model
dominates). Both checkers see the same tokens (the samples are compared); A and B alternate after a warm-up,
medians. Then one more call of each shape with `StopStrings` under cProfile: the functions that take the most
time of their own. The last line is one JSON object.
"""
import argparse, cProfile, io, json, platform, pstats, statistics, time

import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

from mgrpo_ref.policy import Policy, SamplingConfig, StopStrings, sample, smollm2_path


class DecodeEveryToken(StopStrings):
    "The check as it was: decode each row's last 8 tokens after every token."
    def __call__(self, toks):
        return any(s in self.tokenizer.decode(toks[-8:]) for s in self.strings)


class Timed(StopStrings):
    "Wraps a checker and adds up the seconds spent in it."
    def __init__(self, inner): self.__dict__.update(inner.__dict__); self.inner, self.seconds = inner, 0.0
    def __call__(self, toks):
        t0 = time.perf_counter(); hit = self.inner(toks); self.seconds += time.perf_counter() - t0
        return hit


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--tiny', action='store_true', help='both shapes shrunk to seconds (the smoke test)')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    path = smollm2_path()
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    shapes = [dict(name='short rows', rows=64, prompt=256, new=128, vocab=len(tok), hidden=128),
              dict(name='long rows', rows=8, prompt=4096, new=128, vocab=151936, hidden=256)]
    if a.tiny: shapes = [dict(sh, rows=4, prompt=32, new=8, hidden=32) for sh in shapes]
    result = {'machine': f'{platform.processor() or platform.machine()}, {a.threads} torch threads', 'repeats': a.repeats, 'rows': []}
    print(f"stop strings of the sub-agent, SmolLM2's tokenizer ({len(tok)} tokens), {result['machine']}")
    print('| shape | rows x prompt + new tokens | vocab | check | tokens/s | seconds | of which the stop check | speed-up |')
    print('|---|---|---:|---|---:|---:|---:|---:|')
    profiles = {}
    for sh in shapes:
        torch.manual_seed(0)
        model = Qwen3ForCausalLM(Qwen3Config(vocab_size=sh['vocab'], hidden_size=sh['hidden'], intermediate_size=2 * sh['hidden'],
                                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=sh['hidden'] // 4,
                                             max_position_embeddings=8192)).eval()
        pol = Policy(model, tok)
        ids, strings = pol.stops('sub')
        prompts = [torch.randint(100, len(tok), (sh['prompt'],), generator=torch.Generator().manual_seed(r)).tolist() for r in range(sh['rows'])]
        cfg = SamplingConfig(max_new_tokens=sh['new'])
        arms = {'decode every token (before)': DecodeEveryToken(tok, strings), 'StopStrings (now)': StopStrings(tok, strings)}
        runs = {k: [] for k in arms}
        def go(check):
            timed = Timed(check); t0 = time.perf_counter()
            out = sample(model, prompts, cfg, list(range(len(prompts))), pol.pad_id, ids, timed, tok)
            return time.perf_counter() - t0, timed.seconds, out
        for check in arms.values(): go(check)                                   # warm-up
        outs = {}
        for _ in range(a.repeats):
            for k, check in arms.items():
                s, c, outs[k] = go(check); runs[k].append((s, c))
        a_out, b_out = outs.values()
        assert [o.token_ids for o in a_out] == [o.token_ids for o in b_out], 'the two checks sampled different tokens'
        n = sum(len(o.token_ids) for o in a_out)
        base = statistics.median(s for s, _ in runs['decode every token (before)'])
        for k, rs in runs.items():
            s, c = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
            row = dict(shape=sh['name'], rows=sh['rows'], prompt=sh['prompt'], new=sh['new'], vocab=sh['vocab'], check=k,
                       tokens_per_s=round(n / s, 1), seconds=round(s, 3), check_seconds=round(c, 3), speedup=round(base / s, 3))
            result['rows'].append(row)
            print(f"| {sh['name']} | {sh['rows']} x {sh['prompt']} + {sh['new']} | {sh['vocab']} | {k} | {row['tokens_per_s']:.0f} | "
                  f"{s:.2f} | {c:.3f} s ({c / s:.1%}) | {row['speedup']:.2f} |")
        prof = cProfile.Profile(); prof.enable(); go(arms['StopStrings (now)']); prof.disable()
        stats, text = pstats.Stats(prof), io.StringIO()
        total = stats.total_tt
        top = sorted(((v[2], f'{k[2]} ({k[0].split("/")[-1]}:{k[1]})') for k, v in stats.stats.items()), reverse=True)[:6]
        profiles[sh['name']] = [(name, round(t, 3), round(t / total, 3)) for t, name in top]
    for name, top in profiles.items():
        print(f"\nprofile, {name}, StopStrings: own time of the top functions")
        for f, t, share in top: print(f"  {t:7.3f} s  {share:6.1%}  {f}")
    result['profile'] = profiles
    print(json.dumps(result))


if __name__ == '__main__':
    main()
