// The Apache Curator peer of `ci/bench-peers`: InterProcessMutex (Debian's
// libcurator-recipes-java), used as its documentation shows, with Curator's defaults
// (60 s session timeout, 15 s connection timeout), one CuratorFramework (one ZooKeeper
// session) per client.
//
// Usage: java CuratorPeer CONNECT pairs
//        java CuratorPeer CONNECT handoff WAITERS ROUNDS
// It speaks the peer protocol of bench/peers/README.md; run it with
// ci/bench-peers, which compiles it into a throwaway directory.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorPeer {
    private static final int WARMUP = 200;
    private static final long WAIT_SECONDS = 30;
    /** After the go: time for every waiter to queue (a benchmark settle). */
    private static final long SETTLE_MILLIS = 300;

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
            InterProcessMutex m = new InterProcessMutex(c, path);
            for (int i = 0; i < WARMUP; i++) {
                must(m.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "warm-up acquire");
                m.release();
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
                    must(m.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "uncontended acquire");
                    m.release();
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
            List<InterProcessMutex> mutexes = new ArrayList<>();
            for (int i = 0; i < waiters; i++) {
                CuratorFramework c = client(connect);
                clients.add(c);
                mutexes.add(new InterProcessMutex(c, path));
            }
            InterProcessMutex holder = new InterProcessMutex(holderClient, path);
            for (int r = 0; r < rounds; r++) {
                must(holder.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "holder acquire");
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
                            InterProcessMutex m = mutexes.get(w);
                            must(m.acquire(WAIT_SECONDS, TimeUnit.SECONDS), "waiter acquire");
                            long granted = System.nanoTime();
                            m.release();
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
                holder.release();
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
