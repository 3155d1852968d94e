//! A foreign lock client as a child process (`etcdctl lock`, `psql`, a Python or
//! Java holder), for the interoperability tests: its output read line by line, its
//! input written line by line, and stopped by its PID (SIGTERM, or SIGKILL on drop).

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::TestkitError;

/// The Python of the interoperability virtualenv (redis-py, kazoo) that `ci/setup`
/// makes: `$LOCKKIT_INTEROP_PYTHON`, else `$LOCKKIT_INTEROP_DIR/py/bin/python`
/// (default dir `~/.cache/lockkit-interop`).
///
/// # Errors
///
/// [`TestkitError::NotFound`] if it is not there.
pub fn interop_python() -> Result<PathBuf, TestkitError> {
    if let Some(python) = std::env::var_os("LOCKKIT_INTEROP_PYTHON") {
        return Ok(PathBuf::from(python));
    }
    let dir = match std::env::var_os("LOCKKIT_INTEROP_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cache/lockkit-interop")
        }
    };
    let python = dir.join("py/bin/python");
    if python.is_file() {
        Ok(python)
    } else {
        Err(TestkitError::NotFound {
            binary: format!("{} (the interop virtualenv)", python.display()),
        })
    }
}

/// A foreign holder program shipped in the testkit's `foreign/` folder (such as
/// `redis_py_lock.py`).
pub fn foreign_program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("foreign")
        .join(name)
}

/// Debian's Curator jars (`libcurator-recipes-java`): enough on their own, as the
/// ZooKeeper 3.8 client uses its NIO socket by default.
const CURATOR_JARS: [&str; 8] = [
    "curator-recipes",
    "curator-framework",
    "curator-client",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-nop",
];

/// `java CuratorHolder CONNECT PATH` (`foreign/CuratorHolder.java`, compiled with
/// `javac` against Debian's Curator jars once per version of its source, into a
/// folder of the temp dir).
///
/// # Errors
///
/// [`TestkitError::NotFound`] without `javac` or the jars; `Setup` if it does not
/// compile.
pub fn curator_holder(connect: &str, path: &str) -> Result<Command, TestkitError> {
    let jars: Vec<PathBuf> = CURATOR_JARS
        .iter()
        .map(|j| Path::new("/usr/share/java").join(format!("{j}.jar")))
        .collect();
    if let Some(missing) = jars.iter().find(|j| !j.is_file()) {
        return Err(TestkitError::NotFound {
            binary: missing.display().to_string(),
        });
    }
    let classpath = std::env::join_paths(&jars).map_err(std::io::Error::other)?;
    let source = foreign_program("CuratorHolder.java");
    let text = std::fs::read(&source)?;
    // FNV-1a of the source: a new version compiles into a folder of its own.
    let hash = text.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let classes = std::env::temp_dir().join(format!("lockkit-curator-holder-{hash:016x}"));
    if !classes.join("CuratorHolder.class").is_file() {
        let scratch = classes.with_extension(format!("tmp-{}", std::process::id()));
        let out = std::process::Command::new("javac")
            .args(["-nowarn", "-d"])
            .arg(&scratch)
            .arg("-cp")
            .arg(&classpath)
            .arg(&source)
            .output()
            .map_err(|_| TestkitError::NotFound {
                binary: "javac".into(),
            })?;
        if !out.status.success() {
            return Err(TestkitError::Setup {
                step: "javac CuratorHolder.java".into(),
                detail: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        // Another test may have compiled it meanwhile: either copy will do.
        if std::fs::rename(&scratch, &classes).is_err() {
            let _ = std::fs::remove_dir_all(&scratch);
        }
    }
    let mut everything = vec![classes];
    everything.extend(jars);
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(std::env::join_paths(everything).map_err(std::io::Error::other)?)
        .args(["CuratorHolder", connect, path]);
    Ok(cmd)
}

/// A running foreign client. Killed (SIGKILL) if dropped while running.
#[derive(Debug)]
pub struct ForeignClient {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<String>>,
}

impl ForeignClient {
    /// Starts `cmd` with piped stdin, stdout and stderr. `name` names it in errors.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if the program is not installed.
    pub fn spawn(name: &str, mut cmd: Command) -> Result<Self, TestkitError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => TestkitError::NotFound {
                binary: name.to_owned(),
            },
            _ => TestkitError::Io(e),
        })?;
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(err) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            tokio::spawn(async move {
                let mut lines = BufReader::new(err).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut sink = sink.lock().unwrap_or_else(|p| p.into_inner());
                    sink.push_str(&line);
                    sink.push('\n');
                }
            });
        }
        let Some(stdout) = child.stdout.take() else {
            return Err(TestkitError::Foreign {
                client: name.to_owned(),
                detail: "its output was not piped".into(),
            });
        };
        let stdout = BufReader::new(stdout).lines();
        Ok(Self {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            stdout,
            stderr,
        })
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The next line it prints that contains `needle`, skipping others.
    ///
    /// # Errors
    ///
    /// [`TestkitError::Foreign`], with what it printed to stderr, if it exits or
    /// prints no such line within `within`.
    pub async fn line_containing(
        &mut self,
        needle: &str,
        within: Duration,
    ) -> Result<String, TestkitError> {
        let found = tokio::time::timeout(within, async {
            loop {
                match self.stdout.next_line().await {
                    Ok(Some(line)) if line.contains(needle) => return Ok(line),
                    Ok(Some(_)) => {}
                    Ok(None) => return Err("it closed its output".to_owned()),
                    Err(e) => return Err(format!("reading its output: {e}")),
                }
            }
        })
        .await;
        match found {
            Ok(Ok(line)) => Ok(line),
            Ok(Err(why)) => Err(self.failed(&format!("no line with `{needle}`: {why}"))),
            Err(_) => Err(self.failed(&format!(
                "no line with `{needle}` within {} ms",
                within.as_millis()
            ))),
        }
    }

    /// Writes `line` (and a newline) to its input.
    ///
    /// # Errors
    ///
    /// [`TestkitError::Foreign`] if its input is closed.
    pub async fn send(&mut self, line: &str) -> Result<(), TestkitError> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(self.failed("its input is already closed"));
        };
        let sent = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        match sent.await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failed(&format!("writing `{line}`: {e}"))),
        }
    }

    /// Sends SIGTERM to its PID: the clean stop of `etcdctl lock` and most others.
    pub fn terminate(&self) {
        if let Some(pid) = self.pid().and_then(|p| Pid::from_raw(p as i32)) {
            let _ = kill_process(pid, Signal::TERM);
        }
    }

    /// Closes its input and waits for it to exit; SIGKILL after `within`.
    ///
    /// # Errors
    ///
    /// [`TestkitError::Foreign`] if it had to be killed.
    pub async fn finish(mut self, within: Duration) -> Result<ExitStatus, TestkitError> {
        drop(self.stdin.take());
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(status) => Ok(status?),
            Err(_) => {
                let _ = self.child.kill().await;
                Err(self.failed(&format!("it did not exit within {} ms", within.as_millis())))
            }
        }
    }

    /// What it printed to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn failed(&self, what: &str) -> TestkitError {
        TestkitError::Foreign {
            client: self.name.clone(),
            detail: format!("{what}; its stderr:\n{}", self.stderr()),
        }
    }
}
