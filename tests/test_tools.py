"Tools: retrieval difficulty, error observations that never raise, answer matching against naive oracles."
import re
import string
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from mgrpo_ref.tools import (BM25Search, PageStore, ToolError, ToolSession, exact_match, normalize_answer,
                             search_recall, token_f1)
from mgrpo_ref.world import Page, build_world


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_recall_hard_but_solvable(seed):
    w = build_world(seed=seed)
    recall = search_recall(w, BM25Search(w.pages), ks=(1, 5))
    assert set(recall) == {1, 2, 3}
    for hop, r in recall.items():
        assert r[5] >= 0.9, (hop, r)          # a good query finds the page
        assert r[1] <= r[5] - 0.1, (hop, r)   # but distractors outrank it often


def test_no_distractors_no_difficulty():
    w = build_world(seed=0, family_size=1, train_questions=120, test_questions=30)
    assert all(r[1] >= 0.95 for r in search_recall(w, BM25Search(w.pages), ks=(1,)).values())


def test_bm25_ranking_matches_bm25s_retrieve(world):
    "Our stable ranking of get_scores gives the same top-5 scores as the library's own retrieve."
    import bm25s
    eng = BM25Search(world.pages)
    pos = {p.id: i for i, p in enumerate(world.pages)}
    for q in world.questions['test'][:20]:
        query = q.chain[0].question
        ours = [float(eng.scores(query)[pos[h.id]]) for h in eng.search(query, k=5)]
        _, lib = eng.index.retrieve(bm25s.tokenize([query], stopwords='en', return_ids=False, show_progress=False),
                                    k=5, show_progress=False)
        assert ours == sorted(ours, reverse=True)
        assert ours == pytest.approx(sorted(map(float, lib[0]), reverse=True), rel=1e-6)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.integers(), st.none(), st.lists(st.text())))
def test_tools_never_raise(world_tools, value):
    assert isinstance(world_tools.search(value), (list, ToolError))
    assert isinstance(world_tools.visit(value), (Page, ToolError))


@pytest.fixture(scope='module')
def world_tools():
    w = build_world(seed=0)
    return ToolSession(BM25Search(w.pages), PageStore(w.pages), seed=0)


def test_session_errors_and_handles(world):
    for handles in ('title', 'alias'):
        s = ToolSession(BM25Search(world.pages), PageStore(world.pages), handles=handles, seed=3)
        assert s.search('') == ToolError('search', 'empty query: give some words to search for')
        assert 'unknown page' in s.visit('p0001').message           # backend ids are hidden
        assert 'unknown page' in s.visit(world.pages[0].title).message    # nothing shown yet: no title resolves
        hits = s.search(world.questions['test'][0].chain[0].question)
        assert len({h.id for h in hits}) == len(hits)
        if handles == 'alias': assert all(re.fullmatch(r'd\d\d', h.id) for h in hits)
        else: assert all(h.id == h.title for h in hits)
        for h in hits: assert s.visit(h.id).title == h.title
    plain = ToolSession(BM25Search(world.pages), PageStore(world.pages), shuffle=False, handles='id')
    assert plain.search('Who founded') == BM25Search(world.pages).search('Who founded', 5)


def test_alias_pool_overflow_keeps_ids_unique(world):
    s = ToolSession(BM25Search(world.pages), PageStore(world.pages), k=10, handles='alias', alias_pool=3, seed=0)
    ids = [h.id for q in world.questions['test'][:5] for h in s.search(q.question)]
    titles = [h.title for q in world.questions['test'][:5] for h in s.search(q.question)]
    assert len(set(ids)) == len(set(titles))


def _naive_normalize(s):
    s = s.lower()
    s = ''.join(ch for ch in s if ch not in set(string.punctuation))
    return ' '.join(w for w in s.split() if w not in ('a', 'an', 'the'))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.punctuation + ' \t', max_size=40))
def test_normalize_matches_naive(s):
    assert normalize_answer(s) == _naive_normalize(s)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_f1_properties(a, b):
    f = token_f1(a, b)
    assert 0.0 <= f <= 1.0
    assert f == pytest.approx(token_f1(b, a))
    pa, pb = normalize_answer(a).split(), normalize_answer(b).split()
    assert (f == 1.0) == (Counter(pa) == Counter(pb))
    assert exact_match(a, b) == (normalize_answer(a) == normalize_answer(b))


def test_titles_are_unique_so_they_can_name_pages():
    for seed in range(4):
        w = build_world(seed=seed)
        titles = [' '.join(p.title.lower().split()) for p in w.pages]
        assert len(set(titles)) == len(titles), seed


def test_http_retriever_turns_every_server_failure_into_an_observation():
    import json, urllib.error, urllib.request
    from mgrpo_ref.tools import Hit, HttpRetriever, serve_retrieval
    world = build_world(seed=0)

    class Broken:                                          # a backend whose hits name pages the server does not have
        def search(self, query, k): return [Hit('nope', 'Nope', '')]
    srv = serve_retrieval(world.pages, engine=Broken())
    try:
        err = HttpRetriever(srv.url).search('founder')
        assert err.tool == 'search' and 'HTTP Error 400' in err.message, err
        req = urllib.request.Request(srv.url + '/retrieve', b'{"topk": 3}', {'Content-Type': 'application/json'})
        with pytest.raises(urllib.error.HTTPError) as e: urllib.request.urlopen(req, timeout=5)
        assert e.value.code == 400 and 'queries' in json.loads(e.value.read())['error']
        err = HttpRetriever(srv.url + '/other/').search('founder')       # wrong path: 404, still an observation
        assert 'HTTP Error 404' in err.message, err
    finally:
        srv.shutdown(); srv.server_close()
    slow = HttpRetriever('http://10.255.255.1:9', timeout=0.2).search('founder')    # unroutable: a timeout
    assert slow.tool == 'search' and 'failed' in slow.message
