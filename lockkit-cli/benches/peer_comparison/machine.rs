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
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
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
