//! Why a walk ends in `no_data`: the first spine question answered `unknown`, and what was missing
//! for it (no driver, NVML failing, a GPU lost, too few samples yet, a source that reads nothing).

use super::ctx::Ctx;
use super::gpus::GpuSeries;
use super::model::{Answer, NoDataCause, NodeId, PathNode};
use crate::frame::NvmlStatus;

/// The cause for a `no_data` verdict reached along `path` (see the module docs).
pub(crate) fn cause(ctx: &Ctx<'_>, gpus: &[GpuSeries], path: &[PathNode]) -> NoDataCause {
    let node = path
        .iter()
        .find(|n| n.answer == Answer::Unknown)
        .map_or(NodeId::GpuMemory, |n| n.node);
    if node == NodeId::GpuMemory {
        match ctx.frames.last().map(|f| &f.nvml) {
            Some(NvmlStatus::NoDriver { message }) => {
                return NoDataCause::NoDriver {
                    message: message.clone(),
                };
            }
            Some(NvmlStatus::Error { message }) => {
                return NoDataCause::NvmlFailed {
                    message: message.clone(),
                };
            }
            _ => {}
        }
        if gpus.is_empty() {
            return NoDataCause::NoGpus;
        }
        if let Some(g) = gpus.iter().find(|g| g.unavailable_now) {
            return NoDataCause::GpuLost {
                gpu: g.subject.clone(),
                message: g
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "no memory reading".to_owned()),
            };
        }
    }
    let have = u32::try_from(ctx.frames.len()).unwrap_or(u32::MAX);
    let need = ctx.th.min_samples.max(1);
    if have < need {
        NoDataCause::TooFewSamples { have, need }
    } else {
        NoDataCause::NotRead { node }
    }
}
