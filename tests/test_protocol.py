"Protocol: the parser and validator never raise, accept every oracle trace, and reject mutations sensibly."
import random

import pytest
from hypothesis import given, settings, strategies as st

from mgrpo_ref.oracle import solve
from mgrpo_ref.protocol import (FINAL_ACTION, ROLE_ACTIONS, FormatCheck, ParsedTurn, parse_turn,
                                validate_trajectory)

ROLES = list(ROLE_ACTIONS)
TAGS = [f'<{t}>' for t in ('think', 'search', 'visit', 'result', 'answer', 'delegate', 'page', 'x')]
TAGS += [t.replace('<', '</') for t in TAGS]
# text built from tag fragments and noise, which reaches every state of the machine
tag_soup = st.lists(st.one_of(st.sampled_from(TAGS), st.text(max_size=8), st.sampled_from(['<', '>', '/', ' ', '\n'])),
                    max_size=12).map(''.join)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.text(), tag_soup), st.sampled_from(ROLES))
def test_parse_never_raises(text, role):
    p = parse_turn(text, role)
    assert isinstance(p, ParsedTurn)
    assert p.ok == (p.error is None)
    if p.ok:
        assert p.action in ROLE_ACTIONS[role] and p.argument and p.argument == p.argument.strip()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(), tag_soup), max_size=6), st.sampled_from(ROLES), st.one_of(st.none(), st.integers(1, 8)))
def test_validate_never_raises(turns, role, max_turns):
    c = validate_trajectory(turns, role, max_turns)
    assert isinstance(c, FormatCheck) and c.ok == (c.error is None)
    if c.ok:
        assert c.output == c.turns[-1].argument and c.turns[-1].action == FINAL_ACTION[role]


free_text = st.text(alphabet=st.characters(blacklist_characters='<>'), min_size=1, max_size=30).filter(lambda s: s.strip())


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(ROLES), st.data(), st.one_of(st.none(), free_text), free_text, st.sampled_from(['', ' ', '\n']))
def test_valid_turns_roundtrip(role, data, think, arg, ws):
    action = data.draw(st.sampled_from(ROLE_ACTIONS[role]))
    text = (f'<think>{think}</think>{ws}' if think else '') + f'<{action}>{arg}</{action}>{ws}'
    p = parse_turn(text, role)
    assert p == ParsedTurn(True, action=action, argument=arg.strip(), think=think.strip() if think else None)


def _episodes(ep):
    yield ep
    for s in ep.subs: yield from _episodes(s)


@pytest.fixture(scope='module')
def oracle_episodes(world, setup):
    qs = world.questions['test'] + world.questions['train'][:120]
    return [e for q in qs for sys in ('mgrpo', 'single') for e in _episodes(solve(q, setup, sys))]


def test_validator_accepts_every_oracle_trace(oracle_episodes):
    assert len(oracle_episodes) > 500
    for ep in oracle_episodes:
        c = validate_trajectory(ep.turns, ep.role)
        assert c.ok, (ep.role, ep.turns, c.error)
        assert c.output == ep.output


def _mutate(text: str, rng: random.Random) -> str:
    i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
    kind = rng.randrange(4)
    if kind == 0: return text[:i] + text[j:]                                   # delete a span
    if kind == 1: return text[:i] + rng.choice(['<', '>', '/', '<x>', '</think>']) + text[i:]
    if kind == 2: return text[:i] + text[i:j][::-1] + text[j:]                 # reverse a span
    return text + text[i:j]                                                    # append a copy of a span


def test_mutated_oracle_traces_never_raise(oracle_episodes):
    rng = random.Random(0)
    changed = rejected = 0
    for ep in oracle_episodes[:400]:
        turns = list(ep.turns)
        k = rng.randrange(len(turns))
        turns[k] = _mutate(turns[k], rng)
        c = validate_trajectory(turns, ep.role)
        changed += turns[k] != ep.turns[k]
        rejected += not c.ok
        for t in turns: parse_turn(t, ep.role)
    assert changed > 300 and rejected > 100   # mutations mostly break the format, and none raise


def test_turn_order_rules():
    sub = ['<search>q</search>', '<visit>d1</visit>', '<result>r</result>']
    assert validate_trajectory(sub, 'sub').ok
    assert not validate_trajectory(sub[::-1], 'sub').ok
    assert not validate_trajectory(['<delegate>t</delegate>'], 'main').ok
    assert validate_trajectory(['<delegate>t</delegate>', '<answer>a</answer>'], 'main').ok
    assert validate_trajectory(['<search>q</search>', '<answer>a</answer>'], 'single').ok
    assert not validate_trajectory(['<search>q</search>', '<answer>a</answer>'], 'sub').ok
