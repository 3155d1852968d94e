"""kazoo's Lock, ReadLock and WriteLock, driven line by line from stdin, for
lockkit's interop tests.

Usage: kazoo_lock.py HOSTS PATH

Commands, one per line; each answers with one line on stdout:
  lock | read | write               -> "waiting", then "held" (blocks, at most 30 s:
                                       then "timed out")
  try-lock | try-read | try-write   -> "held" or "busy"
  release                           -> "released"
  quit                              -> exits
"""

import sys

from kazoo.client import KazooClient


def say(text):
    print(text, flush=True)


def main():
    hosts, path = sys.argv[1], sys.argv[2]
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=10)
    recipes = {
        "lock": client.Lock(path, "kazoo-holder"),
        "read": client.ReadLock(path, "kazoo-holder"),
        "write": client.WriteLock(path, "kazoo-holder"),
    }
    held = None
    say("ready")
    for line in sys.stdin:
        command = line.strip()
        if command in recipes:
            say("waiting")
            if recipes[command].acquire(timeout=30):
                held = recipes[command]
                say("held")
            else:
                say("timed out")
        elif command.startswith("try-") and command[4:] in recipes:
            lock = recipes[command[4:]]
            if lock.acquire(blocking=False):
                held = lock
                say("held")
            else:
                say("busy")
        elif command == "release":
            held.release()
            held = None
            say("released")
        elif command == "quit":
            break
        else:
            say(f"unknown command {command!r}")
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
