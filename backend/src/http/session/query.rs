//! `history_query` and `moment_query` on a session: the stored history of the server's own host
//! (docs/api.md#history), read off the async thread, answered on the same socket. A hub asks its
//! peers this way, over WebSocket or `vramio stream`.

use crate::history::{History, Viewer};
use shared::diagnosis::Thresholds;
use shared::{ClientMsg, ServerMsg};
use std::sync::Arc;

/// What a session may read of the history.
#[derive(Clone)]
pub struct Access {
    pub history: History,
    pub thresholds: Arc<Thresholds>,
    /// Whether the session's viewer is the admin (notices name paths).
    pub admin: bool,
    /// A share link's viewer that sees live data only: every query is refused.
    pub live_only: bool,
}

/// The largest range and point count one query reads (as `GET /api/history`).
const MAX_RANGE_MS: u64 = 400 * 86_400_000;
const MAX_POINTS: u32 = 20_000;
/// The largest answer sent (a hub's link takes messages up to 16 MiB).
const MAX_ANSWER_BYTES: usize = 12 << 20;

/// The answer to `q`.
pub async fn answer(access: Option<&Access>, q: ClientMsg, show_users: bool) -> ServerMsg {
    let id = match &q {
        ClientMsg::HistoryQuery { id, .. } | ClientMsg::MomentQuery { id, .. } => *id,
        _ => 0,
    };
    let failed = move |message: String| ServerMsg::QueryFailed { id, message };
    let Some(access) = access.cloned() else {
        return failed(
            "no history is kept here (it is kept by `vramio serve`, without --no-history)".into(),
        );
    };
    if access.live_only {
        return failed("this share link shows live data only, not the stored history".into());
    }
    let read = move || match q {
        ClientMsg::HistoryQuery {
            id,
            from_ms,
            to_ms,
            points,
            only,
            findings,
        } => {
            let only = match only.as_deref().map(crate::history::parse_only).transpose() {
                Ok(o) => o,
                Err(e) => return failed(e),
            };
            if from_ms >= to_ms
                || to_ms - from_ms > MAX_RANGE_MS
                || points == 0
                || points > MAX_POINTS
            {
                return failed(
                    "from_ms must be before to_ms (at most 400 days), points 1 to 20000".into(),
                );
            }
            let viewer = Viewer {
                show_users,
                admin: access.admin,
                findings,
            };
            match access.history.answer_for(
                from_ms,
                to_ms,
                points as usize,
                crate::history::Wanted {
                    only: only.as_deref(),
                    job: None,
                },
                viewer,
            ) {
                Ok(answer) => {
                    let msg = ServerMsg::HistoryAnswer {
                        id,
                        answer: Box::new(answer),
                    };
                    // A hub's link takes messages up to 16 MiB; a bigger answer would cut it.
                    match serde_json::to_vec(&msg) {
                        Ok(v) if v.len() <= MAX_ANSWER_BYTES => msg,
                        _ => failed(format!(
                            "the answer is over {} MiB: ask fewer points or fewer series (only=)",
                            MAX_ANSWER_BYTES >> 20
                        )),
                    }
                }
                Err(e) => failed(format!("the history cannot be read now: {e}")),
            }
        }
        ClientMsg::MomentQuery { id, t_ms } => {
            match access
                .history
                .moment_for(t_ms, &access.thresholds, show_users)
            {
                Ok(Some(m)) => ServerMsg::MomentAnswer {
                    id,
                    moment: Box::new(m),
                },
                Ok(None) => failed("nothing is stored at or before that moment".into()),
                Err(e) => failed(format!("the history cannot be read now: {e}")),
            }
        }
        _ => failed("not a query".into()),
    };
    tokio::task::spawn_blocking(read)
        .await
        .unwrap_or_else(|_| ServerMsg::QueryFailed {
            id,
            message: "the history read failed".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A share link made live only gets no stored history over the socket either: both
    /// queries are refused with the reason, where the same store answers anyone else.
    #[tokio::test]
    async fn a_live_only_viewer_is_refused_both_queries() {
        let dir = std::env::temp_dir().join(format!("vramio-query-live-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (history, sink) =
            History::open(&dir, crate::history::DEFAULT_MAX_BYTES).expect("opens");
        let access = |live_only| Access {
            history: history.clone(),
            thresholds: Arc::new(Thresholds::default()),
            admin: false,
            live_only,
        };
        let range = || ClientMsg::HistoryQuery {
            id: 7,
            from_ms: 1_000,
            to_ms: 2_000_000,
            points: 10,
            only: None,
            findings: false,
        };
        let moment = || ClientMsg::MomentQuery { id: 8, t_ms: 5_000 };
        assert!(matches!(
            answer(Some(&access(false)), range(), false).await,
            ServerMsg::HistoryAnswer { id: 7, .. }
        ));
        for (q, want_id) in [(range(), 7), (moment(), 8)] {
            match answer(Some(&access(true)), q, true).await {
                ServerMsg::QueryFailed { id, message } => {
                    assert_eq!(id, want_id);
                    assert!(message.contains("live data only"), "{message}");
                }
                other => panic!("a live-only viewer was answered: {other:?}"),
            }
        }
        drop(sink);
        history.close();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
