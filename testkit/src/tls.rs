//! Throwaway certificates for TLS servers: a CA, a server certificate for
//! `IP:127.0.0.1` and a client certificate, made with the `openssl` CLI.
//!
//! The same commands as the Redis TLS server's files (EC P-256, valid two days,
//! the server certificate also good for clientAuth so a server can present it to
//! its peers).

use std::path::{Path, PathBuf};

use crate::TestkitError;
use crate::process::{find_binary, run_setup};

/// The PEM files of a throwaway CA and two certificates it signed, all in one
/// directory that the caller owns.
#[derive(Debug, Clone)]
pub struct CertAuthority {
    /// The CA certificate: what a client must trust.
    pub ca: PathBuf,
    /// The server's certificate, for `IP:127.0.0.1` (serverAuth and clientAuth).
    pub server_cert: PathBuf,
    /// Its private key.
    pub server_key: PathBuf,
    /// A client certificate (clientAuth), for servers that require one.
    pub client_cert: PathBuf,
    /// Its private key.
    pub client_key: PathBuf,
}

/// An EC P-256 key and a certificate request for `subject`, signed by the CA in
/// `dir` with the extensions in `ext` (one per line).
fn issue(
    openssl: &Path,
    dir: &Path,
    name: &str,
    subject: &str,
    ext: &str,
) -> Result<(PathBuf, PathBuf), TestkitError> {
    let key = dir.join(format!("{name}.key"));
    let csr = dir.join(format!("{name}.csr"));
    let cert = dir.join(format!("{name}.pem"));
    let ext_file = dir.join(format!("{name}.ext"));
    std::fs::write(&ext_file, ext)?;
    let mut req = std::process::Command::new(openssl);
    req.args([
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
    ])
    .args(["-nodes", "-subj", subject, "-keyout"])
    .arg(&key)
    .arg("-out")
    .arg(&csr);
    run_setup(&format!("openssl req ({name})"), &mut req)?;
    let mut sign = std::process::Command::new(openssl);
    sign.args(["x509", "-req", "-days", "2", "-in"])
        .arg(&csr)
        .arg("-CA")
        .arg(dir.join("ca.pem"))
        .arg("-CAkey")
        .arg(dir.join("ca.key"))
        .arg("-CAcreateserial")
        .arg("-extfile")
        .arg(&ext_file)
        .arg("-out")
        .arg(&cert);
    run_setup(&format!("openssl x509 -req ({name})"), &mut sign)?;
    Ok((cert, key))
}

impl CertAuthority {
    /// Generates a CA, a server certificate for `IP:127.0.0.1` and a client
    /// certificate in `dir` (which must exist).
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if `openssl` is missing; `Setup` with its output
    /// if a step fails.
    pub fn generate(dir: &Path) -> Result<Self, TestkitError> {
        let openssl = find_binary("openssl", "LOCKKIT_OPENSSL_BIN")?;
        let ca = dir.join("ca.pem");
        let mut req = std::process::Command::new(&openssl);
        req.args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
            .args(["-subj", "/CN=lockkit-testkit-ca"])
            .args(["-addext", "basicConstraints=critical,CA:TRUE"])
            .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"])
            .arg("-keyout")
            .arg(dir.join("ca.key"))
            .arg("-out")
            .arg(&ca);
        run_setup("openssl req -x509 (CA)", &mut req)?;
        let (server_cert, server_key) = issue(
            &openssl,
            dir,
            "server",
            "/CN=127.0.0.1",
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n",
        )?;
        let (client_cert, client_key) = issue(
            &openssl,
            dir,
            "client",
            "/CN=lockkit-testkit-client",
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=clientAuth\n",
        )?;
        Ok(Self {
            ca,
            server_cert,
            server_key,
            client_cert,
            client_key,
        })
    }
}

/// `path` fit for a URL query value: `%`, `&`, `=`, `?`, `#`, `+` and spaces
/// percent-encoded.
pub(crate) fn query_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        match c {
            '%' | '&' | '=' | '?' | '#' | '+' | ' ' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_paths_escape_what_a_query_would_split_on() {
        assert_eq!(
            query_path(Path::new("/tmp/a b/c&d=e%f.pem")),
            "/tmp/a%20b/c%26d%3De%25f.pem"
        );
    }
}
