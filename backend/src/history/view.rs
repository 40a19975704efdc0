//! What a viewer is given of the history: user names hidden from a link that does not show
//! them, and the history's own notices, with paths only for the admin.

use super::{Answer, History, Moment, Status, StoreError};

/// The most points one answer holds, over all its series (a few tens of MB of JSON).
pub const MAX_ANSWER_POINTS: usize = 1_000_000;

/// Who asks.
#[derive(Clone, Copy, Debug)]
pub struct Viewer {
    pub show_users: bool,
    pub admin: bool,
    /// The segments' findings asked for (`findings=true`); left out otherwise.
    pub findings: bool,
}

impl History {
    /// [`History::read`] as `viewer` may see it, with the notices.
    pub fn answer_for(
        &self,
        from_ms: u64,
        to_ms: u64,
        points: usize,
        wanted: super::Wanted<'_>,
        viewer: Viewer,
    ) -> Result<Answer, StoreError> {
        let mut answer = self.read_only(from_ms, to_ms, points, wanted, viewer.findings)?;
        if !viewer.show_users {
            without_jobs(&mut answer);
        }
        if !viewer.findings {
            without_findings(&mut answer);
        }
        let total: usize = answer.series.iter().map(|s| s.points.len()).sum();
        if total > MAX_ANSWER_POINTS {
            return Err(StoreError::TooLarge(format!(
                "{total} points in all: ask fewer points or fewer series (only=), at most {MAX_ANSWER_POINTS}"
            )));
        }
        answer.notices = notices(&self.status(), viewer.admin);
        Ok(answer)
    }

    /// [`History::moment`], without user names unless `show_users`.
    pub fn moment_for(
        &self,
        t_ms: u64,
        thresholds: &shared::diagnosis::Thresholds,
        show_users: bool,
    ) -> Result<Option<Moment>, StoreError> {
        Ok(self.moment(t_ms, thresholds)?.map(|mut m| {
            if !show_users {
                let hider = crate::host_feed::hider(
                    m.frame
                        .users()
                        .chain(m.diagnosis.users())
                        .collect::<Vec<_>>(),
                );
                m.frame.hide_users(&hider);
                m.diagnosis = m.diagnosis.without_users(&hider);
            }
            m
        }))
    }
}

/// Leaves out the job series for a viewer whose link hides user names: a job's id can hold its
/// owner's name (a unit `user@1000.service`, a container named after its user), and which users
/// an old job named is not always known, so they are not shown at all (it fails closed).
pub fn without_jobs(answer: &mut Answer) {
    use shared::series::Scope;
    answer
        .series
        .retain(|s| !matches!(s.scope, Scope::Job | Scope::JobGpu));
}

/// Leaves out the segments' findings: the timeline needs when, which verdict and how bad, and a
/// month of findings with their evidence was most of a chart's answer (docs/api.md#history).
pub fn without_findings(answer: &mut Answer) {
    for s in &mut answer.segments {
        s.findings.clear();
    }
}

/// What the page says about the history: the admin gets the paths, a share viewer the gist.
fn notices(status: &Status, admin: bool) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(why) = &status.paused {
        out.push(if admin {
            why.clone()
        } else {
            "history writing is paused on this server".to_owned()
        });
    }
    if let Some(aside) = &status.set_aside {
        out.push(if admin {
            format!("the history file could not be opened at start and was moved aside: {aside}")
        } else {
            "an earlier history file could not be opened and was set aside".to_owned()
        });
    }
    out
}

/// `gpu:util_pct,disk:read_bytes_per_sec`: the metrics a request asks for; an error names a
/// scope or metric that does not exist.
pub fn parse_only(text: &str) -> Result<Vec<(shared::series::Scope, String)>, String> {
    use shared::series::Scope;
    text.split(',')
        .filter(|p| !p.is_empty())
        .take(64)
        .map(|pair| {
            let (scope, metric) = pair
                .split_once(':')
                .ok_or_else(|| format!("`{pair}` is not scope:metric"))?;
            let scope = Scope::from_id(scope).ok_or_else(|| format!("no scope `{scope}`"))?;
            if scope.metric(metric).is_none() {
                return Err(format!("no metric `{metric}` in scope `{}`", scope.id()));
            }
            Ok((scope, metric.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_names_real_metrics() {
        use shared::series::Scope;
        assert_eq!(
            super::parse_only("gpu:util_pct,disk:read_bytes_per_sec"),
            Ok(vec![
                (Scope::Gpu, "util_pct".to_owned()),
                (Scope::Disk, "read_bytes_per_sec".to_owned())
            ])
        );
        assert!(super::parse_only("gpu:nope").is_err());
        assert!(super::parse_only("nope:util_pct").is_err());
        assert!(super::parse_only("util_pct").is_err());
        assert_eq!(super::parse_only(""), Ok(vec![]));
    }
}
