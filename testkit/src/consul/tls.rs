//! HTTPS for the stand-in: a rustls server (ring) with a certificate for
//! `IP:127.0.0.1` from a throwaway [`CertAuthority`], optionally requiring client
//! certificates from it, as a Consul agent with `verify_incoming` does.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio_rustls::TlsAcceptor;

use crate::{CertAuthority, TestkitError};

fn setup(detail: impl std::fmt::Display) -> TestkitError {
    TestkitError::Setup {
        step: "Consul stand-in TLS".into(),
        detail: detail.to_string(),
    }
}

/// An acceptor for the certificates in `certs`; with `mutual`, clients must present
/// a certificate signed by its CA.
pub(super) fn acceptor(certs: &CertAuthority, mutual: bool) -> Result<TlsAcceptor, TestkitError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = pem_certs(&certs.server_cert)?;
    let key = PrivateKeyDer::from_pem_file(&certs.server_key).map_err(setup)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(setup)?;
    let builder = if mutual {
        let mut roots = rustls::RootCertStore::empty();
        for ca in pem_certs(&certs.ca)? {
            roots.add(ca).map_err(setup)?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(setup)?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder.with_single_cert(chain, key).map_err(setup)?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TestkitError> {
    CertificateDer::pem_file_iter(path)
        .map_err(setup)?
        .collect::<Result<_, _>>()
        .map_err(setup)
}
