//! ZooKeeper: standalone, or a 3-node ensemble (tickTime 200 ms; no cap on
//! connections from one address, since every client here is on 127.0.0.1); and a
//! standalone server with a TLS `secureClientPort` (`start_tls`), or with
//! ZooKeeper's own 2 s tick (`start_with_default_settings`).

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::process::{Server, Spec, find_binary};
use crate::scratch_dir::temp_dir;
use crate::tls::{CertAuthority, query_path};
use crate::{TestkitError, free_port};

mod classes;

/// The server's classpath: zookeeper.jar's manifest names every Netty jar it needs
/// but netty-codec (used by the TLS port's Netty connection factory).
const CLASSPATH: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/netty-codec.jar";

/// One ZooKeeper server on 127.0.0.1.
#[derive(Debug)]
pub struct ZooKeeper {
    server: Server,
    /// The TLS port, its certificates, and whether clients must present one.
    tls: Option<(u16, CertAuthority, bool)>,
    _dir: Option<TempDir>,
}

/// Whether the server answers `srvr` with a `Mode:` line (it serves clients).
async fn serving(port: u16) -> bool {
    mode(port).await.is_some()
}

/// The `Mode:` the server reports to `srvr` (`standalone`, `leader`, `follower`),
/// or `None` if it does not answer within a second.
async fn mode(port: u16) -> Option<String> {
    let attempt = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        s.write_all(b"srvr").await.ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.ok()?;
        out.lines()
            .find_map(|l| l.strip_prefix("Mode:"))
            .map(|m| m.trim().to_string())
    };
    tokio::time::timeout(Duration::from_millis(1000), attempt)
        .await
        .ok()
        .flatten()
}

/// The testkit's tick and session bounds, fast for tests.
const TESTKIT_TIMING: &str = "tickTime=200\nminSessionTimeout=400\nmaxSessionTimeout=60000\n";

fn write_config(
    dir: &Path,
    port: u16,
    ensemble: &[(u16, u16)],
    myid: Option<usize>,
) -> Result<PathBuf, TestkitError> {
    let data = dir.join("data");
    std::fs::create_dir_all(&data)?;
    let mut cfg = format!(
        "{TESTKIT_TIMING}initLimit=50\nsyncLimit=25\n\
         dataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n\
         4lw.commands.whitelist=*\nmaxClientCnxns=0\n",
        data.display()
    );
    for (i, (q, e)) in ensemble.iter().enumerate() {
        cfg.push_str(&format!("server.{}=127.0.0.1:{q}:{e}\n", i + 1));
    }
    if let Some(id) = myid {
        std::fs::write(data.join("myid"), format!("{id}\n"))?;
    }
    let path = dir.join("zoo.cfg");
    std::fs::write(&path, cfg)?;
    Ok(path)
}

/// The classpath with `jar` as ZooKeeper's jar.
fn classpath(jar: &str) -> String {
    CLASSPATH.replace("/usr/share/java/zookeeper.jar", jar)
}

/// The JVM and ZooKeeper's jar, found once per start.
struct Jvm {
    java: PathBuf,
    jar: String,
}

impl Jvm {
    fn find() -> Result<Self, TestkitError> {
        let java = find_binary("java", "LOCKKIT_JAVA_BIN")?;
        let jar = std::env::var("LOCKKIT_ZOOKEEPER_JAR")
            .unwrap_or_else(|_| "/usr/share/java/zookeeper.jar".into());
        if !Path::new(&jar).is_file() {
            return Err(TestkitError::NotFound {
                binary: "zookeeper (/usr/share/java/zookeeper.jar)".into(),
            });
        }
        Ok(Self { java, jar })
    }

    /// Starts one ZooKeeper JVM; `classes` is its class-data flag (see
    /// [`classes`]), if any.
    fn spawn(
        &self,
        dir: &Path,
        port: u16,
        config: &Path,
        main_class: &str,
        classes: Option<&str>,
    ) -> Result<Server, TestkitError> {
        let mut args = vec![
            "-Xmx256m".to_string(),
            "-XX:+UseSerialGC".into(),
            "-XX:TieredStopAtLevel=1".into(),
        ];
        if let Some(flag) = classes {
            // A JVM too old for class-data archives starts without one.
            args.extend(["-XX:+IgnoreUnrecognizedVMOptions".into(), flag.into()]);
        }
        args.extend([
            format!("-Dzookeeper.log.dir={}", dir.display()),
            // Empty container nodes are deleted within half a second (the
            // server's default is a sweep a minute), so tests can watch cleanup.
            "-Dznode.container.checkIntervalMs=500".into(),
            "-cp".into(),
            classpath(&self.jar),
            main_class.into(),
            config.display().to_string(),
        ]);
        Server::spawn(Spec {
            binary: self.java.clone(),
            args,
            uid_gid: None,
            port,
            log: dir.join("zookeeper.log"),
            ready_timeout: Duration::from_secs(30),
        })
    }
}

