"""redis-py's Lock, driven line by line from stdin, for lockkit's interop tests.

Usage: redis_py_lock.py PORT NAME

Commands, one per line; each answers with one line on stdout:
  try      -> "held" or "busy"          (acquire without blocking)
  acquire  -> "waiting", then "held"    (blocks, at most 30 s: then "timed out")
  release  -> "released"
  quit     -> exits
"""

import sys

import redis


def say(text):
    print(text, flush=True)


def main():
    port, name = int(sys.argv[1]), sys.argv[2]
    client = redis.Redis(host="127.0.0.1", port=port)
    # A 10 s lease, polled every 50 ms while blocked, as redis-py's docs show.
    lock = client.lock(name, timeout=10, sleep=0.05, blocking_timeout=30)
    say("ready")
    for line in sys.stdin:
        command = line.strip()
        if command == "try":
            say("held" if lock.acquire(blocking=False) else "busy")
        elif command == "acquire":
            say("waiting")
            say("held" if lock.acquire() else "timed out")
        elif command == "release":
            lock.release()
            say("released")
        elif command == "quit":
            break
        else:
            say(f"unknown command {command!r}")


if __name__ == "__main__":
    main()
