// Peer benchmark: Apache Curator's InterProcessMutex against a ZooKeeper server, measured
// the same way as `lockkit bench` and kazoo_lock_bench.py (see bench/peers/zookeeper/README.md).
//
// Usage: java CuratorMutexBench CONNECT [ITERATIONS=2000] [HANDOFFS=200]
// Prints one JSON line. Run it with bench/peers/zookeeper/run-curator, which compiles it
// into a temp dir against Debian's libcurator-recipes-java.

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorMutexBench {
    private static final int WARMUP = 200;
    private static final long WAIT_SECONDS = 10;

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: CuratorMutexBench CONNECT [ITERATIONS] [HANDOFFS]");
            System.exit(2);
        }
        String connect = args[0];
        int iterations = args.length > 1 ? Integer.parseInt(args[1]) : 2000;
        int handoffs = args.length > 2 ? Integer.parseInt(args[2]) : 200;
        String root = "/lockkit-peers/curator-" + ProcessHandle.current().pid();

        // Curator's defaults: 60 s session timeout, 15 s connection timeout.
        try (CuratorFramework a = client(connect); CuratorFramework b = client(connect)) {
            // a. Uncontended: one client, one key, acquire + release timed as a pair.
            InterProcessMutex m = new InterProcessMutex(a, root + "/uncontended");
            for (int i = 0; i < WARMUP; i++) {
                pair(m);
            }
            long[] un = new long[iterations];
            long unTotal = 0;
            for (int i = 0; i < iterations; i++) {
                long t = System.nanoTime();
                pair(m);
                long d = System.nanoTime() - t;
                unTotal += d;
                un[i] = d;
            }

            // b. Hand-off: holder on client a, waiter on client b (separate sessions).
            InterProcessMutex holder = new InterProcessMutex(a, root + "/handoff");
            InterProcessMutex waiter = new InterProcessMutex(b, root + "/handoff");
            long[] ho = new long[handoffs];
            for (int i = 0; i < handoffs; i++) {
                must(holder.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "holder acquire");
                // InterProcessMutex is owned by the thread that acquired it, so the
                // waiter thread both acquires and releases.
                CompletableFuture<Long> granted = CompletableFuture.supplyAsync(() -> {
                    try {
                        must(waiter.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "waiter acquire");
                        long t1 = System.nanoTime();
                        waiter.release();
                        return t1;
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }, r -> { Thread t = new Thread(r, "waiter"); t.setDaemon(true); t.start(); });
                // Settle so the waiter has queued (a benchmark settle, not a correctness
                // assumption: a late waiter only measures lower).
                Thread.sleep(20);
                long t0 = System.nanoTime();
                holder.release();
                long t1 = granted.get(WAIT_SECONDS * 2, TimeUnit.SECONDS);
                ho[i] = t1 - t0;
            }
            cleanup(a, root);

            StringBuilder out = new StringBuilder();
            out.append("{\"peer\":\"curator-interprocessmutex\",\"iterations\":").append(iterations)
               .append(",\"handoffs\":").append(handoffs)
               .append(",\"uncontended\":{")
               .append("\"p50_us\":").append(pct(un, 0.50))
               .append(",\"p90_us\":").append(pct(un, 0.90))
               .append(",\"p99_us\":").append(pct(un, 0.99))
               .append(",\"ops_per_second\":").append(String.format("%.1f", iterations / (unTotal / 1e9)))
               .append("},\"handoff\":{");
            if (handoffs > 0) {
                out.append("\"p50_us\":").append(pct(ho, 0.50))
                   .append(",\"p99_us\":").append(pct(ho, 0.99));
            }
            out.append("}}");
            System.out.println(out);
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

    private static void pair(InterProcessMutex m) throws Exception {
        must(m.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "uncontended acquire");
        m.release();
    }

    private static void must(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what + " timed out");
        }
    }

    private static void cleanup(CuratorFramework c, String root) {
        try {
            c.delete().deletingChildrenIfNeeded().forPath(root);
        } catch (Exception ignored) {
            // Best effort: the lock parents are containers and go away by themselves.
        }
    }

    /** Nearest-rank percentile in whole microseconds (at least 1). */
    private static long pct(long[] nanos, double q) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        int rank = (int) Math.ceil(q * s.length);
        int idx = Math.min(Math.max(rank - 1, 0), s.length - 1);
        return Math.max(1, s[idx] / 1000);
    }
}
