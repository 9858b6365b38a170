"Benchmark loaders on fixture files written in the published layouts."
import csv
import json

import pandas as pd
import pytest

from mgrpo_ref.benchmarks import load_gaia, load_webwalkerqa, load_xbench, xor_decrypt, xor_encrypt

GAIA_ROWS = [
    {'task_id': 'c61d22de', 'Question': 'What is the capital of Norvia?', 'Level': 1, 'Final answer': 'Tizast',
     'file_name': '', 'Annotator Metadata': {'Steps': '1. Search.\n2. Read.', 'Number of steps': '2'}},
    {'task_id': '17b5a6a3', 'Question': 'Sum column B of the sheet.', 'Level': 2, 'Final answer': '89706.00',
     'file_name': '17b5a6a3.xlsx', 'Annotator Metadata': {}},
    {'task_id': '04a04a9b', 'Question': 'Who wrote it?', 'Level': 3, 'Final answer': 'A. Author', 'file_name': None,
     'Annotator Metadata': {}},
]


@pytest.mark.parametrize('fmt', ['jsonl', 'parquet'])
def test_gaia(tmp_path, fmt):
    if fmt == 'jsonl':
        (tmp_path / 'metadata.jsonl').write_text('\n'.join(json.dumps(r) for r in GAIA_ROWS) + '\n')
    else:
        pd.DataFrame([{**r, 'Annotator Metadata': json.dumps(r['Annotator Metadata'])} for r in GAIA_ROWS]).to_parquet(tmp_path / 'metadata.parquet')
    qs = load_gaia(tmp_path)
    assert [q.qid for q in qs] == ['c61d22de', '04a04a9b']          # the attachment question is skipped
    assert [q.meta['level'] for q in qs] == [1, 3] and {q.source for q in qs} == {'gaia'}
    assert qs[0].answer == 'Tizast' and qs[0].question.startswith('What is')
    assert len(load_gaia(tmp_path, text_only=False)) == 3


def test_gaia_test_split_answers(tmp_path):
    (tmp_path / 'metadata.jsonl').write_text(json.dumps({**GAIA_ROWS[0], 'Final answer': '?'}))
    with pytest.raises(ValueError, match=r"row 1 has an empty 'Final answer' \('\?'\)"):
        load_gaia(tmp_path)
    assert load_gaia(tmp_path, split='test', require_answer=False)[0].answer == '?'


@pytest.mark.parametrize('missing', ['Question', 'Final answer', 'task_id'])
def test_gaia_missing_field_names_it(tmp_path, missing):
    row = {k: v for k, v in GAIA_ROWS[0].items() if k != missing}
    (tmp_path / 'm.jsonl').write_text(json.dumps(GAIA_ROWS[2]) + '\n' + json.dumps(row) + '\n')
    with pytest.raises(ValueError, match=f"m.jsonl row 2 has no '{missing}' field"):
        load_gaia(tmp_path / 'm.jsonl')


def test_webwalkerqa_both_key_cases(tmp_path):
    upper = {'Question': 'Q1?', 'Answer': 'A1', 'Root_Url': 'https://a.example',
             'Info': {'Hop': 'multi_source', 'Domain': 'conference', 'Language': 'english',
                      'Difficulty_Level': 'medium', 'Source_Website': ['https://a.example/x'], 'Golden_Path': ['a', 'x']}}
    lower = {'question': 'Q2?', 'answer': 'A2', 'root_url': 'https://b.example',
             'info': {'hop': 'single_source', 'domain': 'game', 'language': 'chinese', 'difficulty_level': 'easy',
                      'source_website': [], 'golden_path': []}}
    f = tmp_path / 'silver.jsonl'
    f.write_text(json.dumps(upper) + '\n\n' + json.dumps(lower, ensure_ascii=False) + '\n')
    qs = load_webwalkerqa(f)
    assert [(q.question, q.answer) for q in qs] == [('Q1?', 'A1'), ('Q2?', 'A2')]
    assert qs[0].meta == {'hop': 'multi_source', 'domain': 'conference', 'language': 'english',
                          'difficulty_level': 'medium', 'source_website': ['https://a.example/x'],
                          'golden_path': ['a', 'x'], 'root_url': 'https://a.example'}
    assert qs[1].meta['hop'] == 'single_source' and qs[1].meta['root_url'] == 'https://b.example'
    f.write_text(json.dumps({'Question': 'no answer'}) + '\n')
    with pytest.raises(ValueError, match="silver.jsonl row 1 has no 'Answer' field"):
        load_webwalkerqa(f)


def test_webwalkerqa_bad_json_line(tmp_path):
    f = tmp_path / 'w.jsonl'
    f.write_text('{"Question": "a", "Answer": "b"}\n{oops\n')
    with pytest.raises(ValueError, match='line 2 is not JSON'):
        load_webwalkerqa(f)


@pytest.mark.parametrize('key', ['canary', 'sha256'])
@pytest.mark.parametrize('fmt', ['csv', 'jsonl'])
def test_xbench(tmp_path, key, fmt):
    rows = [{'id': i, 'prompt': xor_encrypt(p, f'canary-{i}', key), 'answer': xor_encrypt(a, f'canary-{i}', key),
             'reference_steps': xor_encrypt('1. 搜索', f'canary-{i}', key), 'canary': f'canary-{i}'}
            for i, (p, a) in enumerate([('2023年哪家公司……?', '蚂蚁集团'), ('Who founded X?', 'Y Z')], start=1)]
    f = tmp_path / f'DeepSearch.{fmt}'
    if fmt == 'csv':
        with f.open('w', newline='', encoding='utf-8') as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0])); w.writeheader(); w.writerows(rows)
    else:
        f.write_text('\n'.join(json.dumps(r) for r in rows))
    qs = load_xbench(f, key=key)
    assert [(q.qid, q.question, q.answer) for q in qs] == [('1', '2023年哪家公司……?', '蚂蚁集团'), ('2', 'Who founded X?', 'Y Z')]
    assert qs[0].meta['reference_steps'] == '1. 搜索' and qs[0].source == 'xbench'


def test_xbench_errors(tmp_path):
    f = tmp_path / 'x.jsonl'
    f.write_text(json.dumps({'id': 1, 'prompt': xor_encrypt('q', 'c'), 'canary': 'c'}))
    with pytest.raises(ValueError, match="x.jsonl row 1 has no 'answer' field"):
        load_xbench(f)
    f.write_text(json.dumps({'id': 1, 'prompt': 'not base64!', 'answer': 'x', 'canary': 'c'}))
    with pytest.raises(ValueError, match='row 1: not base64'):
        load_xbench(f)
    f.write_text(json.dumps({'id': 1, 'prompt': 'plain question', 'answer': 'plain answer'}))
    assert load_xbench(f, encrypted=False)[0].question == 'plain question'
    with pytest.raises(FileNotFoundError, match='no benchmark file'):
        load_xbench(tmp_path / 'nope.csv')
    with pytest.raises(ValueError, match="unsupported file type '.txt'"):
        (tmp_path / 'a.txt').write_text('x'); load_xbench(tmp_path / 'a.txt')


def test_xor_is_an_involution():
    for text in ['', 'a', 'ü' * 100, '问题']:
        for key in ('canary', 'sha256'):
            assert xor_decrypt(xor_encrypt(text, 'k3y', key), 'k3y', key) == text
