"""Fuzz the decoupled servers over a real redis-server: more than 10,000 malformed delegations, replies, records and
completion markers, sent while the two servers train. No crash, every bad one rejected and counted, and the training
exactly that of a clean (co-located) run.

Every message generated here is invalid by construction (a wrong type, a missing or extra field, a number out of
range, NaN, a bad key, broken JSON, nesting too deep, over the size limit); none is a well-formed forgery, which
only the store's password keeps out (`tests/test_store.py`)."""
import copy, json, random, uuid

from mgrpo_ref import channel, servers
from mgrpo_ref.store import MAX_MESSAGE_BYTES, RedisStore, LocalRedis

from test_servers import assert_trains_like_colocated, config, lines, spawn, start  # noqa: F401  (start: a fixture)

BAD_TEXTS = ['not json', '{"id": ', '[1, 2, 3]', '"a string"', '17', 'null', '{}', '[' * 100_000, '{"need": 1' + '0' * 5000 + '}',
             b'\xff\xfe{"id": 1}', 'NaN', '{"a": ' * 2000]

# for each field of a delegation, values that make it invalid (a wrong type, out of range, NaN, bad unicode, nested junk)
BAD_DELEGATION = {
    'id': [None, 7, ['x'], {'a': 1}, '', 'é' * 32, 'G' * 32, uuid.uuid4().hex + '0', True],
    'need': [None, '3', 3.5, True, -1, 2 ** 40, 10 ** 30, [], {'n': 1}],
    'seed': [None, '0', 0.5, True, 2 ** 70, -2 ** 70, float('nan')],
    'sampling': [None, [], 'x', {}, {'max_new_tokens': 0, 'temperature': 1.0, 'top_p': 1.0},
                 {'max_new_tokens': 8, 'temperature': float('nan'), 'top_p': 1.0}, {'max_new_tokens': 8, 'temperature': 1.0, 'top_p': 0.0},
                 {'max_new_tokens': 8, 'temperature': float('inf'), 'top_p': 1.0}, {'max_new_tokens': 8, 'temperature': 1.0, 'top_p': 1.0, 'beam': 2},
                 {'max_new_tokens': 2 ** 40, 'temperature': 1.0, 'top_p': 1.0}, {'max_new_tokens': '8', 'temperature': 1.0, 'top_p': 1.0}],
    'cache': [None, 0, 1, 'true', []],
    'main_version': [None, -1, 1.5, '2', False, 10 ** 30],
    'requests': [None, {}, 'x', [], [None], [[0, 'q', 0, 0]], [{'key': [0, 'q', 0], 'task': 'x'}], [{'key': [0, '', 0, 0], 'task': 'x'}],
                 [{'key': [0, 'q', 0, 0], 'task': 5}], [{'key': [0, 'q', 0, 0]}], [{'key': [0, 'q', 0, 0], 'task': 'x', 'z': 1}],
                 [{'key': [-1, 'q', 0, 0], 'task': 'x'}], [{'key': [0, 'q', 0, 0.5], 'task': 'x'}], [{'key': [0, 7, 0, 0], 'task': 'x'}],
                 [{'key': [0, 'q', 0, 0], 'task': 'x' * 100_001}]],
}
BAD_REPLY = {
    'id': BAD_DELEGATION['id'],
    'sub_version': [None, -1, '0', 0.0, True, 2 ** 40],
    'sub_steps': [None, -1, '0', 1.5, False, 10 ** 20],
    'responses': [None, {}, 'x', [None], [{'key': [0, 'q', 0, 0], 'report': 'r'}], [{'key': [0, 'q', 0], 'report': 'r', 'format_ok': True}],
                  [{'key': [0, 'q', 0, 0], 'report': 3, 'format_ok': True}], [{'key': [0, 'q', 0, 0], 'report': 'r', 'format_ok': 1}]],
}
BAD_RECORD = {
    'R_M': [None, 'x', float('nan'), float('inf'), 1e9, [1]],
    'correct': [None, '1', 1.5, -0.1, float('nan')],
    'format_ok': [None, 1, 'yes'],
    'd_k': [None, -1, 1.5, '2', 2 ** 40],
    'main_version': [None, -3, '0', 0.5],
}


def nested(depth: int):
    v = 'x'
    for _ in range(depth): v = [v] if depth % 2 else {'a': v}
    return v


def mutate(good: dict, table: dict, rng: random.Random):
    "A copy of `good` made invalid in one of several ways: as JSON text, or raw text that is not a valid message at all."
    m, how = copy.deepcopy(good), rng.random()
    if how < 0.55:
        f = rng.choice(sorted(table)); m[f] = rng.choice(table[f])                   # a wrong value
    elif how < 0.7: del m[rng.choice(sorted(m))]                                      # a missing field
    elif how < 0.8: m[rng.choice(['extra', 'ünï', '\u202e', 'x' * 300, 'key_'])] = rng.choice([1, 'z', None, nested(40)])  # an extra one
    elif how < 0.85:                                                                  # several at once
        for f in rng.sample(sorted(table), 2): m[f] = rng.choice(table[f])
    elif how < 0.9: m = nested(rng.randint(5, 60))                                   # nested junk, not an object
    else: return rng.choice(BAD_TEXTS)
    return json.dumps(m)


