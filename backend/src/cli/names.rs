//! The names this machine answers to, for the `Host` allow-list of a server that listens beyond
//! loopback: its kernel hostname, that name's first label (`gpu3` of `gpu3.lab.example`), and its
//! fully qualified name as the resolver gives it (`gpu3.lab.example` of `gpu3`), besides any
//! `--name`. A request naming the machine by any of them is the machine's own.

use std::ffi::{CStr, CString};
use std::time::Duration;

/// How long the resolver may take for the FQDN at start-up (a dead DNS server must not hold the
/// start: without an answer, the names known without it are used).
const RESOLVE_WAIT: Duration = Duration::from_secs(2);

/// This machine's names, lowercase, without duplicates: the hostname, its short form, its FQDN.
pub fn machine_names() -> Vec<String> {
    let node = super::hostname().to_ascii_lowercase();
    let mut names = vec![node.clone()];
    if let Some((short, _)) = node.split_once('.') {
        names.push(short.to_owned());
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let asked = node.clone();
    let spawned = std::thread::Builder::new()
        .name("vramio-fqdn".into())
        .spawn(move || {
            let _ = tx.send(canonical_name(&asked));
        });
    if spawned.is_ok()
        && let Ok(Some(fqdn)) = rx.recv_timeout(RESOLVE_WAIT)
    {
        names.push(fqdn.to_ascii_lowercase());
    }
    names.retain(|n| !n.is_empty());
    let mut seen = Vec::new();
    names.retain(|n| {
        let new = !seen.contains(n);
        seen.push(n.clone());
        new
    });
    names
}

/// The canonical name the resolver (`/etc/hosts`, DNS, as nsswitch says) gives `host`.
fn canonical_name(host: &str) -> Option<String> {
    let c_host = CString::new(host).ok()?;
    // SAFETY: `hints` is zeroed then filled as getaddrinfo(3) documents; `res` is freed with
    // freeaddrinfo on every path once getaddrinfo succeeded, and `ai_canonname` is read only
    // while `res` lives, as a NUL-terminated string that getaddrinfo set.
    unsafe {
        let mut hints: libc::addrinfo = std::mem::zeroed();
        hints.ai_flags = libc::AI_CANONNAME;
        hints.ai_family = libc::AF_UNSPEC;
        hints.ai_socktype = libc::SOCK_STREAM;
        let mut res: *mut libc::addrinfo = std::ptr::null_mut();
        if libc::getaddrinfo(c_host.as_ptr(), std::ptr::null(), &hints, &mut res) != 0 {
            return None;
        }
        let name = if res.is_null() || (*res).ai_canonname.is_null() {
            None
        } else {
            CStr::from_ptr((*res).ai_canonname)
                .to_str()
                .ok()
                .map(str::to_owned)
        };
        if !res.is_null() {
            libc::freeaddrinfo(res);
        }
        name.filter(|n| n.contains('.') || n == host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `localhost` resolves here through /etc/hosts, with no DNS: the resolver call works and
    /// gives a name; the machine's own names start with its kernel hostname.
    #[test]
    fn the_resolver_and_the_hostname() {
        assert!(canonical_name("localhost").is_some());
        assert_eq!(canonical_name("no such host.invalid"), None);
        let names = machine_names();
        assert_eq!(names[0], super::super::hostname().to_ascii_lowercase());
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
    }
}
