//! Calls that NVML offers in two generations: try the newer, fall back to the older when the
//! driver does not do the newer one, and remember that per device for the NVML session.
//!
//! nvml-wrapper 0.13 calls only `nvmlDeviceGetMemoryInfo_v2` and the `_v3` process lists. Drivers
//! before R510 (the 470 LTS branch, 495) have neither symbol (nvml-wrapper then answers
//! `FailedToLoadSymbol`, never a panic); some that have one fail the call with
//! `NVML_ERROR_FUNCTION_NOT_FOUND` or `NVML_ERROR_UNKNOWN` (nvitop saw the latter with v2 memory
//! on WSL's 516.59; NVML's docs call v2 experimental in R510). [`memory`](super::memory) and
//! [`processes`](super::processes) use [`Fallback`] for both.

use nvml_wrapper::error::NvmlError;

/// `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`, which nvml-wrapper 0.13 has no variant for: a driver
/// whose versioned struct differs from the one asked for.
const ARGUMENT_VERSION_MISMATCH: u32 = 25;

/// Which generation of a call answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    Newer,
    Older,
}

/// Whether `e` says "this driver does not do the newer call" rather than "this reading failed".
/// A lost GPU or a permission error is never a reason to fall back.
pub fn wants_older(e: &NvmlError) -> bool {
    match e {
        NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound | NvmlError::Unknown => true,
        NvmlError::UnexpectedVariant(code) => *code == ARGUMENT_VERSION_MISMATCH,
        _ => false,
    }
}

/// For one call of one device in one NVML session: whether the newer generation is skipped.
/// A new session starts from a fresh `Fallback`, so a driver upgrade is picked up on re-init.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fallback {
    older_only: bool,
}

impl Fallback {
    /// Calls `newer`, or `older` where `newer` failed for a reason [`wants_older`] accepts (or
    /// failed so before in this session: then `newer` is not called at all). When both fail,
    /// `older`'s error is the answer, and `newer` is tried again next time.
    pub fn call<T>(
        &mut self,
        newer: impl FnOnce() -> Result<T, NvmlError>,
        older: impl FnOnce() -> Result<T, NvmlError>,
    ) -> Result<(T, Generation), NvmlError> {
        if !self.older_only {
            match newer() {
                Err(e) if wants_older(&e) => {}
                other => return other.map(|v| (v, Generation::Newer)),
            }
        }
        let value = older()?;
        self.older_only = true;
        Ok((value, Generation::Older))
    }

    /// Whether the newer generation is skipped from now on.
    pub fn older_only(&self) -> bool {
        self.older_only
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn falls_back_once_and_remembers_it() {
        let failures: [fn() -> NvmlError; 4] = [
            || NvmlError::FailedToLoadSymbol("nvmlDeviceGetMemoryInfo_v2".into()),
            || NvmlError::FunctionNotFound,
            || NvmlError::Unknown,
            || NvmlError::UnexpectedVariant(ARGUMENT_VERSION_MISMATCH),
        ];
        for failure in failures {
            let newer_calls = Cell::new(0);
            let mut f = Fallback::default();
            let tick = |f: &mut Fallback| {
                f.call(
                    || {
                        newer_calls.set(newer_calls.get() + 1);
                        Err::<u32, _>(failure())
                    },
                    || Ok(1),
                )
            };
            assert_eq!(tick(&mut f).ok(), Some((1, Generation::Older)));
            assert_eq!(tick(&mut f).ok(), Some((1, Generation::Older)));
            assert_eq!(newer_calls.get(), 1, "{:?}: tried once", failure());
            assert!(f.older_only());
            // A new NVML session starts from a fresh Fallback and tries the newer call again.
            let mut fresh = Fallback::default();
            assert!(tick(&mut fresh).is_ok());
            assert_eq!(newer_calls.get(), 2);
        }
    }

    #[test]
    fn a_reading_that_fails_is_not_a_reason_to_fall_back() {
        let failures: [fn() -> NvmlError; 3] = [
            || NvmlError::GpuLost,
            || NvmlError::NotSupported,
            || NvmlError::NoPermission,
        ];
        for failure in failures {
            let mut f = Fallback::default();
            let older_called = Cell::new(false);
            let got = f.call(
                || Err::<u32, _>(failure()),
                || {
                    older_called.set(true);
                    Ok(1)
                },
            );
            assert!(got.is_err(), "{:?}", failure());
            assert!(!older_called.get(), "{:?}", failure());
            assert!(!f.older_only());
        }
    }

    #[test]
    fn the_newer_answer_wins_and_both_failing_is_retried() {
        let mut f = Fallback::default();
        let got = f.call(|| Ok(2), || Ok(1));
        assert_eq!(got.ok(), Some((2, Generation::Newer)));
        let got = f.call(
            || Err::<u32, _>(NvmlError::FunctionNotFound),
            || Err(NvmlError::GpuLost),
        );
        assert!(matches!(got, Err(NvmlError::GpuLost)), "{got:?}");
        assert!(
            !f.older_only(),
            "nothing answered: try the newer call again"
        );
    }
}