/// Starts a standalone server on `config`, from the machine's class archive.
async fn spawn_standalone(dir: &Path, port: u16, config: &Path) -> Result<Server, TestkitError> {
    let jvm = Jvm::find()?;
    let classes = classes::archive_flag(&jvm).await;
    let main_class = "org.apache.zookeeper.server.ZooKeeperServerMain";
    jvm.spawn(dir, port, config, main_class, classes.as_deref())
}

impl ZooKeeper {
    /// Starts a standalone server.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if Java or the ZooKeeper jar is missing; `NotReady`
    /// with the log's tail if it never answers `srvr` with a mode.
    pub async fn start() -> Result<Self, TestkitError> {
        Self::start_standalone(None).await
    }

    /// Starts a standalone server with the tick of ZooKeeper's sample
    /// configuration (`tickTime=2000`, so sessions of 4 s to 40 s), as operators
    /// run it, instead of the testkit's 200 ms tick.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_with_default_settings() -> Result<Self, TestkitError> {
        Self::start_standalone(Some("tickTime=2000\n")).await
    }

    /// A standalone server; `timing` replaces the testkit's tick and session
    /// bounds in its configuration.
    async fn start_standalone(timing: Option<&str>) -> Result<Self, TestkitError> {
        let dir = temp_dir()?;
        let port = free_port()?;
        let config = write_config(dir.path(), port, &[], None)?;
        if let Some(timing) = timing {
            let cfg = std::fs::read_to_string(&config)?.replace(TESTKIT_TIMING, timing);
            std::fs::write(&config, cfg)?;
        }
        let server = spawn_standalone(dir.path(), port, &config).await?;
        let mut zk = Self {
            server,
            tls: None,
            _dir: Some(dir),
        };
        zk.server.wait_ready(serving).await?;
        Ok(zk)
    }

    /// Starts a standalone server that also serves clients over TLS on a
    /// `secureClientPort` (Netty, PEM key and trust stores), with a certificate for
    /// `IP:127.0.0.1` from a throwaway CA; with `mutual`, clients there must
    /// present a certificate from that CA. [`url`](Self::url) is
    /// `zks://127.0.0.1:SECURE_PORT?tls_ca=CA`; the plain port stays, for the
    /// testkit's readiness probe.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); `NotFound` or `Setup` from `openssl`.
    pub async fn start_tls(mutual: bool) -> Result<Self, TestkitError> {
        let dir = temp_dir()?;
        let port = free_port()?;
        let secure = free_port()?;
        let certs = CertAuthority::generate(dir.path())?;
        // ZooKeeper's PEM key store: the PKCS#8 key, then the certificate.
        let keystore = dir.path().join("server-keystore.pem");
        let mut pem = std::fs::read(&certs.server_key)?;
        pem.extend(std::fs::read(&certs.server_cert)?);
        std::fs::write(&keystore, pem)?;
        let config = write_config(dir.path(), port, &[], None)?;
        let mut cfg = std::fs::read_to_string(&config)?;
        cfg.push_str(&format!(
            "secureClientPort={secure}\nsecureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\nssl.keyStore.type=PEM\n\
             ssl.trustStore.location={}\nssl.trustStore.type=PEM\n\
             ssl.clientAuth={}\n",
            keystore.display(),
            certs.ca.display(),
            if mutual { "need" } else { "none" }
        ));
        std::fs::write(&config, cfg)?;
        let server = spawn_standalone(dir.path(), port, &config).await?;
        let mut zk = Self {
            server,
            tls: Some((secure, certs, mutual)),
            _dir: Some(dir),
        };
        zk.server.wait_ready(serving).await?;
        // The secure port is bound after the plain one starts serving: wait for it
        // too, or a client can be refused in between.
        zk.server
            .wait_ready(|_| async move {
                tokio::net::TcpStream::connect(("127.0.0.1", secure))
                    .await
                    .is_ok()
            })
            .await?;
        Ok(zk)
    }

    /// `zk://127.0.0.1:PORT`; for a TLS server `zks://127.0.0.1:SECURE_PORT?tls_ca=CA`
    /// (plus `tls_cert` and `tls_key` when it requires a client certificate).
    pub fn url(&self) -> String {
        match &self.tls {
            None => format!("zk://127.0.0.1:{}", self.server.port()),
            Some((secure, certs, mutual)) => {
                let mut url = format!("zks://127.0.0.1:{secure}?tls_ca={}", query_path(&certs.ca));
                if *mutual {
                    url.push_str(&format!(
                        "&tls_cert={}&tls_key={}",
                        query_path(&certs.client_cert),
                        query_path(&certs.client_key)
                    ));
                }
                url
            }
        }
    }

    /// The TLS port of a server started with [`start_tls`](Self::start_tls).
    pub fn secure_port(&self) -> Option<u16> {
        self.tls.as_ref().map(|(port, _, _)| *port)
    }

    /// The certificates of a TLS server.
    pub fn tls_files(&self) -> Option<&CertAuthority> {
        self.tls.as_ref().map(|(_, certs, _)| certs)
    }

    /// `127.0.0.1:PORT`, for a connect string.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.server.port())
    }

    /// What the server says it is (`standalone`, `leader`, `follower`), or `None`
    /// if it does not serve.
    pub async fn mode(&self) -> Option<String> {
        mode(self.server.port()).await
    }

    /// Starts it again on its data dir and port, and waits until it serves.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn restart(&mut self) -> Result<(), TestkitError> {
        self.server.respawn()?;
        self.server.wait_ready(serving).await
    }
}

