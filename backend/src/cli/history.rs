//! `vramio history export`: a range of the history as CSV or NDJSON frames, from the running
//! server (`GET /api/history/export`, which reads the store it holds) or, with none running,
//! from the history directory itself.

use super::flags::{ClientArgs, HistoryCommand};
use anyhow::{Context, bail};
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An export reads at most this much from the server.
const MAX_EXPORT_BYTES: usize = 1 << 30;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `now`, RFC 3339, milliseconds since the epoch, or a time ago (`24h`, `7d`, `90m`).
pub fn parse_time(s: &str, now_ms: u64) -> Result<u64, String> {
    let s = s.trim();
    if s == "now" {
        return Ok(now_ms);
    }
    if let Ok(ms) = s.parse::<u64>() {
        return Ok(ms);
    }
    if let Ok(t) = humantime::parse_rfc3339_weak(s) {
        return t
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .map_err(|_| format!("`{s}` is before 1970"));
    }
    if let Ok(ago) = humantime::parse_duration(s) {
        return Ok(now_ms.saturating_sub(ago.as_millis() as u64));
    }
    Err(format!(
        "`{s}` is not a time: RFC 3339 (2026-12-03T22:00:00Z), milliseconds since the epoch, a time ago (24h) or `now`"
    ))
}

pub fn run(command: HistoryCommand) -> anyhow::Result<()> {
    let HistoryCommand::Export {
        from,
        to,
        host,
        format,
        out,
        history_dir,
        access,
    } = command;
    let now = now_ms();
    let from = parse_time(&from, now).map_err(anyhow::Error::msg)?;
    let to = parse_time(&to, now).map_err(anyhow::Error::msg)?;
    if from >= to {
        bail!("--from must be before --to");
    }
    let text = match (
        &history_dir,
        super::client::open(&ClientArgs {
            access: access.clone(),
        }),
    ) {
        (None, Ok((token, server))) => {
            let mut path = format!("/api/history/export?from_ms={from}&to_ms={to}&format=");
            path.push_str(match format {
                crate::history::Format::Csv => "csv",
                crate::history::Format::Ndjson => "ndjson",
            });
            if let Some(h) = &host {
                path.push_str("&host=");
                path.push_str(&percent(h));
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (status, body) = runtime.block_on(super::client::call_sized(
                &server,
                &token,
                axum::http::Method::GET,
                &path,
                None,
                MAX_EXPORT_BYTES,
                Duration::from_secs(300),
            ))?;
            if !status.is_success() {
                bail!("{}", super::client::api_message(status, &body));
            }
            body
        }
        _ => {
            if host.is_some() {
                bail!(
                    "--host needs the running server (a hub asks its peers); none runs with this state directory"
                );
            }
            let dir = match history_dir {
                Some(d) => d,
                None => crate::access::state_dir::StateDir::open(access.state_dir.as_deref())?
                    .path()
                    .join("history"),
            };
            let file = dir.join(crate::history::FILE);
            if !file.exists() {
                bail!("no history in {}", dir.display());
            }
            // As it is: an export never sets a damaged or newer store aside, as a serve would.
            let store = crate::history::Store::open_existing(&file)
                .with_context(|| format!("cannot open the history in {}", dir.display()))?;
            match format {
                crate::history::Format::Csv => crate::history::frames::csv(&store, from, to)?,
                crate::history::Format::Ndjson => crate::history::frames::ndjson(&store, from, to)?,
            }
        }
    };
    match out {
        Some(path) => std::fs::write(&path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
        }
    }
    Ok(())
}

/// Percent-encodes a query value.
fn percent(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_millis_or_ago() {
        let now = 1_764_504_200_000;
        assert_eq!(parse_time("now", now), Ok(now));
        assert_eq!(parse_time("24h", now), Ok(now - 86_400_000));
        assert_eq!(
            parse_time("2025-11-30T12:03:20Z", now),
            Ok(1_764_504_200_000)
        );
        assert_eq!(parse_time("1700000000000", now), Ok(1_700_000_000_000));
        assert!(
            parse_time("yesterday", now)
                .expect_err("not a time")
                .contains("not a time")
        );
        assert_eq!(percent("a b/ü"), "a%20b%2F%C3%BC");
    }
}
