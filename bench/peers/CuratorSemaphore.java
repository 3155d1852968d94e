// Apache Curator's InterProcessSemaphoreV2 (Debian's libcurator-recipes-java) on the
// workload `lockkit bench --modes semaphore --waiters N --limit L` measures: L holders
// take a lease, N waiters queue (each on its own CuratorFramework, one ZooKeeper
// session), the holders return theirs, and each waiter returns its lease as soon as it
// has it. Prints the hand-off p50 (a grant after the latest return before it) and the
// packets the server received per return (its `mntr`), as lockkit's bench does.
//
// Usage: java CuratorSemaphore HOST:PORT LIMIT WAITERS
// ci/bench-floors compiles and runs it against the same server as lockkit's line.

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorSemaphore {
    private static final long WAIT_SECONDS = 60;
    /** Time for every waiter to queue (a benchmark settle, as lockkit's bench). */
    private static final long SETTLE_MILLIS = 500;

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: CuratorSemaphore HOST:PORT LIMIT WAITERS");
            System.exit(2);
        }
        String connect = args[0];
        int limit = Integer.parseInt(args[1]);
        int waiters = Integer.parseInt(args[2]);
        String path = "/lockkit-peers/curator-semaphore-" + ProcessHandle.current().pid();
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < limit + waiters; i++) {
            CuratorFramework c = CuratorFrameworkFactory.newClient(
                connect, new ExponentialBackoffRetry(100, 3));
            c.start();
            c.blockUntilConnected();
            clients.add(c);
        }
        List<Lease> held = new ArrayList<>();
        for (int i = 0; i < limit; i++) {
            held.add(new InterProcessSemaphoreV2(clients.get(i), path, limit).acquire());
        }
        // From here on, every packet counts: each waiter's queuing, the wake-ups, the
        // grants and the returns (lockkit's bench counts the same window).
        long before = packetsReceived(connect);
        List<Long> returns = Collections.synchronizedList(new ArrayList<>());
        List<Long> grants = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            CuratorFramework c = clients.get(limit + i);
            Thread t = new Thread(() -> {
                try {
                    InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, path, limit);
                    Lease lease = s.acquire(WAIT_SECONDS, TimeUnit.SECONDS);
                    if (lease == null) {
                        throw new IllegalStateException("no lease within the wait");
                    }
                    grants.add(System.nanoTime());
                    lease.close();
                    returns.add(System.nanoTime());
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            t.start();
            threads.add(t);
        }
        Thread.sleep(SETTLE_MILLIS);
        for (Lease lease : held) {
            lease.close();
            returns.add(System.nanoTime());
        }
        for (Thread t : threads) {
            t.join();
        }
        long packets = packetsReceived(connect) - before;
        List<Long> gaps = new ArrayList<>();
        for (long g : grants) {
            long latest = Long.MIN_VALUE;
            for (long r : returns) {
                if (r <= g && r > latest) {
                    latest = r;
                }
            }
            if (latest != Long.MIN_VALUE) {
                gaps.add(g - latest);
            }
        }
        Collections.sort(gaps);
        long p50 = gaps.isEmpty() ? 0 : gaps.get(gaps.size() / 2) / 1000;
        System.out.printf("curator InterProcessSemaphoreV2, %d permits, %d waiters: hand-off p50 %d us, "
            + "%.1f packets the server received per release (mntr)%n",
            limit, waiters, p50, (double) packets / (limit + waiters));
        for (CuratorFramework c : clients) {
            c.close();
        }
    }

    /** The server's `zk_packets_received`, from its `mntr` command. */
    private static long packetsReceived(String connect) throws Exception {
        String[] hostPort = connect.split(":");
        try (Socket s = new Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            OutputStream out = s.getOutputStream();
            out.write("mntr".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            String text = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
            for (String line : text.split("\n")) {
                if (line.startsWith("zk_packets_received")) {
                    return Long.parseLong(line.split("\\s+")[1].trim());
                }
            }
        }
        throw new IllegalStateException("no zk_packets_received in mntr");
    }
}