impl Deref for ZooKeeper {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl DerefMut for ZooKeeper {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}

/// A ZooKeeper ensemble on 127.0.0.1.
#[derive(Debug)]
pub struct ZooKeeperEnsemble {
    /// The members, each controllable on its own.
    pub members: Vec<ZooKeeper>,
    _dir: TempDir,
}

impl ZooKeeperEnsemble {
    /// Starts `n` members and waits until each serves (as leader or follower).
    ///
    /// # Errors
    ///
    /// As [`ZooKeeper::start`].
    pub async fn start(n: usize) -> Result<Self, TestkitError> {
        let jvm = Jvm::find()?;
        let shared = classes::archive_flag(&jvm).await;
        Self::start_members(&jvm, n, |_| shared.clone()).await
    }

    /// As [`start`](Self::start), member `i` with the class-data flag `classes(i)`.
    async fn start_members(
        jvm: &Jvm,
        n: usize,
        classes: impl Fn(usize) -> Option<String>,
    ) -> Result<Self, TestkitError> {
        let dir = temp_dir()?;
        let mut ports = Vec::with_capacity(n);
        for _ in 0..n {
            ports.push((free_port()?, free_port()?, free_port()?));
        }
        let quorum: Vec<(u16, u16)> = ports.iter().map(|(_, q, e)| (*q, *e)).collect();
        let mut members = Vec::with_capacity(n);
        for (i, (client, _, _)) in ports.iter().enumerate() {
            let mdir = dir.path().join(format!("m{}", i + 1));
            std::fs::create_dir_all(&mdir)?;
            let config = write_config(&mdir, *client, &quorum, Some(i + 1))?;
            let server = jvm.spawn(
                &mdir,
                *client,
                &config,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                classes(i).as_deref(),
            )?;
            members.push(ZooKeeper {
                server,
                tls: None,
                _dir: None,
            });
        }
        for m in &mut members {
            m.server.wait_ready(serving).await?;
        }
        Ok(Self { members, _dir: dir })
    }

    /// The index of the member that is leader now, if one says so.
    pub async fn leader(&self) -> Option<usize> {
        for (i, m) in self.members.iter().enumerate() {
            if m.mode().await.as_deref() == Some("leader") {
                return Some(i);
            }
        }
        None
    }

    /// `zk://127.0.0.1:P1,127.0.0.1:P2,…`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.port()))
            .collect();
        format!("zk://{}", hosts.join(","))
    }
}
