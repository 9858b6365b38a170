"""Peak memory of one loss pass (log-probs and entropies at the sampled positions, forward and backward) at a long
context with Qwen3's vocabulary: full (b, L, V) logits as `token_logprobs` computed them before, against the
body + gathered hidden states + LM head in chunks that it computes now.

    .venv/bin/python bench/logprobs.py [--context 2048] [--vocab 151936] [--hidden 64] [--chunks 1024,256,64]

Each variant runs in its own process, so that its peak resident memory (ru_maxrss) is its own; the table gives
that peak minus the process's resident memory just before the pass (model and inputs built), and the pass's
seconds. The model is a Qwen3-shaped toy (2 layers, `--hidden`) with the real vocabulary, so the LM head's
(positions, V) work dominates as it does at full scale. The last line is one JSON object.
"""
import argparse, json, resource, subprocess, sys, time

import torch
import torch.nn.functional as F


def full_logits(model, ids, mask, temperature, positions):
    "The loss pass as it was: the model's (b, L, V) logits, then the positions asked for (mgrpo_ref before the chunked head)."
    want = positions.bool().clone(); want[:, 0] = False
    logits = model(input_ids=ids, attention_mask=mask).logits                                  # (b, L, V)
    logp_all = torch.log_softmax(logits[F.pad(want[:, 1:], (0, 1))].float() / temperature, -1)  # (n, V)
    zero = torch.zeros(ids.shape, dtype=torch.float32)
    lp = zero.masked_scatter(want, logp_all.gather(-1, ids[want][:, None]).squeeze(-1))
    return lp, zero.masked_scatter(want, -(logp_all.exp() * logp_all).sum(-1))


def rss_mb() -> float:
    "This process's peak resident memory so far, MB (Linux reports KB)."
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(variant: str, a) -> dict:
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from mgrpo_ref.policy import token_logprobs
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=2 * a.hidden, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, head_dim=a.hidden // 4,
                                         tie_word_embeddings=False, max_position_embeddings=a.context)).float()
    ids = torch.randint(0, a.vocab, (1, a.context)); mask = torch.ones_like(ids)
    positions = torch.zeros_like(ids, dtype=torch.bool); positions[:, a.context // 4:] = True   # the sampled 3/4 of the context
    before = rss_mb(); t0 = time.perf_counter()
    if variant == 'full': lp, ent = full_logits(model, ids, mask, 0.7, positions)
    else: lp, ent = token_logprobs(model, ids, mask, 0.7, entropy=True, positions=positions, chunk=int(variant))
    (lp.sum() + 0.01 * ent.sum()).backward()
    return dict(variant=variant, peak_mb=round(rss_mb() - before), seconds=round(time.perf_counter() - t0, 2),
                checksum=round(float(lp.sum()), 3))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--context', type=int, default=2048)
    p.add_argument('--vocab', type=int, default=151_936)
    p.add_argument('--hidden', type=int, default=64)
    p.add_argument('--chunks', default='1024,256,64', help='chunk sizes (positions per LM-head call) to measure')
    p.add_argument('--variant', help=argparse.SUPPRESS)   # 'full' or a chunk size: one variant, in this process
    a = p.parse_args(argv)
    if a.variant: print(json.dumps(one(a.variant, a))); return
    rows = []
    for v in ['full'] + a.chunks.split(','):
        out = subprocess.run([sys.executable, __file__, '--variant', v, *sys.argv[1:]], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    n = 3 * a.context // 4
    print(f'one loss pass (forward + backward), context {a.context}, {n} loss positions, vocabulary {a.vocab}')
    print(f'(b, L, V) float32 logits alone would be {a.context * a.vocab * 4 / 2**20:.0f} MB\n')
    print('| LM head | peak memory above the model (MB) | vs full logits | seconds |\n|---|---:|---:|---:|')
    for r in rows:
        name = 'full (b, L, V) logits' if r['variant'] == 'full' else f"chunks of {r['variant']} positions"
        print(f"| {name} | {r['peak_mb']} | {r['peak_mb'] / rows[0]['peak_mb']:.2f} | {r['seconds']} |")
    assert all(abs(r['checksum'] - rows[0]['checksum']) <= 1e-5 * abs(rows[0]['checksum']) for r in rows), rows   # the same numbers
    print(json.dumps(dict(context=a.context, vocab=a.vocab, rows=rows)))


if __name__ == '__main__': main()
