//! The TLS client side of a `wss://` peer: the system's root certificates (the OS store, read
//! through `rustls-native-certs`), or a `--peer-ca FILE` (PEM) as the only root. Either way the
//! peer's certificate must chain to a root and name the host the peer was given by. Built once
//! per peer, before its first connection, so a bad CA file is a startup error.

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why no TLS configuration could be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("cannot read the CA file {}: {reason}", path.display())]
    CaFile { path: PathBuf, reason: String },
    #[error("the CA file {} holds no usable certificate{}", path.display(), reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default())]
    CaEmpty {
        path: PathBuf,
        reason: Option<String>,
    },
    #[error(
        "no system root certificates could be loaded{}; give the peer's CA with --peer-ca FILE",
        reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
    )]
    NoSystemRoots { reason: Option<String> },
    #[error("TLS setup failed: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The roots: every certificate in `ca`, or the system's.
fn roots(ca: Option<&Path>) -> Result<rustls::RootCertStore, TlsSetupError> {
    let mut store = rustls::RootCertStore::empty();
    match ca {
        Some(path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| TlsSetupError::CaFile {
                    path: path.to_owned(),
                    reason: e.to_string(),
                })?
                .collect::<Result<_, _>>()
                .map_err(|e| TlsSetupError::CaFile {
                    path: path.to_owned(),
                    reason: e.to_string(),
                })?;
            let mut last = None;
            for cert in certs {
                if let Err(e) = store.add(cert) {
                    last = Some(e.to_string());
                }
            }
            if store.is_empty() {
                return Err(TlsSetupError::CaEmpty {
                    path: path.to_owned(),
                    reason: last,
                });
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _ignored) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(TlsSetupError::NoSystemRoots {
                    reason: found.errors.first().map(ToString::to_string),
                });
            }
        }
    }
    Ok(store)
}

/// A client configuration that trusts `ca` alone, or the system's roots when `ca` is `None`.
pub fn client_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots(ca)?)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_must_hold_a_certificate() {
        let dir = std::env::temp_dir().join(format!("vramio-peer-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let missing = client_config(Some(&dir.join("none.pem"))).expect_err("missing");
        assert!(
            missing.to_string().contains("cannot read the CA file"),
            "{missing}"
        );
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let e = client_config(Some(&empty)).expect_err("empty");
        assert!(e.to_string().contains("holds no usable certificate"), "{e}");
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
        let good = dir.join("ca.pem");
        std::fs::write(&good, ck.cert.pem()).expect("write");
        client_config(Some(&good)).expect("a PEM certificate is a root");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
