"Decoupled training against a real redis-server: faults (Redis restart, sub server killed), bad messages, auth, what crosses."
import json, multiprocessing, os, re, subprocess, sys, threading, time
from pathlib import Path

import pytest

from mgrpo_ref import channel, servers
from mgrpo_ref.policy import Policy
from mgrpo_ref.rollout import RolloutConfig
from mgrpo_ref.store import LocalRedis, RedisStore
from mgrpo_ref.config import TrainConfig
from mgrpo_ref.trainer import Trainer
from mgrpo_ref.warmstart import save_policies
from conftest import TRAINED_ALIKE, apart
from test_tracking import tb_scalars

# The tests' servers fork from one process that has imported the package once (forkserver), where spawn would start each
# as a new interpreter and import torch and transformers again (about 6 s of CPU each on a slow 2-core machine).
# decoupled() and the console scripts, which the tests below also run, start theirs as users get them.
CTX = multiprocessing.get_context('forkserver')
CTX.set_forkserver_preload(['mgrpo_ref.servers'])


def config(**kw) -> TrainConfig:
    base = dict(steps=4, questions_per_step=2, rollout=RolloutConfig(k=2), eval_every=0, eval_questions=2, eval_samples=1,
                checkpoint_every=0, run='t')
    return TrainConfig(**{**base, **kw})


@pytest.fixture(scope='module')
def start(warm_policies, tmp_path_factory):
    return save_policies({r: warm_policies[r] for r in ('main', 'sub')}, tmp_path_factory.mktemp('start'))


def spawn(target, *args, ctx=CTX, **kw):
    p = ctx.Process(target=target, args=args, kwargs=kw); p.start(); return p


def lines(path: Path) -> list[dict]:
    return [json.loads(l) for l in path.read_text().splitlines()] if path.exists() else []


def steps(run: Path) -> list[dict]:
    "The training steps' metric lines (evaluation-only lines left out)."
    return [m for m in lines(run / 'metrics.jsonl') if 'time/at' in m]


def wait_for(cond, timeout=300, what=''):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline: raise TimeoutError(what)
        time.sleep(0.05)


def test_redis_restart_mid_run_loses_and_double_counts_nothing(start, tmp_path):
    cfg = config()
    with LocalRedis(tmp_path / 'redis') as redis:
        sub = spawn(servers.run_sub_server, cfg, redis.url, tmp_path / 'run/sub_server', start, threads=1)
        main = spawn(servers.run_main_server, cfg, redis.url, tmp_path / 'run', start, threads=1, progress=False)
        wait_for(lambda: len(lines(tmp_path / 'run/metrics.jsonl')) >= 2, what='step 1')
        redis.kill(); time.sleep(1.0); redis.start()                      # a crash and a restart, mid-run
        main.join(300); sub.join(300)
        assert (main.exitcode, sub.exitcode) == (0, 0)
    consumed = lines(tmp_path / 'run/sub_server/metrics.jsonl')
    assert [m['step'] for m in consumed] == [1, 2, 3, 4]                 # every step trained once
    assert [m['sub/records'] for m in consumed] == [cfg.questions_per_step * cfg.rollout.k] * 4   # every record once
    assert {m['sub/lag'] for m in steps(tmp_path / 'run')} <= {0, None}                # synchronous throughout (None: no delegation)


def test_bounded_staleness_keeps_the_sub_agent_at_most_max_lag_steps_behind(start, tmp_path):
    cfg = config()
    summary = servers.decoupled(cfg, tmp_path / 'run', start, threads=1, max_lag=1, progress=False)
    main = steps(tmp_path / 'run')
    assert summary['steps'] == 4 and main[0]['sub/lag'] in (0, None)         # step 1: nothing to lag behind
    assert all(m['sub/lag'] in (0, 1, None) for m in main), [m['sub/lag'] for m in main]
    assert [m['sub/records'] for m in main] == [cfg.questions_per_step * cfg.rollout.k] * 4   # merged: every step trained once


