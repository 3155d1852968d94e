// The Apache Curator peer of `ci/bench-peers`: InterProcessMutex (Debian's
// libcurator-recipes-java), used as its documentation shows, with Curator's defaults
// (60 s session timeout, 15 s connection timeout), one CuratorFramework (one ZooKeeper
// session) per client. With -Dlockkit.recipe=semaphore, read, write or leader, it
// takes a lease of an InterProcessSemaphoreV2 of 4 leases, the read or the write lock
// of an InterProcessReadWriteLock, leadership by a LeaderLatch (released by closing
// it), or with -Dlockkit.recipe=multi two mutexes at once by an InterProcessMultiLock
// (PATH and PATH-2), instead of the mutex.
//
// Usage: java [-Dlockkit.recipe=RECIPE] CuratorPeer CONNECT pairs
//        java [-Dlockkit.recipe=RECIPE] CuratorPeer CONNECT handoff WAITERS ROUNDS
// It speaks the peer protocol of bench/peers/README.md; run it with
// ci/bench-peers, which compiles it into a throwaway directory.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorPeer {
    private static final int WARMUP = 200;
    private static final long WAIT_SECONDS = 30;
    /** After the go: time for every waiter to queue (a benchmark settle). */
    private static final long SETTLE_MILLIS = 300;

    /** A release, once acquired. */
    private interface Release {
        void run() throws Exception;
    }

    /** One acquire of the recipe: its release. */
    private interface Recipe {
        Release take(String what) throws Exception;
    }

    private static Recipe recipe(CuratorFramework c, String path, String name) {
        switch (name) {
            case "semaphore": {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, path, 4);
                return what -> {
                    Lease lease = s.acquire(WAIT_SECONDS, TimeUnit.SECONDS);
                    must(lease != null, what);
                    return () -> s.returnLease(lease);
                };
            }
            case "read":
                return lockRecipe(new InterProcessReadWriteLock(c, path).readLock());
            case "write":
                return lockRecipe(new InterProcessReadWriteLock(c, path).writeLock());
            case "mutex":
                return lockRecipe(new InterProcessMutex(c, path));
            case "multi":
                return lockRecipe(new InterProcessMultiLock(c, Arrays.asList(path, path + "-2")));
            case "leader":
                return what -> {
                    LeaderLatch latch = new LeaderLatch(c, path);
                    latch.start();
                    must(latch.await(WAIT_SECONDS, TimeUnit.SECONDS), what);
                    return latch::close;
                };
            default:
                throw new IllegalArgumentException("no recipe " + name);
        }
    }

    private static Recipe lockRecipe(InterProcessLock m) {
        return what -> {
            must(m.acquire(WAIT_SECONDS, TimeUnit.SECONDS), what);
            return m::release;
        };
    }

    public static void main(String[] args) throws Exception {
        boolean un = args.length == 2 && args[1].equals("pairs");
        boolean ho = args.length == 4 && args[1].equals("handoff");
        if (!un && !ho) {
            System.err.println("usage: CuratorPeer CONNECT pairs | CONNECT handoff WAITERS ROUNDS");
            System.exit(2);
        }
        String root = "/lockkit-peers/curator-" + ProcessHandle.current().pid();
        if (un) {
            pairs(args[0], root + "/u");
        } else {
            handoff(args[0], root + "/h", Integer.parseInt(args[2]), Integer.parseInt(args[3]));
        }
    }

    /** One client, one lock path, kept for the whole session: 200 warm-up pairs,
     *  "ready", then for each line N on stdin, N acquire + release pairs, each timed,
     *  printed as one measurement; it ends at the end of stdin. */
    private static void pairs(String connect, String path) throws Exception {
        try (CuratorFramework c = client(connect)) {
            Recipe r = recipe(c, path, System.getProperty("lockkit.recipe", "mutex"));
            for (int i = 0; i < WARMUP; i++) {
                r.take("warm-up acquire").run();
            }
            System.out.println("ready");
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                int n = Integer.parseInt(line.trim());
                long[] ns = new long[n];
                for (int i = 0; i < n; i++) {
                    long t = System.nanoTime();
                    r.take("uncontended acquire").run();
                    ns[i] = System.nanoTime() - t;
                }
                emit(ns);
            }
        }
    }

    /** Rounds of: a holder holds; on `go` the waiters queue; the holder releases and each
     *  waiter, granted in turn, releases at once (in its own thread: the mutex belongs to
     *  the thread that acquired it). A hand-off is the time from one release returning to
     *  the next acquire returning in another thread. */
    private static void handoff(String connect, String path, int waiters, int rounds) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<CuratorFramework> clients = new ArrayList<>();
        try {
            CuratorFramework holderClient = client(connect);
            clients.add(holderClient);
            String name = System.getProperty("lockkit.recipe", "mutex");
            List<Recipe> recipes = new ArrayList<>();
            for (int i = 0; i < waiters; i++) {
                CuratorFramework c = client(connect);
                clients.add(c);
                recipes.add(recipe(c, path, name));
            }
            Recipe holder = recipe(holderClient, path, name);
            for (int r = 0; r < rounds; r++) {
                Release held = holder.take("holder acquire");
                System.out.println("ready");
                System.out.flush();
                if (!"go".equals(in.readLine())) {
                    System.exit(2);
                }
                long[][] events = new long[waiters][];
                CountDownLatch done = new CountDownLatch(waiters);
                List<Throwable> errors = new ArrayList<>();
                for (int i = 0; i < waiters; i++) {
                    final int w = i;
                    Thread t = new Thread(() -> {
                        try {
                            Release mine = recipes.get(w).take("waiter acquire");
                            long granted = System.nanoTime();
                            mine.run();
                            events[w] = new long[] {granted, System.nanoTime()};
                        } catch (Throwable e) {
                            synchronized (errors) {
                                errors.add(e);
                            }
                        } finally {
                            done.countDown();
                        }
                    }, "waiter-" + i);
                    t.setDaemon(true);
                    t.start();
                }
                Thread.sleep(SETTLE_MILLIS);
                held.run();
                long previous = System.nanoTime();
                must(done.await(WAIT_SECONDS * 2, TimeUnit.SECONDS), "the round");
                if (!errors.isEmpty()) {
                    throw new IllegalStateException(errors.get(0));
                }
                java.util.Arrays.sort(events, (a, b) -> Long.compare(a[0], b[0]));
                long[] gaps = new long[waiters];
                for (int i = 0; i < waiters; i++) {
                    gaps[i] = Math.max(0, events[i][0] - previous);
                    previous = events[i][1];
                }
                emit(gaps);
            }
        } finally {
            for (CuratorFramework c : clients) {
                c.close();
            }
        }
    }

    private static CuratorFramework client(String connect) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, new ExponentialBackoffRetry(1000, 3));
        c.start();
        if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) {
            throw new IllegalStateException("could not connect to " + connect);
        }
        return c;
    }

    private static void must(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what + " timed out");
        }
    }

    /** One measurement, raw nanoseconds, as the runner expects it. */
    private static void emit(long[] ns) {
        StringBuilder out = new StringBuilder("{\"ns\":[");
        for (int i = 0; i < ns.length; i++) {
            out.append(i == 0 ? "" : ",").append(ns[i]);
        }
        System.out.println(out.append("]}"));
        System.out.flush();
    }
}
