// Apache Curator's InterProcessMutex and InterProcessReadWriteLock (Debian's
// libcurator-recipes-java), driven line by line from stdin, for lockkit's interop
// tests. The testkit compiles it (`curator_holder`).
//
// Usage: java CuratorHolder CONNECT PATH
//
// Commands, one per line; each answers with one line on stdout:
//   lock | read | write              -> "waiting", then "held" (blocks, at most 30 s:
//                                       then "timed out"); `lock` (the mutex) prints
//                                       "held CZXID", its node's creation zxid
//   try-lock | try-read | try-write  -> "held" (as above) or "busy"
//   release                          -> "released"
//   quit                             -> exits

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;

public final class CuratorHolder {
    /** The mutex, with its node's path in reach (Curator keeps it protected). */
    private static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String nodePath() {
            return getLockPath();
        }
    }

    public static void main(String[] args) throws Exception {
        try (CuratorFramework client = CuratorFrameworkFactory.newClient(
                args[0], 10_000, 5_000, new RetryOneTime(100))) {
            client.start();
            if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected to " + args[0]);
            }
            Mutex mutex = new Mutex(client, args[1]);
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, args[1]);
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            InterProcessMutex held = null;
            say("ready");
            for (String line; (line = in.readLine()) != null; ) {
                String command = line.trim();
                boolean tryOnly = command.startsWith("try-");
                String which = tryOnly ? command.substring(4) : command;
                InterProcessMutex lock = switch (which) {
                    case "lock" -> mutex;
                    case "read" -> rw.readLock();
                    case "write" -> rw.writeLock();
                    default -> null;
                };
                if (lock != null) {
                    if (!tryOnly) {
                        say("waiting");
                    }
                    if (lock.acquire(tryOnly ? 0 : 30, TimeUnit.SECONDS)) {
                        held = lock;
                        String zxid = lock == mutex
                            ? " " + client.checkExists().forPath(mutex.nodePath()).getCzxid()
                            : "";
                        say("held" + zxid);
                    } else {
                        say(tryOnly ? "busy" : "timed out");
                    }
                } else if (command.equals("release")) {
                    held.release();
                    held = null;
                    say("released");
                } else if (command.equals("quit")) {
                    break;
                } else {
                    say("unknown command " + command);
                }
            }
        }
    }

    private static void say(String text) {
        System.out.println(text);
        System.out.flush();
    }
}
