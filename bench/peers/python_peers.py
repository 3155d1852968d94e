#!/usr/bin/env python3
"""The Python peers of `ci/bench-peers`, each used as its documentation shows.

Usage:
  python_peers.py PEER ADDRESSES pairs
  python_peers.py PEER ADDRESSES handoff WAITERS ROUNDS

PEER is one of the names in PEERS below; ADDRESSES is HOST:PORT, or a comma-separated
list of them (pottery's Redlock masters; a ZooKeeper connect string). The runner
(lockkit-cli/benches/peer_comparison) starts this program and speaks the peer protocol
described in bench/peers/README.md: raw timings in nanoseconds on stdout, one JSON line
per measurement, so every library's figures go through the same percentile code.
"""

import json
import sys
import threading
import time

WARMUP = 200
WAIT_SECONDS = 30
# After the go: time for every waiter to make its first attempt and block (a benchmark
# settle, not a correctness bet: a late waiter only makes its own hand-off look faster).
SETTLE_SECONDS = 0.3


def host_port(address):
    host, port = address.rsplit(":", 1)
    return host, int(port)


class RedisPy:
    """redis-py's Lock: SET NX PX; a blocked acquire polls every 0.1 s (its default)."""

    def connect(self, addresses):
        import redis

        host, port = host_port(addresses[0])
        return redis.Redis(host=host, port=port)

    def lock(self, conn, key):
        return conn.lock(key, timeout=10)

    def acquire(self, lock):
        return lock.acquire(blocking=True, blocking_timeout=WAIT_SECONDS)

    def release(self, lock):
        lock.release()

    def close(self, conn):
        conn.close()


class PythonRedisLock(RedisPy):
    """python-redis-lock: SET NX EX; a blocked acquire waits on BLPOP of a signal list
    that the release pushes to."""

    def lock(self, conn, key):
        import redis_lock

        return redis_lock.Lock(conn, key, expire=10)

    def acquire(self, lock):
        # It refuses a wait longer than the lock's expiry.
        return lock.acquire(blocking=True, timeout=10)


class Pottery:
    """pottery's Redlock over every address given (one master, or five); a blocked
    acquire retries after a short random sleep."""

    def connect(self, addresses):
        import redis

        return [redis.Redis(host=h, port=p) for h, p in map(host_port, addresses)]

    def lock(self, conns, key):
        from pottery import Redlock

        return Redlock(key=key, masters=set(conns), auto_release_time=10)

    def acquire(self, lock):
        return lock.acquire(blocking=True, timeout=WAIT_SECONDS)

    def release(self, lock):
        lock.release()

    def close(self, conns):
        for c in conns:
            c.close()


class Kazoo:
    """kazoo's Lock recipe: an ephemeral sequential node; a waiter watches its
    predecessor. One client (one ZooKeeper session, 10 s default timeout) each."""

    def connect(self, addresses):
        from kazoo.client import KazooClient

        c = KazooClient(hosts=",".join(addresses))
        c.start(timeout=15)
        return c

    def lock(self, client, key):
        return client.Lock("/lockkit-peers/kazoo/" + key.replace(":", "-"))

    def acquire(self, lock):
        return lock.acquire(timeout=WAIT_SECONDS)

    def release(self, lock):
        lock.release()

    def close(self, client):
        client.stop()
        client.close()


class KazooSemaphore(Kazoo):
    """kazoo's Semaphore recipe, 4 leases: a lease node under the semaphore's path,
    taken under a lock node; a waiter watches the lease children."""

    def lock(self, client, key):
        return client.Semaphore("/lockkit-peers/kazoo-semaphore/" + key, max_leases=4)


class KazooRead(Kazoo):
    """kazoo's ReadLock: a "__rlock__" sequential node; waits only for write nodes
    before it."""

    def lock(self, client, key):
        return client.ReadLock("/lockkit-peers/kazoo-rw/" + key)


class KazooWrite(Kazoo):
    """kazoo's WriteLock: a "__lock__" sequential node; waits for every node before
    it."""

    def lock(self, client, key):
        return client.WriteLock("/lockkit-peers/kazoo-rw/" + key)


class Etcd3:
    """python-etcd3's Lock: a lease and a create-if-absent transaction; a waiter
    watches the key and retries when it is deleted."""

    def connect(self, addresses):
        import etcd3

        host, port = host_port(addresses[0])
        return etcd3.client(host=host, port=port)

    def lock(self, client, key):
        return client.lock("lockkit-peers-etcd3-" + key, ttl=10)

    def acquire(self, lock):
        return lock.acquire(timeout=WAIT_SECONDS)

    def release(self, lock):
        lock.release()

    def close(self, client):
        client.close()


