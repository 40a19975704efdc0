//! The thresholds file (`--thresholds FILE`): TOML or JSON, any subset of
//! `shared::diagnosis::Thresholds`' fields; the rest keep their documented defaults.

use shared::diagnosis::Thresholds;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read thresholds file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("thresholds file {path}: {reason}")]
    Parse { path: PathBuf, reason: String },
}

/// Parses thresholds from `text`; JSON when it starts with `{`, TOML otherwise.
/// Values no diagnosis can use (NaN, inf, a warning past its critical level) are refused, naming
/// the key.
pub fn parse_thresholds(text: &str) -> Result<Thresholds, String> {
    let t: Thresholds = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| e.to_string())?
    } else {
        toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())?
    };
    t.validate()?;
    Ok(t)
}

/// Reads `path`, or gives the defaults when there is none.
pub fn load_thresholds(path: Option<&Path>) -> Result<Thresholds, ConfigError> {
    let Some(path) = path else {
        return Ok(Thresholds::default());
    };
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_thresholds(&text).map_err(|reason| ConfigError::Parse {
        path: path.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_json_override_a_subset() {
        let t = parse_thresholds("gpu_mem_warn_pct = 80.0\ndisk_warn_pct = 70.0\n").expect("toml");
        assert_eq!(t.gpu_mem_warn_pct, 80.0);
        assert_eq!(t.disk_warn_pct, 70.0);
        assert_eq!(t.gpu_mem_crit_pct, Thresholds::default().gpu_mem_crit_pct);
        let j = parse_thresholds(r#"{"gpu_mem_crit_pct": 97.5}"#).expect("json");
        assert_eq!(j.gpu_mem_crit_pct, 97.5);
        assert_eq!(j.gpu_mem_warn_pct, Thresholds::default().gpu_mem_warn_pct);
    }

    /// Found by the `config_files` fuzz target: thresholds written as JSON read back one unit in
    /// the last place off (serde_json's default float parser).
    #[test]
    fn thresholds_written_as_json_read_back_exactly() {
        let t = parse_thresholds("await_min_ms=7444444000000073").expect("toml");
        let json = serde_json::to_string(&t).expect("json");
        assert_eq!(parse_thresholds(&json), Ok(t), "{json}");
    }

    #[test]
    fn typos_and_bad_values_are_named() {
        let e = parse_thresholds("gpu_mem_warm_pct = 80.0\n").expect_err("typo");
        assert!(e.contains("gpu_mem_warm_pct"), "{e}");
        let e = parse_thresholds("gpu_mem_warn_pct = \"high\"\n").expect_err("type");
        assert!(
            e.contains("gpu_mem_warn_pct") || e.contains("invalid type"),
            "{e}"
        );
        for (text, key) in [
            ("gpu_mem_warn_pct = nan\n", "gpu_mem_warn_pct"),
            ("disk_full_horizon_s = inf\n", "disk_full_horizon_s"),
            ("gpu_mem_warn_pct = 99.0\n", "gpu_mem_crit_pct"),
            (
                r#"{"disk_warn_pct": 95, "disk_crit_pct": 90}"#,
                "disk_warn_pct",
            ),
        ] {
            let e = parse_thresholds(text).expect_err(text);
            assert!(e.contains(key), "{text}: {e}");
        }
        let e = load_thresholds(Some(Path::new("/nonexistent/t.toml"))).expect_err("missing");
        assert!(e.to_string().contains("/nonexistent/t.toml"), "{e}");
    }
}
