"The committed contrast results (docs/contrasts.*, results/contrasts; docs/real_contrast.*, results/real-contrast) and the README's table agree: what a reader sees is what the runs say."
import pytest
from pathlib import Path

import pandas as pd

from mgrpo_ref.contrast_tables import glance_table
from mgrpo_ref.contrasts import BUDGETS, COLUMNS
from mgrpo_ref.experiments import CONTRASTS

ROOT = Path(__file__).resolve().parents[1]
RUNS = pd.read_csv(ROOT / 'docs' / 'contrasts.csv')



def test_every_arm_budget_warm_start_and_seed_has_one_row():
    assert list(RUNS.columns) == COLUMNS
    keys = RUNS[['budget', 'warmstart', 'arm', 'seed']].apply(tuple, axis=1)
    assert keys.is_unique
    want = {(b, w, a, s) for b in BUDGETS for w in (0, 1, 2) for a in CONTRASTS for s in (0, 1, 2)}
    assert set(keys) == want, (sorted(want - set(keys))[:5], sorted(set(keys) - want)[:5])


def test_a_row_from_a_smaller_budget_is_a_run_that_never_met_it():
    stand_ins = RUNS[RUNS.source != 'run']
    assert (stand_ins.run_budget < stand_ins.budget).all() and (stand_ins.budget_reached == 0).all()
    archived = {p.parent.relative_to(ROOT / 'results' / 'contrasts').as_posix()
                for p in (ROOT / 'results' / 'contrasts').glob('budget*/ws*/*/seed*/summary.json')}
    for r in RUNS.itertuples():                                   # every row's run is in the archive, where `mgrpo-contrasts` resumes from
        assert f'budget{r.run_budget}/ws{r.warmstart}/{r.arm}/seed{r.seed}' in archived, r


def test_the_readme_quotes_the_docs_table_of_the_committed_runs():
    "docs/contrasts.md holds the table of the committed runs; every paired difference the README's first section quotes is a cell of that table (the toy column, and the prose) or of docs/real_contrast.md's tables (the real model's column, and the prose)."
    import re
    from mgrpo_ref.real_contrast import TABLES_MARK
    table, docs = glance_table(RUNS), (ROOT / 'docs' / 'contrasts.md').read_text()
    assert table in docs
    real = (ROOT / 'docs' / 'real_contrast.md').read_text().split(TABLES_MARK)[1]
    section = (ROOT / 'README.md').read_text().split('## What it finds', 1)[1].split('\n## ', 1)[0]
    interval = r'([+−-]\d\.\d{3}) \[([+−-]\d\.\d{3}), ([+−-]\d\.\d{3})\]'
    cell = lambda m: f"{m[0]} [{m[1]}, {m[2]}]".replace('−', '-')
    rows = [line.split('|')[2:4] for line in section.splitlines() if line.startswith('| `') and ' [' in line]   # the table's rows, not its header
    assert len(rows) >= 3, section
    for toy, got in rows:
        assert re.findall(interval, toy) and re.findall(interval, got), (toy, got)
        for m in re.findall(interval, toy): assert cell(m) in table, f'README.md quotes {cell(m)}, which is not a cell of docs/contrasts.md'
        for m in re.findall(interval, got): assert cell(m) in real, f'README.md quotes {cell(m)}, which is not in docs/real_contrast.md'
    for m in re.findall(interval, section.rsplit('|\n', 1)[1]):                  # the sentences after the table
        assert cell(m) in table or cell(m) in real, f'README.md says {cell(m)}, which is in neither docs table'


def test_real_contrast_docs_are_the_committed_runs(tmp_path):
    "docs/real_contrast.{md,csv} (below its plan), real_contrast_trace.csv and real_contrast_hops.csv are what the committed runs of the real grid (results/real-contrast) give."
    from mgrpo_ref.real_contrast import REAL_ARMS, TABLES_MARK, grid_rows, real_contrast_docs
    from mgrpo_ref.real_grid import spread_rows
    res = ROOT / 'results' / 'real-contrast'
    if not grid_rows(res): pytest.skip('no run of the real grid is committed yet')
    text = real_contrast_docs(res, tmp_path, spread=spread_rows(res, (0,), REAL_ARMS, (1, 2)))
    assert (ROOT / 'docs' / 'real_contrast.md').read_text().split(TABLES_MARK)[1].strip() == text.strip(), 'rerun: mgrpo-real-contrast --tables --out results/real-contrast'
    for f in ('real_contrast.csv', 'real_contrast_trace.csv', 'real_contrast_hops.csv'):
        assert (ROOT / 'docs' / f).read_text() == (tmp_path / f).read_text(), f


def test_real_curves_docs_are_the_committed_runs(tmp_path):
    "docs/real_curves.md, real_curves.csv and real_behaviour.csv are what the committed curve runs (results/real-curves) give."
    from mgrpo_ref.real_curves import real_curves_docs
    res = ROOT / 'results' / 'real-curves'
    if not res.is_dir(): pytest.skip('no curve run is committed yet')
    text = real_curves_docs(res, tmp_path, ROOT / 'results' / 'real-contrast')
    assert (ROOT / 'docs' / 'real_curves.md').read_text() == text, 'rerun: mgrpo-real-curves --tables'
    for f in ('real_curves.csv', 'real_behaviour.csv'):
        assert (ROOT / 'docs' / f).read_text() == (tmp_path / f).read_text(), f'{f}: rerun mgrpo-real-curves --tables'


def test_the_first_real_contrast_is_kept_as_it_was():
    "The one-warm-start contrast (results/real-contrast-1ws) and its tables (docs/previous/real_contrast_1ws*) stay together: nine runs, each table's rows those runs."
    runs = pd.read_csv(ROOT / 'docs' / 'previous' / 'real_contrast_1ws.csv')
    archived = {(p.parent.parent.name, int(p.parent.name[4:])) for p in (ROOT / 'results' / 'real-contrast-1ws').glob('*/seed*/summary.json')}
    assert set(zip(runs.arm, runs.seed)) == archived and len(archived) == 9


def test_the_readme_quotes_the_real_contrast_as_committed():
    "The README's real-model section shows docs/real_contrast.md's first table as it is, and every interval it quotes before its commands is a cell of docs/real_contrast.md: the front door cannot drift from the runs."
    import re
    from mgrpo_ref.real_contrast import TABLES_MARK
    docs = (ROOT / 'docs' / 'real_contrast.md').read_text().split(TABLES_MARK)[1].strip()   # the tables, below the plan
    section = (ROOT / 'README.md').read_text().split('## A real model', 1)[1].split('```bash', 1)[0]
    assert docs.split('\n\n', 1)[0] in section, 'paste the first table of docs/real_contrast.md into the README'
    prose = section.split('|---|', 1)[1].rsplit('|\n', 1)[1]                  # the sentences after the table
    quoted = re.findall(r'([+−-]\d\.\d{3}) \[([+−-]\d\.\d{3}), ([+−-]\d\.\d{3})\]', prose)
    assert len(quoted) >= 2, section
    for mean, low, high in quoted:
        cell = f"{mean} [{low}, {high}]".replace('−', '-')
        assert cell in docs, f'README.md quotes {cell}, which is not in docs/real_contrast.md'
    for x in re.findall(r'\d\.\d{3}', prose): assert x in docs, f'README.md says {x}, which is not in docs/real_contrast.md'
