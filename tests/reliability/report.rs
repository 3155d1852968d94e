//! RELIABILITY.md, rendered from the rows the tests wrote.

/// Renders RELIABILITY.md from the rows in `LOCKKIT_RELIABILITY_DIR` to
/// `LOCKKIT_RELIABILITY_MD`.
pub(crate) fn render() {
    let dir = std::env::var("LOCKKIT_RELIABILITY_DIR").expect("LOCKKIT_RELIABILITY_DIR is set");
    let out = std::env::var("LOCKKIT_RELIABILITY_MD").expect("LOCKKIT_RELIABILITY_MD is set");
    let mut rows: Vec<serde_json::Value> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    assert!(!rows.is_empty(), "no rows in {dir}");
    let rank = |backend: &str| {
        [
            "sqlite",
            "postgres",
            "mysql",
            "redis",
            "redlock",
            "etcd",
            "zookeeper",
            "consul",
        ]
        .iter()
        .position(|b| backend.starts_with(b))
        .unwrap_or(usize::MAX)
    };
    rows.sort_by_key(|r| {
        let backend = r["backend"].as_str().unwrap_or_default().to_owned();
        (
            rank(&backend),
            backend,
            r["fault"].as_str().unwrap_or_default().to_owned(),
        )
    });
    let mut md = String::from(HEADER);
    md.push_str(&format!(
        "Generated {} on {} by `ci/reliability`.\n\n",
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        command_output("uname", &["-srm"]),
    ));
    md.push_str(
        "| backend | fault | operations | grants | stale writes rejected | stale writes accepted \
         | exclusion violations | over the limit | most holders | token regressions \
         | late writes | time to recover |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut notes = Vec::new();
    for r in &rows {
        let v = &r["verdict"];
        let count = |k: &str| v[k].as_array().map_or(0, Vec::len);
        let mut backend = r["backend"].as_str().unwrap_or_default().to_owned();
        if backend == "consul" {
            backend.push_str(" (stand-in)");
        }
        if let Some(why) = r["documented"].as_str() {
            // One note for each text, however many rows it explains.
            let n = match notes.iter().position(|n| n == why) {
                Some(i) => i + 1,
                None => {
                    notes.push(why.to_owned());
                    notes.len()
                }
            };
            backend.push_str(&format!(" [{n}]"));
        }
        md.push_str(&format!(
            "| {backend} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ms |\n",
            r["fault"].as_str().unwrap_or_default(),
            v["operations"],
            v["grants"],
            v["stale_rejected"],
            v["stale_accepted"],
            count("overlaps"),
            count("over_limit"),
            v["max_holders"],
            count("token_regressions"),
            v["late_accepted"],
            r["recovery_ms"],
        ));
    }
    md.push('\n');
    for (i, why) in notes.iter().enumerate() {
        md.push_str(&format!("[{}] Documented weakness: {why}.\n\n", i + 1));
    }
    md.push_str(FOOTER);
    std::fs::write(&out, md).unwrap();
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

const HEADER: &str = "# Reliability\n\n\
Every backend under every fault, judged from recorded histories. Do not edit: \
regenerate with `ci/reliability` (it installs the servers, runs `tests/reliability/` \
and writes this file).\n\n\
Each row is one test: three workers, each with its own connections, loop on one key \
through *acquire → fenced write → hold 5 ms → fenced write → release* (1 s watchdog \
TTL), while the fault is injected. The *semaphore of 3* rows run five workers, each \
taking one permit of a 3-permit semaphore; in the *read-write* rows each worker takes \
the write lock every third round and a read lock otherwise, and readers do not write; \
in the *election* rows each worker campaigns for the election on the key, writes with \
its term (the leadership's fencing token), and resigns, and the outside holder is a \
leader; in the *several keys* rows each worker takes the key and a second one at once \
(`lock_all`, alternate workers naming them in opposite orders) and writes with the \
key's token, and the outside holder holds the key alone. Every operation is recorded with its monotonic \
invoke and complete times, every write with its place in the resource's order; \
`lockkit_conformance::history::check` then counts, from the history alone:\n\n\
- **stale writes**: a write from a grant older than one that has already written to \
the resource (a `FencedCell`). *Rejected* is fencing doing its job; *accepted* is a \
safety violation.\n\
- **exclusion violations**: pairs of grants whose known-held intervals (from the \
acquire's return to the release, the loss notice or the lease deadline; a killed \
holder's, to the kill) overlap \
although one of them is exclusive (a lock or a write lock); readers may overlap \
readers, and permits permits.\n\
- **over the limit**: permits granted while the semaphore's limit of permits was \
already known held; **most holders** is the most known-held grants at once.\n\
- **token regressions**: grants whose token is not above one it must exceed: for an \
exclusive grant, every token returned before it; for a reader or a permit, every \
exclusive token returned before it and every token returned before its acquire was \
invoked (concurrent permits may return out of token order). A permit's write within \
its hold is not judged as stale (another permit may have written a higher token \
first); one made after its hold ended is.\n\
- **late writes**: writes accepted after a newer grant was given but before its \
first write reached the resource — fencing cannot see those (the resource does not \
know the newer token yet); the workers write without checking `is_lost()` first, so \
a holder that lost its lock during a fault still tries.\n\
- **time to recover**: from the end of the fault (the thaw, heal or restart; for a \
holder fault, a killed member or a killed master, the fault itself) to the next \
grant.\n\n\
Faults: *holder paused past its lease* (an outside holder process is SIGSTOPped once \
it holds the lock, or a permit, or the write lock; after a worker has been granted \
and written after the holder's lease ended, it is thawed and makes its write, which must be refused, and it must report the loss); \
*holder killed* (SIGKILL while holding); *server paused* (SIGSTOP for 2.5 s); \
*client-server partition* (every connection through the testkit's TCP proxy, \
black-holed for 2.5 s); *server killed and restarted* (SIGKILL, 1 s down); *leader \
killed* (etcd and ZooKeeper with 3 members); *2 of 5 masters killed* (Redlock); \
*restarted while a lock is held* (Redis without persistence: SIGKILL while a worker \
holds the lock, restarted at once; holds last 1.5 s in these rows); *master failed \
over while a lock is held* (Redis Sentinel: a master, 2 replicas and 3 sentinels, \
which promote a replica; Redis Cluster: 3 masters with a replica each, the master \
serving the lock's slot, whose replica the other masters elect; SIGKILL to the \
master while a worker holds the lock, with the replicas in sync; the time to recover \
counts from the kill, so it includes the failover); *master failed over before replicating a grant* (the \
same groups, with the replicas of the lock's master lagging: they are SIGSTOPped and \
the master drops their links; once the master has made a grant no replica will see, \
and a worker holds it (or, with `wait_replicas`, as soon as the master made it), \
the master is SIGKILLed, the replicas are thawed and one of them promoted; holds last \
3 s and leases 4 s in these rows, so that, as in production, they outlast the \
failover); *filled to maxmemory by a cache* (Redis with `--maxmemory 4mb \
--maxmemory-policy allkeys-lru`, connected with `eviction=accept`: another client \
writes 64 KB values until the history shows a violation, 4 s at most); \
*wake-up connection killed around grants* (the connection that carries the \
driver's wake-ups, PostgreSQL's `LISTEN` connection, Redis's pub/sub connection or \
MariaDB's bell connections, killed by the server right after each grant and 60 ms \
before each release, for 3 s, with holds of 200 ms; a wake-up is a hint, so the \
hand-off must still complete, by a poll). \
Every server is real and on 127.0.0.1, except Consul: those rows ran against the \
testkit's Consul stand-in, which follows Consul's documented HTTP semantics but is \
not Consul.\n\n";

const FOOTER: &str = "\n\
**Redis without persistence.** Restarted without `appendonly yes` + `appendfsync \
always`, Redis forgets the lock and its fencing counter: the next grant gets token 1 \
(the token regressions in the *no persistence* row), and a client that held the lock \
at the restart still believes it does while another is granted it (until its next \
renewal fails), so the resource, which remembers the higher token, refuses the new \
holder and accepts the old one. Mitigations lockkit offers: run the lock's Redis with \
`appendonly yes` and `appendfsync always` (the *appendfsync always* row: the same \
restart, nothing lost), and/or connect with `?fence_seed=clock`, which keeps \
tokens at or above the server's clock in microseconds, so they keep rising across \
the restart and fencing refuses the old holder (the *fence_seed=clock* row); the lock \
itself is still lost. See the README's Redis section.\n\n\
**Redis failover (Sentinel, Cluster).** The sentinels promote a replica about \
2.2 s after the master is killed (1 s to call it down, then their election), the \
Cluster 3.5 to 5.5 s after (its 2 s node timeout, then the vote); the time to recover \
counts from the kill, and after the promotion the workers were granted at once. With the replicas in \
sync (*while a lock is held*), nothing was lost: replication on one machine is quick. \
With them lagging (*before replicating a grant*), the promoted replica lacks the last \
grant and its counter bump, which is what asynchronous replication allows: by \
default it grants the lock again with the same token (the token regression), the \
first holder believes it holds until its next renewal finds nothing (an exclusion \
violation when that renewal comes after the new grant), and the resource, which \
accepts a token equal to the highest it saw, may take the older holder's write (a \
stale write accepted). `?fence_seed=clock` keeps tokens above the server's clock, so \
the new grant's token is higher and the resource refuses the older holder; the lock \
is still granted twice. `?wait_replicas=N` makes a grant count only once N \
replicas acknowledged it: the lagging master's grant is refused and given back, and \
nothing is lost (the Cluster row runs 2 replicas per master, so that the promoted \
one still has a replica to acknowledge). It narrows the window without closing \
it: a replica can acknowledge and still not be the one promoted, and `WAIT` does not \
make replication synchronous. Fencing at the resource is what refuses the older \
holder's writes.\n";
