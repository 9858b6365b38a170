"""Every notebook run top to bottom in a real Jupyter kernel, timed: what a learner's "Run All" costs.

    .venv/bin/python bench/notebooks.py [--only 07_,21_] [--out runs/kernel]

Each notebook of `nbs/` is executed with nbclient as JupyterLab would run it: in its own folder, `IN_TEST`
unset, `#| slow` cells included, one notebook at a time so that each has the machine's cores to itself. The
executed copies go to OUT (the notebooks in `nbs/` are left as they are), with `times.csv` (notebook, seconds,
ok, error) and a markdown table on stdout. A notebook that raises is reported with its error and the others
still run; the exit status is 1 if any failed. `make notebooks-kernel` runs it; docs/timings.md keeps the
measured table.
"""
import argparse, csv, os, platform, sys, time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def run_one(path: Path, out: Path, timeout: int) -> tuple[float, str]:
    "Execute `path` in its folder; write the executed copy to `out`; return (seconds, error or '')."
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name='python3',
                            resources={'metadata': {'path': str(path.parent)}})
    t0, err = time.perf_counter(), ''
    try: client.execute()
    except CellExecutionError as e: err = str(e).strip().splitlines()[-1][:200]
    except Exception as e: err = f'{type(e).__name__}: {e}'[:200]
    secs = time.perf_counter() - t0
    nbformat.write(nb, out / path.name)
    return secs, err


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--nbs', default='nbs', help='folder of the notebooks')
    p.add_argument('--only', default='', help='comma-separated name prefixes (e.g. 07_,21_); default: every notebook')
    p.add_argument('--out', default='runs/kernel', help='executed copies and times.csv go here')
    p.add_argument('--timeout', type=int, default=1800, help='seconds one cell may take')
    a = p.parse_args(argv)
    os.environ.pop('IN_TEST', None)
    out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
    only = [s for s in a.only.split(',') if s]
    paths = [q for q in sorted(Path(a.nbs).glob('*.ipynb')) if not only or any(q.name.startswith(s) for s in only)]
    if not paths: sys.exit(f'no notebook in {a.nbs!r} matches --only {a.only!r}')
    print(f'{len(paths)} notebooks, {os.cpu_count()} cores, python {platform.python_version()}', flush=True)
    rows = []
    for q in paths:
        secs, err = run_one(q.resolve(), out, a.timeout)
        rows.append(dict(notebook=q.name, seconds=round(secs, 1), ok=not err, error=err))
        print(f'  {q.name:28s} {secs:7.1f} s  {"ok" if not err else "FAILED: " + err}', flush=True)
    with open(out / 'times.csv', 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0])); w.writeheader(); w.writerows(rows)
    print('\n| notebook | real-kernel seconds | ok |\n|---|---:|---|')
    for r in rows: print(f"| `{r['notebook']}` | {r['seconds']:.0f} | {'yes' if r['ok'] else 'no: ' + r['error']} |")
    total = sum(r['seconds'] for r in rows)
    print(f"| all {len(rows)} | {total:.0f} | {sum(r['ok'] for r in rows)} ok |")
    print(f'slowest: {max(rows, key=lambda r: r["seconds"])["notebook"]}; times in {out / "times.csv"}')
    return 0 if all(r['ok'] for r in rows) else 1


if __name__ == '__main__': sys.exit(main())
