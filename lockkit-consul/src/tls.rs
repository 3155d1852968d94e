//! HTTPS for `consuls://`: the `tls_ca`, `tls_cert` and `tls_key` files (read and
//! checked when the URL is parsed, see [`lockkit_core::tls`]) given to reqwest's
//! rustls, with ring as the crypto provider.

use lockkit_core::LockError;
use lockkit_core::tls::TlsFiles;
use reqwest::{Certificate, ClientBuilder, Identity};

/// Adds the CA (instead of the platform's roots) and the client identity.
pub(crate) fn configure(
    builder: ClientBuilder,
    tls: &TlsFiles,
) -> Result<ClientBuilder, LockError> {
    let mut builder = builder.https_only(true);
    if let Some(ca) = &tls.ca {
        let certs = Certificate::from_pem_bundle(&ca.pem)
            .map_err(|e| LockError::Config(format!("tls_ca={}: {e}", ca.path)))?;
        builder = builder.tls_certs_only(certs);
    }
    if let Some(id) = &tls.identity {
        let mut pem = id.cert.pem.clone();
        pem.push(b'\n');
        pem.extend_from_slice(&id.key.pem);
        let identity = Identity::from_pem(&pem).map_err(|e| {
            LockError::Config(format!(
                "tls_cert={} / tls_key={}: {e}",
                id.cert.path, id.key.path
            ))
        })?;
        builder = builder.identity(identity);
    }
    Ok(builder)
}
