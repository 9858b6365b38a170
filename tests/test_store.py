"The Redis store against a real redis-server: expiry, idempotence, bad input, connection errors."
import time

import pytest
from hypothesis import given, settings, strategies as st

from mgrpo_ref.store import LocalRedis, MemoryStore, RedisStore, free_port

scalars = st.one_of(st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False), st.text(max_size=8), st.none())
records = st.dictionaries(st.tuples(st.just(0), st.sampled_from(['q1', 'q2']), st.integers(0, 7)),
                          st.dictionaries(st.sampled_from(['R_M', 'correct', 'format_ok', 'd_k']), scalars, min_size=1), max_size=6)


@pytest.fixture(scope='module')
def shared_redis(tmp_path_factory):
    with LocalRedis(tmp_path_factory.mktemp('redis')) as server:
        yield server


@settings(max_examples=25, deadline=None)
@given(batches=st.lists(records, min_size=1, max_size=3))
def test_redis_matches_memory_and_retries_never_double_count(shared_redis, batches):
    "Any sequence of writes (a record written twice included) reads back the same from Redis as from memory."
    rs, ms = RedisStore(shared_redis.url), MemoryStore()
    run = f'run-{time.monotonic_ns()}'
    merged = {}
    for b in batches + batches[:1]:                 # the first batch again: a retried write
        rs.put_records(run, 0, b); ms.put_records(run, 0, b); merged.update(b)
    rs.finish_step(run, 0, len(merged)); ms.finish_step(run, 0, len(merged))
    assert rs.get_records(run, 0, timeout=1) == ms.get_records(run, 0, timeout=1) == merged
    rs.close()


def test_keys_expire(redis_server):
    "Every key the store writes is set to expire after its ttl (asked of Redis: a check that no machine's speed can break, where waiting for the keys to vanish raced a ttl of 1 s)."
    rs = RedisStore(redis_server.url, ttl=60)
    rs.put_records('r', 0, {(0, 'q', 0): {'R_M': 1.0}}); rs.finish_step('r', 0, 1); rs.put('mgrpo:r:reply:x', {'id': 'x'})
    keys = rs.r.keys('mgrpo:r:*')
    assert len(keys) == 3 and all(0 < rs.r.pttl(k) <= 60_000 for k in keys), [(k, rs.r.pttl(k)) for k in keys]
    rs.close()


def test_bad_urls_and_absent_server_fail_clearly():
    with pytest.raises(ValueError, match="a Redis URL starts with redis://"): RedisStore('localhost:6379')
    with pytest.raises(ValueError, match="ttl must be >= 1"): RedisStore('redis://127.0.0.1:1/0', ttl=0)
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(ConnectionError, match=f"no Redis at redis://127.0.0.1:{port}/0 after 1 s of retries"):
        RedisStore(f'redis://127.0.0.1:{port}/0', retry_s=1)
    assert time.monotonic() - t0 < 30


def test_oversized_messages_are_refused_on_both_sides(redis_server):
    rs = RedisStore(redis_server.url, max_bytes=256)
    with pytest.raises(ValueError, match="over the limit of 256"): rs.push('mgrpo:r:q', {'task': 'x' * 300})
    with pytest.raises(ValueError, match="over the limit of 256"): rs.put_records('r', 0, {(0, 'q', 0): {'note': 'x' * 300}})
    rs.r.rpush('mgrpo:r:q', '{"task": "' + 'x' * 300 + '"}')        # written by someone else: dropped with a logged error
    rs.push('mgrpo:r:q', {'task': 'ok'})
    assert [m for _, m in rs.take('mgrpo:r:q', 'mgrpo:r:taken')] == [{'task': 'ok'}]
    rs.close()


def test_local_redis_restarts_on_the_same_port_with_its_data(tmp_path):
    server = LocalRedis(tmp_path)
    with server:
        rs = RedisStore(server.url)
        rs.put('mgrpo:r:k', {'v': 1})
        server.stop(); server.start()
        assert rs.get('mgrpo:r:k') == {'v': 1}
        rs.close()
    assert server.proc.poll() is not None


def test_default_local_redis_refuses_a_client_without_its_password(tmp_path):
    "LocalRedis requires a random password by default, given to redis-server in a 0600 file, never in its argv."
    import os, redis
    from pathlib import Path
    with LocalRedis(tmp_path) as server:
        with pytest.raises(redis.AuthenticationError): redis.Redis(host='127.0.0.1', port=server.port).ping()
        assert len(server.password) >= 32 and server.password in server.url
        assert server.password not in Path(f'/proc/{server.proc.pid}/cmdline').read_text()
        assert oct(os.stat(tmp_path / 'redis.conf').st_mode & 0o777) == '0o600'
        assert RedisStore(server.url).r.ping()
    assert LocalRedis(tmp_path / 'b').password != LocalRedis(tmp_path / 'c').password
