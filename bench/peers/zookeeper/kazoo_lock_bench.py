#!/usr/bin/env python3
"""Peer benchmark: kazoo's Lock recipe against a ZooKeeper server, measured the same
way as `lockkit bench` and CuratorMutexBench.java (see README.md here).

Usage: kazoo_lock_bench.py CONNECT [ITERATIONS=2000] [HANDOFFS=200]
Prints one JSON line.
"""

import json
import math
import os
import sys
import threading
import time

from kazoo.client import KazooClient

WARMUP = 200
WAIT_SECONDS = 10


def pct_us(nanos, q):
    """Nearest-rank percentile in whole microseconds (at least 1)."""
    s = sorted(nanos)
    idx = min(max(math.ceil(q * len(s)) - 1, 0), len(s) - 1)
    return max(1, s[idx] // 1000)


def client(connect):
    # kazoo's default session timeout: 10 s.
    c = KazooClient(hosts=connect)
    c.start(timeout=15)
    return c


def pair(lock):
    if not lock.acquire(timeout=WAIT_SECONDS):
        raise RuntimeError("uncontended acquire timed out")
    lock.release()


def main():
    if len(sys.argv) < 2:
        print("usage: kazoo_lock_bench.py CONNECT [ITERATIONS] [HANDOFFS]", file=sys.stderr)
        return 2
    connect = sys.argv[1]
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    handoffs = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    root = f"/lockkit-peers/kazoo-{os.getpid()}"

    a, b = client(connect), client(connect)
    try:
        # a. Uncontended: one client, one key, acquire + release timed as a pair. One
        # Lock object reused, as kazoo's docs use it.
        lock = a.Lock(root + "/uncontended")
        for _ in range(WARMUP):
            pair(lock)
        un = []
        for _ in range(iterations):
            t = time.perf_counter_ns()
            pair(lock)
            un.append(time.perf_counter_ns() - t)

        # b. Hand-off: holder on client a, waiter on client b (separate sessions).
        holder = a.Lock(root + "/handoff")
        waiter = b.Lock(root + "/handoff")
        ho = []
        for _ in range(handoffs):
            if not holder.acquire(timeout=WAIT_SECONDS):
                raise RuntimeError("holder acquire timed out")
            result = {}

            def wait():
                try:
                    if not waiter.acquire(timeout=WAIT_SECONDS):
                        raise RuntimeError("waiter acquire timed out")
                    result["t1"] = time.perf_counter_ns()
                    waiter.release()
                except Exception as e:  # reported by the main thread
                    result["error"] = e

            th = threading.Thread(target=wait, name="waiter", daemon=True)
            th.start()
            # Settle so the waiter has queued (a benchmark settle, not a correctness
            # assumption: a late waiter only measures lower).
            time.sleep(0.020)
            t0 = time.perf_counter_ns()
            holder.release()
            th.join(WAIT_SECONDS * 2)
            if "error" in result:
                raise result["error"]
            if "t1" not in result:
                raise RuntimeError("waiter did not finish")
            ho.append(result["t1"] - t0)

        try:
            a.delete(root, recursive=True)
        except Exception:  # best effort
            pass
    finally:
        for c in (a, b):
            c.stop()
            c.close()

    out = {
        "peer": "kazoo-lock",
        "iterations": iterations,
        "handoffs": handoffs,
        "uncontended": {
            "p50_us": pct_us(un, 0.50),
            "p90_us": pct_us(un, 0.90),
            "p99_us": pct_us(un, 0.99),
            "ops_per_second": round(iterations / (sum(un) / 1e9), 1),
        },
        "handoff": {"p50_us": pct_us(ho, 0.50), "p99_us": pct_us(ho, 0.99)} if ho else {},
    }
    print(json.dumps(out, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