def test_sub_server_killed_main_server_times_out_clearly(start, tmp_path):
    cfg = config()
    sub_out = tmp_path / 'run/sub_server'
    with LocalRedis(tmp_path / 'redis') as redis:
        sub = spawn(servers.run_sub_server, cfg, redis.url, sub_out, start, threads=1)
        wait_for(lambda: (sub_out / 'journal').is_dir(), what='the sub server to start')   # made once its policy is loaded
        stop = threading.Event()
        def kill_after_step_1():
            wait_for(lambda: stop.is_set() or len(lines(sub_out / 'metrics.jsonl')) >= 1); sub.kill()
        killer = threading.Thread(target=kill_after_step_1); killer.start()
        try:
            # the timeout must outlast the live sub server's answers to step 0 on a slow, busy machine, and is waited out once after the kill
            with pytest.raises(TimeoutError, match=r"the sub server did not answer delegation \w+ \(step 1, \d+ tasks\) within 10.0 s: "
                                                   r"is mgrpo-sub-server running for run 't'"):
                servers.run_main_server(cfg, redis.url, tmp_path / 'run', start, threads=1, timeout=10.0, progress=False)
        finally:
            stop.set(); killer.join(); sub.join()
    assert len(lines(sub_out / 'metrics.jsonl')) == 1                   # it trained step 1 and died before step 2 (keys count from 0)


def test_restarted_sub_server_resumes_and_matches_an_uninterrupted_run(start, world, tmp_path):
    import torch
    torch.set_num_threads(1)
    cfg = config(checkpoint_every=2)
    with LocalRedis(tmp_path / 'redis') as redis:
        sub = spawn(servers.run_sub_server, cfg, redis.url, tmp_path / 'run/sub_server', start, threads=1)
        main = spawn(servers.run_main_server, cfg, redis.url, tmp_path / 'run', start, threads=1, timeout=2.0,
                     on_timeout='resend', progress=False)
        wait_for(lambda: len(lines(tmp_path / 'run/sub_server/metrics.jsonl')) >= 3, what='sub step 3')
        sub.kill(); sub.join()                                           # dies after step 3: its checkpoint is at step 2
        assert not (tmp_path / 'run/sub_server/journal/step-1.jsonl').exists()   # pruned by the checkpoint
        sub = spawn(servers.run_sub_server, cfg, redis.url, tmp_path / 'run/sub_server', None, resume=True, threads=1)
        main.join(300); sub.join(300)
        assert (main.exitcode, sub.exitcode) == (0, 0)
    assert [m['step'] for m in lines(tmp_path / 'run/sub_server/metrics.jsonl')] == [1, 2, 3, 4]
    assert_trains_like_colocated(world, cfg, start, tmp_path / 'run')


RECORD = {'R_M', 'correct', 'format_ok', 'd_k', 'main_version'}
WRITES = ('SET', 'HSET', 'RPUSH', 'LMOVE', 'BLMOVE', 'LREM', 'DEL', 'EXPIRE', 'HDEL', 'LPUSH', 'APPEND', 'MSET')
KEYS = r'mgrpo:t:(delegations|delegations:taken|reply:[0-9a-f]{32}|records:\d+|done:\d+|main_finished)'


