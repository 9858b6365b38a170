"""Float32 products by PyTorch's default route (MKL on x86) and through oneDNN (05b_sampling's fast_matmul), at the shapes of
SmolLM2's passes: GFLOP/s of each, the best of `--reps`, and whether oneDNN keeps float32 here (its probe).

    .venv/bin/python bench/matmul_routes.py [--threads 2]
    ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 .venv/bin/python bench/matmul_routes.py   # as on an AVX2 machine

The last line is one JSON object.
"""
import argparse, json, time

import torch
import torch.nn.functional as F

SHAPES = {'prefill (2048 x 576) @ (576 x 1536)': (2048, 576, 1536), 'update (600 x 1536) @ (1536 x 576)': (600, 1536, 576),
          'decoding (24 x 576) @ (576 x 1536)': (24, 576, 1536), 'LM head (24 x 576) @ (576 x 49152)': (24, 576, 49152)}


def rate(m: int, k: int, n: int, reps: int) -> float:
    a, w = torch.randn(m, k), torch.randn(n, k)
    F.linear(a, w)
    best = min((lambda t0: (F.linear(a, w), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(reps))
    return 2 * m * k * n / best / 1e9


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--reps', type=int, default=10)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    from mgrpo_ref.sampling import onednn_keeps_float32
    keeps, out = onednn_keeps_float32(), {}
    print(f"oneDNN keeps float32 here: {keeps}; {a.threads} threads; torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}\n")
    print('| product | default route, GFLOP/s | oneDNN, GFLOP/s | ratio |\n|---|---:|---:|---:|')
    for name, (m, k, n) in SHAPES.items():
        torch.set_float32_matmul_precision('highest'); d = rate(m, k, n, a.reps)
        torch.set_float32_matmul_precision('medium'); o = rate(m, k, n, a.reps)
        torch.set_float32_matmul_precision('highest')
        out[name] = {'default': d, 'onednn': o}
        print(f'| {name} | {d:.0f} | {o:.0f} | {o / d:.2f} |')
    print(json.dumps({'keeps_float32': keeps, 'threads': a.threads, 'rates': out}))


if __name__ == '__main__':
    main()