def test_ten_thousand_bad_messages_change_nothing(start, world, tmp_path, monkeypatch, capfd):
    import torch
    torch.set_num_threads(1)
    cfg, rng = config(), random.Random(0)
    sent = {'Delegation': 0, 'Reply': 0, 'record': 0, 'marker': 0}
    orig_push, orig_put = RedisStore.push, RedisStore.put_records
    state = {'first': True}

    def push(self, name, msg):                                      # the main server's pushes, in this process
        if not name.endswith(':delegations'): return orig_push(self, name, msg)
        good_reply = {'id': msg['id'], 'sub_version': 0, 'sub_steps': 0,
                      'responses': [{'key': r['key'], 'report': 'r', 'format_ok': True} for r in msg['requests']]}
        replies = [mutate(good_reply, BAD_REPLY, rng) for _ in range(150)]
        replies += [json.dumps({**good_reply, 'id': uuid.uuid4().hex}),                            # another delegation's reply
                    json.dumps({**good_reply, 'responses': good_reply['responses'][:-1]})]         # keys that do not match
        self.r.rpush(channel.reply_key(self, cfg.run, msg['id']), *replies)                       # ahead of the real reply
        n = 7000 if state.pop('first', False) else 200
        junk = [mutate(msg, BAD_DELEGATION, rng) for _ in range(n)]
        if sent['Delegation'] == 0: junk += ['x' * (MAX_MESSAGE_BYTES + 1), json.dumps({**msg, 'pad': 'y' * MAX_MESSAGE_BYTES})]   # oversized
        self.r.rpush(name, *junk)                                                                   # ahead of the real delegation
        sent['Reply'] += len(replies); sent['Delegation'] += len(junk)
        return orig_push(self, name, msg)

    def put_records(self, run, step, records):
        n = orig_put(self, run, step, records)
        good = next(iter(records.values()))
        junk = {}
        for i in range(500):                                        # a bad value under a well-formed key of no real rollout
            rec = {**good, **{f: rng.choice(v) for f, v in rng.sample(sorted(BAD_RECORD.items()), 1)}}
            if i % 5 == 0: rec.pop(rng.choice(sorted(rec)))
            key = json.dumps([step, f'fuzz-{i}', 0])
            if i % 7 == 0: key = rng.choice([json.dumps([step + 1, 'q', 0]), json.dumps([step, 'q', 0, 0]), json.dumps([step, '', 0]),
                                            json.dumps([step, 'q', -1]), 'not json', json.dumps({'step': step}), '[' * 10_000])
            junk[key] = json.dumps(rec) if i % 11 else rng.choice(BAD_TEXTS)
        self.r.hset(self.key(run, 'records', step), mapping=junk)
        sent['record'] += len(junk)
        return n

    with LocalRedis(tmp_path / 'redis') as redis:
        rs = RedisStore(redis.url)
        markers = ['two', '-1', '1e3', '', '99999999999', 'NaN', '3.0', '\u0663', '{"n": 2}']
        for s in range(cfg.steps): rs.r.set(rs.key(cfg.run, 'done', s), markers[s % len(markers)])   # until the main server's own
        sent['marker'] = cfg.steps
        sub = spawn(servers.run_sub_server, cfg, redis.url, tmp_path / 'run/sub_server', start, threads=1)
        monkeypatch.setattr(RedisStore, 'push', push); monkeypatch.setattr(RedisStore, 'put_records', put_records)
        servers.run_main_server(cfg, redis.url, tmp_path / 'run', start, threads=1, progress=False)
        monkeypatch.undo()
        sub.join(600)
        assert sub.exitcode == 0                                                                   # no crash
        rs.close()
    capfd.readouterr()
    total = sum(sent.values())
    rejected = {**json.loads((tmp_path / 'run/rejected.json').read_text()), **json.loads((tmp_path / 'run/sub_server/rejected.json').read_text())}
    print(f"fuzz: sent {total} bad messages {sent}, rejected {rejected}")
    assert total >= 10_000
    assert {k: rejected.get(k, 0) for k in ('Delegation', 'Reply', 'record')} == {k: sent[k] for k in ('Delegation', 'Reply', 'record')}
    # a marker is overwritten by the main server's own once its step is done: a junk one the sub server never polled
    # before that is never seen (in practice each is, since the sub server polls its next step while the main one works)
    assert 1 <= rejected.get('marker', 0) <= sent['marker']
    assert [m['step'] for m in lines(tmp_path / 'run/sub_server/metrics.jsonl')] == list(range(1, cfg.steps + 1))
    assert_trains_like_colocated(world, cfg, start, tmp_path / 'run')               # training unaffected