def test_bad_messages_are_rejected_and_only_statistics_cross(start, tmp_path, capfd):
    cfg = config(steps=2)
    with LocalRedis(tmp_path / 'redis') as redis:
        rs = RedisStore(redis.url)
        writes = []
        listening = threading.Event()
        def monitor():                                                # every command the two servers send
            with rs.r.monitor() as m:
                listening.set()                                       # MONITOR is on: what follows is seen
                for cmd in m.listen():
                    writes.append(cmd['command'].split(' ', 2))
                    if 'main_finished' in cmd['command']: return
        spy = threading.Thread(target=monitor, daemon=True); spy.start(); assert listening.wait(60)
        q = channel.queue_key(rs, 't')
        rs.r.rpush(q, 'not json', json.dumps({'id': 'x'}), json.dumps({'id': 'big', 'pad': 'x' * (2 << 20)}))
        bogus = '[1, "bogus", 0]'
        rs.r.hset(rs.key('t', 'records', 1), bogus, '{"R_M": [1, 2]}')
        servers.decoupled(cfg, tmp_path / 'run', start, redis_url=redis.url, threads=1, progress=False)
        spy.join(10)
        records = {k: rs.r.hgetall(k) for k in rs.r.keys('mgrpo:t:records:*')}
    err = capfd.readouterr().err
    assert "rejected a message: message is not JSON" in err
    assert "rejected a message: not a valid Delegation (id: String should match pattern" in err
    assert "over the limit of 1048576" in err
    assert "dropped a malformed record" in err
    assert json.loads((tmp_path / 'run/sub_server/rejected.json').read_text()) == {'Delegation': 3, 'record': 1}   # each counted once
    assert [m['step'] for m in lines(tmp_path / 'run/sub_server/metrics.jsonl')] == [1, 2]   # the run went on
    keys = {w[1] for w in writes if w[0].upper() in WRITES}
    assert keys and all(re.fullmatch(KEYS, k) for k in keys), sorted(keys)   # delegations, replies, statistics: nothing else
    assert sorted(records) == ['mgrpo:t:records:0', 'mgrpo:t:records:1']
    stats = [(f, json.loads(v)) for h in records.values() for f, v in h.items() if f != bogus]
    assert len(stats) == cfg.steps * cfg.questions_per_step * cfg.rollout.k
    for field, rec in stats:                                          # each record: its key and five numbers, no text or tokens
        step, qid, k = json.loads(field)
        assert isinstance(step, int) and isinstance(qid, str) and isinstance(k, int)
        assert set(rec) == RECORD and all(isinstance(v, (bool, int, float)) for v in rec.values()), rec


def test_cli_wrong_password_fails_at_start_and_no_process_is_left(start, tmp_path, fails_in_process, runs_in_process):
    "mgrpo-decoupled's parser and function in this process (the signal tests below start the console script): a wrong password fails before any server starts; a run leaves no process behind."
    from mgrpo_ref.cli import mgrpo_decoupled
    with LocalRedis(tmp_path / 'redis', password='right') as redis:
        bad = redis.url.replace('right', 'wrong')
        msg = fails_in_process(mgrpo_decoupled, ['--checkpoint', str(start), '--steps', '1', '--redis-url', bad, '--out', str(tmp_path / 'run')])
        assert "refused the password" in msg and 'wrong' not in msg
    out = tmp_path / 'ok'
    printed, _ = runs_in_process(mgrpo_decoupled, ['--checkpoint', str(start), '--steps', '2', '--threads', '1', '--quiet', '--out', str(out),
                                                   '--set', 'questions_per_step=2,rollout.k=2,eval_questions=2,eval_samples=1'])
    summary = json.loads(printed.strip().splitlines()[-1])
    assert summary['decoupled'] and summary['steps'] == 2 and summary['mode'] == 'mgrpo'
    assert {'eval_accuracy_before', 'eval_accuracy_after', 'seconds', 'seed'} <= set(summary)
    assert (out / 'curves.png').exists() and (out / 'sub_server/checkpoint/sub').is_dir()
    assert subprocess.run(['pgrep', '-f', str(out)], capture_output=True).stdout == b''   # no server or redis left running


def test_the_two_server_commands_train_together(start, tmp_path):
    "The two-machine commands of docs/guide/decoupled.md, here on one machine against a private Redis."
    bin_, small = Path(sys.executable).parent, ['--steps', '2', '--threads', '1', '--run', 'r1',
                                                '--set', 'questions_per_step=2,rollout.k=2,eval_questions=2,eval_samples=1,report_to=tensorboard']
    with LocalRedis(tmp_path / 'redis', password='pw') as redis:
        sub = subprocess.Popen([bin_ / 'mgrpo-sub-server', '--redis-url', redis.url, '--checkpoint', str(start),
                                '--out', str(tmp_path / 'r1-sub'), *small], stderr=subprocess.PIPE, text=True)
        main = subprocess.run([bin_ / 'mgrpo-main-server', '--checkpoint', str(start), '--quiet',   # the URL from the environment
                               '--out', str(tmp_path / 'r1'), *small], capture_output=True, text=True, timeout=300,
                              env={**os.environ, 'MGRPO_REDIS_URL': redis.url})
        assert main.returncode == 0, main.stderr[-2000:]
        assert sub.wait(60) == 0, sub.stderr.read()[-2000:]
    assert json.loads(main.stdout.strip().splitlines()[-1])['steps'] == 2
    assert [m['step'] for m in lines(tmp_path / 'r1-sub/metrics.jsonl')] == [1, 2]
    main_tb, sub_tb = tb_scalars(tmp_path / 'r1/tensorboard/r1'), tb_scalars(tmp_path / 'r1-sub/tensorboard/r1')   # each server's own tracker
    assert [s for s, _ in main_tb['main/reward']] == [1, 2] and 'sub/reward' not in main_tb
    assert [s for s, _ in sub_tb['sub/frac_reward_zero_std']] == [1, 2] and 'main/reward' not in sub_tb


