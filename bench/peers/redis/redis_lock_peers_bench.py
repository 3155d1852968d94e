#!/usr/bin/env python3
"""Peer benchmark: Python Redis locks against one Redis server, measured the way
`lockkit bench` measures lockkit.

Peers, each used as its documentation shows (defaults kept):
  redis-py      redis.Redis.lock(name, timeout=10): SET NX PX; a blocked acquire polls
                every 0.1 s (redis-py's default `sleep`).
  redis_lock    python-redis-lock's Lock(conn, name, expire=10): SET NX EX; a blocked
                acquire waits on BLPOP of a signal list that the release pushes to.
  pottery       pottery.Redlock(key=..., masters={conn}) with one master; a blocked
                acquire retries after a random sleep.

For each peer:
  uncontended   acquire + release of one key from one client, timed as a pair: p50,
                p99 and pairs per second.
  hand-off      W waiters (W in WAITERS), each a thread with its own connection, block
                on a key a holder has; the holder releases, and each waiter that gets the
                lock releases at once. A hand-off is the time from one release returning
                to the next acquire returning in another thread. Also reported: Redis
                commands per hand-off (INFO commandstats, commands run inside scripts
                included), from the first release to the last grant.

Usage: redis_lock_peers_bench.py HOST:PORT [ITERATIONS=2000] [HANDOFFS=256] [WAITERS=8,64]
Prints one JSON line per peer.
"""

import json
import math
import sys
import threading
import time

import redis
import redis_lock
from pottery import Redlock

WARMUP = 200
WAIT_SECONDS = 30


def pct_us(nanos, q):
    """Nearest-rank percentile in microseconds (at least 1)."""
    s = sorted(nanos)
    idx = min(max(math.ceil(q * len(s)) - 1, 0), len(s) - 1)
    return max(1, s[idx] // 1000)


class Peer:
    """One peer library: makes a lock object for a key on a connection."""

    def __init__(self, name, make, acquire, release):
        self.name, self.make, self.acquire, self.release = name, make, acquire, release


PEERS = [
    Peer(
        "redis-py Lock",
        lambda conn, key: conn.lock(key, timeout=10),
        lambda lock: lock.acquire(blocking=True, blocking_timeout=WAIT_SECONDS),
        lambda lock: lock.release(),
    ),
    Peer(
        "python-redis-lock",
        lambda conn, key: redis_lock.Lock(conn, key, expire=10),
        # It refuses a wait longer than the lock's expiry.
        lambda lock: lock.acquire(blocking=True, timeout=10),
        lambda lock: lock.release(),
    ),
    Peer(
        "pottery Redlock (1 master)",
        lambda conn, key: Redlock(key=key, masters={conn}, auto_release_time=10),
        lambda lock: lock.acquire(blocking=True, timeout=WAIT_SECONDS),
        lambda lock: lock.release(),
    ),
]


def commands(conn):
    return sum(v["calls"] for k, v in conn.info("commandstats").items() if k.startswith("cmdstat_"))


def uncontended(peer, conn, key, iterations):
    for _ in range(WARMUP):
        lock = peer.make(conn, key)
        peer.acquire(lock)
        peer.release(lock)
    times = []
    start = time.perf_counter_ns()
    for _ in range(iterations):
        t = time.perf_counter_ns()
        lock = peer.make(conn, key)
        if not peer.acquire(lock):
            raise RuntimeError(f"{peer.name}: uncontended acquire failed")
        peer.release(lock)
        times.append(time.perf_counter_ns() - t)
    elapsed = time.perf_counter_ns() - start
    return {
        "p50_us": pct_us(times, 0.5),
        "p99_us": pct_us(times, 0.99),
        "pairs_per_s": round(iterations / (elapsed / 1e9), 1),
    }


def handoff_round(peer, url, key, waiters, stats_conn):
    """One holder, `waiters` blocked waiters; returns (hand-off ns list, commands)."""
    holder_conn = redis.Redis.from_url(url)
    holder = peer.make(holder_conn, key)
    if not peer.acquire(holder):
        raise RuntimeError(f"{peer.name}: holder acquire failed")
    events = []  # (grant ns, release-returned ns)
    lock = threading.Lock()
    ready = threading.Barrier(waiters + 1)
    errors = []

    def waiter():
        conn = redis.Redis.from_url(url)
        try:
            conn.ping()
            ready.wait()
            mine = peer.make(conn, key)
            if not peer.acquire(mine):
                raise RuntimeError("waiter acquire timed out")
            granted = time.perf_counter_ns()
            peer.release(mine)
            released = time.perf_counter_ns()
            with lock:
                events.append((granted, released))
        except Exception as e:  # reported by the main thread
            errors.append(e)
        finally:
            conn.close()

    threads = [threading.Thread(target=waiter) for _ in range(waiters)]
    for t in threads:
        t.start()
    ready.wait()
    time.sleep(0.3)  # every waiter has made its first attempt and is blocked
    before = commands(stats_conn)
    peer.release(holder)
    released_at = time.perf_counter_ns()
    for t in threads:
        t.join()
    after = commands(stats_conn)
    holder_conn.close()
    if errors:
        raise errors[0]
    events.sort()
    gaps, previous = [], released_at
    for granted, released in events:
        gaps.append(max(0, granted - previous))
        previous = released
    return gaps, after - before - 1  # the second INFO counts itself


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    address = sys.argv[1]
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    handoffs = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    waiter_counts = [int(w) for w in (sys.argv[4] if len(sys.argv) > 4 else "8,64").split(",")]
    url = f"redis://{address}/0"
    conn = redis.Redis.from_url(url)
    stats_conn = redis.Redis.from_url(url)
    for peer in PEERS:
        row = {"peer": peer.name, "uncontended": uncontended(peer, conn, f"peers:{peer.name}:u", iterations)}
        for waiters in waiter_counts:
            gaps, cmds = [], 0
            rounds = max(1, math.ceil(handoffs / waiters))
            for r in range(rounds):
                g, c = handoff_round(peer, url, f"peers:{peer.name}:h{waiters}:{r}", waiters, stats_conn)
                gaps += g
                cmds += c
            row[f"handoff_{waiters}_waiters"] = {
                "handoffs": len(gaps),
                "p50_us": pct_us(gaps, 0.5),
                "p99_us": pct_us(gaps, 0.99),
                "commands_per_handoff": round(cmds / len(gaps), 1),
            }
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
