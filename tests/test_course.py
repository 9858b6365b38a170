"""The course around the notebooks: every "Questions for the reader" list has one folded answer per question, right below it.

A notebook's questions are the numbered items after its `**Questions for the reader**` line, up to `**Further reading**`,
a heading or the end of that markdown cell; an answer is a `<details><summary>Answer</summary> ... </details>` block.
Notebooks without such a list are skipped."""
import json, re
from pathlib import Path

import pytest

NBS = Path(__file__).resolve().parents[1] / 'nbs'
MARKER = '**Questions for the reader**'
ANSWER = re.compile(r'<details>\s*<summary>\s*Answer\b.*?</details>', re.S | re.I)   # one folded answer, whole
OPEN = re.compile(r'<details>\s*<summary>\s*Answer\b', re.I)
QUESTION = re.compile(r'^ {0,2}\d+[.)][ \t]+\S', re.M)                               # a list item, not a wrapped line (3 spaces)
END = re.compile(r'^(\*\*Further reading\*\*|#)', re.M)


def questions_section(path: Path) -> str | None:
    "The text of `path`'s questions list (from the marker to Further reading, a heading or the cell's end), None if it has none."
    for cell in json.loads(path.read_text(encoding='utf-8'))['cells']:
        src = ''.join(cell['source']) if isinstance(cell['source'], list) else cell['source']
        if cell['cell_type'] == 'markdown' and MARKER in src:
            rest = src.split(MARKER, 1)[1]
            end = END.search(rest)
            return rest[:end.start()] if end else rest
    return None


def sequence(section: str) -> str:
    "The section as a string of 'Q' (a question) and 'A' (a complete answer block), in order; text inside answers is not read for questions."
    events, pos = [], 0
    for m in ANSWER.finditer(section):
        events += [(q.start() + pos, 'Q') for q in QUESTION.finditer(section[pos:m.start()])] + [(m.start(), 'A')]
        pos = m.end()
    events += [(q.start() + pos, 'Q') for q in QUESTION.finditer(section[pos:])]
    return ''.join(kind for _, kind in sorted(events))


def test_the_parser_on_a_small_list():
    section = """
1. Why?
   It is a question

   <details><summary>Answer</summary>

   Because. A list inside an answer is not a question:
   1. first

   </details>

2. And how?
"""
    assert sequence(section) == 'QAQ'
    assert sequence(section.replace('2. And how?', '')) == 'QA'


NOTEBOOKS = sorted(NBS.glob('*.ipynb'))


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_question_has_an_answer(path):
    section = questions_section(path)
    if section is None: pytest.skip(f'{path.name} has no questions for the reader')
    seq = sequence(section)
    questions, answers = seq.count('Q'), seq.count('A')
    assert questions > 0, f"{path.name}: the questions list after {MARKER} has no numbered question"
    assert len(OPEN.findall(section)) == answers, f"{path.name}: an answer block is not closed with </details>"
    assert answers == questions, f"{path.name}: {questions} questions but {answers} answers"


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_each_answer_follows_its_question(path):
    section = questions_section(path)
    if section is None: pytest.skip(f'{path.name} has no questions for the reader')
    seq = sequence(section)
    assert seq == 'QA' * seq.count('Q'), f"{path.name}: questions (Q) and answers (A) in the order {seq}, expected {'QA' * seq.count('Q')}"


@pytest.mark.parametrize('path', sorted(NBS.glob('*.ipynb')), ids=lambda p: p.stem)
def test_opens_in_jupyterlab_without_a_dialog_or_stale_widgets(path):
    "JupyterLab opens a notebook on its kernel without asking (a python3 kernelspec) and renders no widget whose state was dropped."
    nb = json.loads(path.read_text())
    assert nb['metadata'].get('kernelspec', {}).get('name') == 'python3', 'no python3 kernelspec: JupyterLab asks to select a kernel'
    assert 'widgets' not in nb['metadata'], 'widget state from progress bars: run the notebook with bars off, or drop it'
    for c in nb['cells']:
        for o in c.get('outputs', []):
            assert 'application/vnd.jupyter.widget-view+json' not in o.get('data', {}), f"cell {c.get('id')}: a widget output (a tqdm bar)"


TRACK_1 = ('index', '08_rewards', '09_alignment', '10_advantages', '11_loss', '12_one_step')


def track_size(names=TRACK_1) -> tuple[int, int]:
    "Words of prose (folded answers aside) and non-blank lines of code (hidden cells aside) of a track's notebooks."
    words = lines = 0
    for n in names:
        for c in json.loads((NBS / f'{n}.ipynb').read_text())['cells']:
            s = ''.join(c['source'])
            if c['cell_type'] == 'markdown': words += len(re.findall(r"[A-Za-z][A-Za-z'-]*", re.sub(r'<details>.*?</details>', '', s, flags=re.S)))
            elif not s.startswith('#| hide'): lines += sum(1 for x in s.splitlines() if x.strip())
    return words, lines


def test_the_readme_states_each_tracks_size():
    "Each track of the README's learning path that states a size ('N words ... M lines of code') is within 5% of what its notebooks (the row's links) hold now."
    readme = (NBS.parent / 'README.md').read_text()
    rows = [r for r in readme.split('## Start here', 1)[1].split('\n## ', 1)[0].splitlines() if r.startswith('| **')]
    sized = [(re.findall(r'nbs/([\w.-]+)\.ipynb', r), re.search(r'([\d,]+) words[^|]*?([\d,]+) lines of code', r)) for r in rows]
    assert sum(m is not None for _, m in sized) >= 3, rows
    for names, m in sized:
        if m is None: continue
        words, lines = track_size(names)
        said_words, said_lines = (int(x.replace(',', '')) for x in m.groups())
        assert abs(said_words - words) <= 0.05 * words and abs(said_lines - lines) <= 0.05 * lines, (names[0], words, lines, m.group(0))


def test_the_front_doors_stay_short():
    "README.md holds at most 9,000 characters and index (its markdown and code) at most 8,000: a newcomer reads both whole."
    assert len((NBS.parent / 'README.md').read_text()) <= 9000
    assert sum(len(''.join(c['source'])) for c in json.loads((NBS / 'index.ipynb').read_text())['cells']) <= 8000