def test_servers_on_two_processes_each_train_like_co_located(start, tmp_path, runs_in_process):
    """A main server and a sub server, each launched on two processes (torchrun, gloo) and each sharded with FSDP, train
    what one co-located process trains. (Under DDP the servers differ only in how AgentTrainer wraps the model, which
    tests/test_ddp.py checks both ways.)"""
    import os, torch
    bin_ = Path(sys.executable).parent
    small = ['--steps', '2', '--set', 'run=r2,questions_per_step=2,rollout.k=2,eval_questions=2,eval_samples=1,accel.cpu=true,accel.shard=fsdp,'
                                      'loss.skip_zero_advantage=false,loss.share_prefix=false']   # one process runs the passes two run (ddp_worker.py)
    env = {**os.environ, 'OMP_NUM_THREADS': '1'}          # (torchrun would take a --run after the script for its own --run-path)
    two = [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', '2']
    with LocalRedis(tmp_path / 'redis') as redis:
        sub = subprocess.Popen([*two, str(bin_ / 'mgrpo-sub-server'), '--redis-url', redis.url, '--checkpoint', str(start),
                                '--out', str(tmp_path / 'sub'), *small], stderr=subprocess.PIPE, text=True, env=env)
        main = subprocess.run([*two, str(bin_ / 'mgrpo-main-server'), '--redis-url', redis.url, '--checkpoint', str(start),
                               '--quiet', '--out', str(tmp_path / 'main'), *small], capture_output=True, text=True, timeout=600, env=env)
        assert main.returncode == 0, main.stderr[-3000:]
        assert sub.wait(120) == 0, sub.stderr.read()[-3000:]
    printed = [json.loads(l) for l in main.stdout.splitlines() if l.startswith('{')]
    assert len(printed) == 1 and printed[0]['processes'] == 2                   # two main ranks trained; the main one reports
    answered = {e['process'] for e in lines(tmp_path / 'sub' / 'timeline.jsonl') if e['phase'] == 'train'}
    assert answered == {0, 1}                                                    # both sub ranks trained every step
    from mgrpo_ref.cli import mgrpo_train                  # one process: this one (one torch thread, as pytest's workers run)
    runs_in_process(mgrpo_train, ['--checkpoint', str(start), '--out', str(tmp_path / 'one'), '--quiet', *small])
    two_m, one_m = steps(tmp_path / 'main'), steps(tmp_path / 'one')
    sub_m = lines(tmp_path / 'sub' / 'metrics.jsonl')
    assert [m['step'] for m in two_m] == [m['step'] for m in sub_m] == [1, 2]
    for a, s, b in zip(two_m, sub_m, one_m):               # every rank's rollouts and records, every sub-trajectory, once
        assert a['main/gen_tokens'] == b['main/gen_tokens'] and s['sub/records'] == b['sub/records'] == 4
        for k in ('sub/episodes', 'sub/gen_tokens', 'align/kept', 'align/duplicated', 'sub/skipped', 'sub/tokens'):
            assert s.get(k) == b.get(k), (k, s.get(k), b.get(k))   # sub/tokens is absent from both where neither updated (zero signal)
        assert abs(a['main/reward'] - b['main/reward']) < 1e-9 and abs(s['sub/reward'] - b['sub/reward']) < 1e-9
    flat = lambda folder: torch.cat([p.detach().flatten() for p in Policy.load(folder).model.parameters()])
    for role, two_ck in (('main', tmp_path / 'main/checkpoint/main'), ('sub', tmp_path / 'sub/checkpoint/sub')):
        p2, p1, p0 = flat(two_ck), flat(tmp_path / f'one/checkpoint/{role}'), flat(start / role)
        # sharded and whole gradients sum in another order: compared relative to the update (conftest.apart), not by the
        # largest difference (with transformers 5.24 the main agent's was 3.2e-5 on one machine, where 5.23 gave 1e-5)
        assert apart(p2, p1, p0) < TRAINED_ALIKE, (role, apart(p2, p1, p0), float((p2 - p1).abs().max()))


def test_duplicate_delegations_early_and_late_run_once(start, world, tmp_path, monkeypatch, capfd):
    "Every delegation is pushed twice at once (early) and again two steps later (late, after its step trained): none runs twice."
    import torch
    torch.set_num_threads(1)
    cfg = config()
    seen, pushed = [], {'early': 0, 'late': 0}
    orig = RedisStore.push
    def push_with_copies(self, name, msg):                           # the main server's pushes, in this process
        n = orig(self, name, msg)
        if not name.endswith(':delegations') or not msg.get('cache'): return n
        orig(self, name, msg); pushed['early'] += 1                  # a retried push while the first is held
        step = max(r['key'][0] for r in msg['requests'])
        for old in [m for m in seen if max(r['key'][0] for r in m['requests']) <= step - 2]:
            orig(self, name, old); pushed['late'] += 1; seen.remove(old)   # long after it was answered and trained on
        seen.append(msg)
        return n
    with LocalRedis(tmp_path / 'redis') as redis:
        sub = spawn(servers.run_sub_server, cfg, redis.url, tmp_path / 'run/sub_server', start, threads=1,
                    ctx=multiprocessing.get_context('spawn'))      # a new interpreter: its stderr is this test's (capfd), not the fork server's
        monkeypatch.setattr(RedisStore, 'push', push_with_copies)
        servers.run_main_server(cfg, redis.url, tmp_path / 'run', start, threads=1, progress=False)
        monkeypatch.undo()
        sub.join(300)
        assert sub.exitcode == 0
    assert pushed['early'] > 0 and pushed['late'] > 0
    err = capfd.readouterr().err
    assert err.count('dropped a copy of delegation') == pushed['early'] + pushed['late'], (err.count('dropped a copy'), pushed)
    answered = (tmp_path / 'run/sub_server/journal/answered.txt').read_text().split()
    assert len(answered) == len(set(answered)) > 0                   # each delegation answered once
    assert [m['step'] for m in lines(tmp_path / 'run/sub_server/metrics.jsonl')] == [1, 2, 3, 4]
    assert_trains_like_colocated(world, cfg, start, tmp_path / 'run')               # training unaffected


def assert_trains_like_colocated(world, cfg, start, run: Path, tol: float = 1e-6) -> None:
    "Both agents' final parameters of the decoupled run in `run` equal a co-located run's from the same start, to `tol`."
    from mgrpo_ref.warmstart import load_policies
    colo = Trainer(world, cfg, load_policies(start, ('main', 'sub')))
    colo.fit(progress=False)
    for role, path in (('main', 'checkpoint/main'), ('sub', 'sub_server/checkpoint/sub')):
        got = Policy.load(run / path)
        diff = max((p - q).abs().max().item() for p, q in zip(colo.policies[role].model.parameters(), got.model.parameters()))
        assert diff <= tol, (role, diff)


def alive(pid: int) -> bool:
    "Running (a zombie, dead but not yet reaped by its new parent, counts as gone)."
    try: return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] != 'Z'
    except (FileNotFoundError, ProcessLookupError): return False