class EtcdctlElect:
    """etcd's Election (concurrency package) through `etcdctl elect NAME PROPOSAL`:
    each candidate is an etcdctl process, which prints the proposal once it leads and
    resigns when interrupted. A waiting candidate watches the key before it."""

    def connect(self, addresses):
        return addresses[0]

    def lock(self, endpoint, key):
        return {"endpoint": endpoint, "name": "lockkit-peers-elect-" + key}

    def acquire(self, candidate):
        import subprocess

        p = subprocess.Popen(
            ["etcdctl", "--endpoints=" + candidate["endpoint"], "elect",
             candidate["name"], "proposal"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        candidate["process"] = p
        # Bounded: a candidate not elected in time is killed, and its read ends.
        timer = threading.Timer(WAIT_SECONDS, p.kill)
        timer.start()
        try:
            # It prints the election key, then the proposal, once elected.
            return all(p.stdout.readline() for _ in range(2))
        finally:
            timer.cancel()

    def release(self, candidate):
        """Returns once the interrupt is sent, before the resignation reaches etcd
        (the process exits in the background): its failovers are timed from then,
        which favours it by up to one round trip."""
        import signal

        p = candidate.pop("process")
        p.send_signal(signal.SIGINT)
        threading.Thread(target=p.wait, args=(WAIT_SECONDS,), daemon=True).start()

    def close(self, endpoint):
        pass


PEERS = {
    "redis-py": RedisPy,
    "python-redis-lock": PythonRedisLock,
    "pottery": Pottery,
    "kazoo": Kazoo,
    "kazoo-semaphore": KazooSemaphore,
    "kazoo-read": KazooRead,
    "kazoo-write": KazooWrite,
    "etcd3": Etcd3,
    "etcdctl-elect": EtcdctlElect,
}


def emit(nanos):
    print(json.dumps({"ns": nanos}), flush=True)


def must(acquired, what):
    if not acquired:
        raise RuntimeError(f"{what} timed out")


def pairs(peer, addresses):
    """One client, one key, kept for the whole session: 200 warm-up pairs, `ready`,
    then for each line N on stdin, N acquire + release pairs, each timed, printed as
    one measurement; it ends at the end of stdin."""
    conn = peer.connect(addresses)
    for _ in range(WARMUP):
        lock = peer.lock(conn, "u")
        must(peer.acquire(lock), "warm-up acquire")
        peer.release(lock)
    print("ready", flush=True)
    for line in sys.stdin:
        times = []
        for _ in range(int(line)):
            t = time.perf_counter_ns()
            lock = peer.lock(conn, "u")
            must(peer.acquire(lock), "uncontended acquire")
            peer.release(lock)
            times.append(time.perf_counter_ns() - t)
        emit(times)
    peer.close(conn)


def handoff(peer, addresses, waiters, rounds):
    """Rounds of: a holder holds; on `go` the waiters queue; the holder releases and
    each waiter, granted in turn, releases at once. A hand-off is the time from one
    release returning to the next acquire returning in another thread."""
    holder_conn = peer.connect(addresses)
    conns = [peer.connect(addresses) for _ in range(waiters)]
    key = f"h{waiters}"
    for _ in range(rounds):
        holder = peer.lock(holder_conn, key)
        must(peer.acquire(holder), "holder acquire")
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            return 2
        events, errors, guard = [], [], threading.Lock()

        def waiter(conn):
            try:
                mine = peer.lock(conn, key)
                must(peer.acquire(mine), "waiter acquire")
                granted = time.perf_counter_ns()
                peer.release(mine)
                released = time.perf_counter_ns()
                with guard:
                    events.append((granted, released))
            except Exception as e:  # reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=waiter, args=(c,)) for c in conns]
        for t in threads:
            t.start()
        time.sleep(SETTLE_SECONDS)
        peer.release(holder)
        previous = time.perf_counter_ns()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        gaps = []
        for granted, released in sorted(events):
            gaps.append(max(0, granted - previous))
            previous = released
        emit(gaps)
    for c in conns + [holder_conn]:
        peer.close(c)
    return 0


def main(argv):
    usage_ok = len(argv) >= 4 and argv[1] in PEERS
    if usage_ok and argv[3] == "pairs" and len(argv) == 4:
        pairs(PEERS[argv[1]](), argv[2].split(","))
        return 0
    if usage_ok and argv[3] == "handoff" and len(argv) == 6:
        return handoff(PEERS[argv[1]](), argv[2].split(","), int(argv[4]), int(argv[5]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
