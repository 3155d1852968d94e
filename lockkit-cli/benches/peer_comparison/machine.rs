//! Where and when the run happened: the machine line at the top of BENCHMARKS.md.

/// Where and when the run happened.
#[derive(Debug)]
pub(crate) struct Machine {
    pub(crate) date: String,
    pub(crate) cpu: String,
    pub(crate) memory: String,
    pub(crate) kernel: String,
    pub(crate) command: String,
}

impl Machine {
    pub(crate) fn describe(command: &str) -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name")?.split(':').nth(1))
            .unwrap_or("unknown CPU")
            .trim()
            .to_owned();
        let cores = cpus();
        let memory = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or("unknown".to_owned(), |kb| {
                format!("{:.1} GiB", kb as f64 / 1048576.0)
            });
        let date = std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%d %H:%M UTC"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        Self {
            date,
            cpu: format!("{cores} cores, {model}"),
            memory,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
            command: command.to_owned(),
        }
    }
}

/// The CPUs the run splits between servers and clients: the servers on the first,
/// every client (the runner, each library's process, `lockkit bench`) on the
/// second, so that no library shares its core with the server by chance. Left
/// unpinned on a machine with one CPU.
///
/// Without it, two processes of the same library measured in the same rounds
/// differed by up to 7% (the control row), depending on where the scheduler put
/// them.
pub(crate) const SERVER_CPU: &str = "0";
pub(crate) const CLIENT_CPU: &str = "1";

/// Whether there are two CPUs to split.
pub(crate) fn pinning() -> bool {
    cpus() >= 2
}

/// The CPUs this process could use when it first asked: before the runner
/// pinned itself to [`CLIENT_CPU`], after which its own affinity says 1. (Asked
/// afresh, that 1 once turned every later pin off: every server ran on the
/// clients' CPU, and the report said "1 cores".)
fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Pins every thread of process `pid` to `cpu` (`taskset -a -p`), where
/// [`pinning`] applies; says so on stderr if it cannot.
pub(crate) fn pin(pid: u32, cpu: &str) {
    if !pinning() {
        return;
    }
    let done = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpu, &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .status();
    if !matches!(done, Ok(s) if s.success()) {
        eprintln!("warning: could not pin process {pid} to CPU {cpu} ({done:?})");
    }
}