def children(pid: int) -> list[int]:
    r = subprocess.run(['pgrep', '-P', str(pid)], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]


@pytest.mark.parametrize('sig', ['SIGTERM', 'SIGKILL'])
def test_a_signal_to_mgrpo_decoupled_leaves_no_process(start, tmp_path, sig):
    "SIGTERM: the launcher stops both servers and Redis and exits; SIGKILL: the servers and Redis notice and exit. (SIGINT, Ctrl-C, takes SIGTERM's handler: test_sigint_is_handled_as_sigterm.)"
    import signal
    out = tmp_path / 'run'
    p = subprocess.Popen([Path(sys.executable).parent / 'mgrpo-decoupled', '--checkpoint', str(start), '--steps', '50', '--threads', '1',
                          '--set', 'questions_per_step=2,rollout.k=2,eval_every=0,eval_questions=2,eval_samples=1', '--quiet', '--out', str(out)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (out / 'sub_server/journal').is_dir() and len(children(p.pid)) >= 3, what='both servers up')
        kids = children(p.pid)                                         # redis-server and the two servers (their policies loaded)
        if sig != 'SIGKILL': wait_for(lambda: len(steps(out)) >= 2, what='two steps')   # so that a checkpoint is due
        t0 = time.monotonic(); p.send_signal(getattr(signal, sig))
        p.wait(120)
        wait_for(lambda: not any(alive(k) for k in kids), timeout=120, what=f'the launcher\'s children to stop after {sig}')
        took = time.monotonic() - t0
    finally:
        if p.poll() is None: p.kill()
    assert p.returncode != 0 and took < 120, (p.returncode, took)   # promptly, on a slow busy machine too: well before the servers' own timeouts (600 s)
    print(f"{sig}: the launcher and all its processes stopped {took:.1f} s after the signal")   # the time to stop (pytest -s)
    if sig != 'SIGKILL':
        assert f'{sig}: stopping both servers' in p.stderr.read()
        for folder in (out, out / 'sub_server'):                    # each server's final checkpoint: every step it trained
            trained = [m for m in lines(folder / 'metrics.jsonl') if 'time/at' in m or folder.name == 'sub_server']
            assert json.loads((folder / 'checkpoint/state.json').read_text())['step'] == len(trained) >= 1, folder
    assert subprocess.run(['pgrep', '-f', str(out)], capture_output=True).stdout == b''   # redis-server (its --dir) gone too


def test_a_sub_server_alone_stops_after_its_idle_timeout(start, tmp_path):
    "No main server ever comes: the sub server stops after --idle-timeout with a message that says what is missing."
    with LocalRedis(tmp_path / 'redis') as redis:
        t0 = time.monotonic()
        r = subprocess.run([Path(sys.executable).parent / 'mgrpo-sub-server', '--checkpoint', str(start), '--run', 'alone',
                            '--idle-timeout', '3', '--threads', '1', '--out', str(tmp_path / 'sub')], capture_output=True, text=True,
                           timeout=300, env={**os.environ, 'MGRPO_REDIS_URL': redis.url})
    assert r.returncode != 0 and "no delegation and no finished step for 3.0 s" in r.stderr
    assert "is the main server of run 'alone' gone? Stopping." in r.stderr


def test_sigint_is_handled_as_sigterm():
    "Ctrl-C (SIGINT) and SIGTERM, in this process: each sets a server's stop flag (it ends after its step, with a checkpoint) and a second one stops it at once. The launcher, decoupled(), sets one handler for both too; the end-to-end test above sends SIGTERM."
    import signal
    assert threading.current_thread() is threading.main_thread()       # (only the main thread takes signals)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for sig in (signal.SIGINT, signal.SIGTERM):
        stop = threading.Event()
        with servers.stop_on_signals(stop, 'test server'):
            os.kill(os.getpid(), sig); wait_for(stop.is_set, timeout=60, what=f'{sig.name} to set the stop flag')
            with pytest.raises(KeyboardInterrupt, match=f'test server: {sig.name} again, stopping now'):
                os.kill(os.getpid(), sig); wait_for(lambda: False, timeout=60, what=f'a second {sig.name} to stop at once')
    assert {s: signal.getsignal(s) for s in before} == before                         # the handlers as they were, after
