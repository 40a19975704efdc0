//! Series of a frame and the frame rebuilt from them.

use super::*;
use crate::frame::{GpuState, SourceError};
use std::collections::HashMap;

/// The protocol fixture's frame: 3 GPUs (one lost), mounts, disks, the host and a job.
fn fixture() -> Frame {
    let msg: serde_json::Value = serde_json::from_str(include_str!(
        "../../tests/fixtures/protocol/server-frame.json"
    ))
    .expect("fixture parses");
    serde_json::from_value(msg["frame"].clone()).expect("a frame")
}

type Values = HashMap<(Scope, String, usize), f64>;

fn values(frame: &Frame) -> Values {
    let mut out = HashMap::new();
    visit(frame, |scope, item, vs| {
        assert_eq!(vs.len(), scope.metrics().len());
        for (i, v) in vs.iter().enumerate() {
            if let Some(v) = v {
                out.insert((scope, item.to_owned(), i), *v);
            }
        }
    });
    out
}

fn from(values: &Values) -> impl FnMut(Scope, &str, usize) -> Option<f64> + '_ {
    |scope, item, i| values.get(&(scope, item.to_owned(), i)).copied()
}

/// What a rebuilt frame cannot have: figures that are not series.
fn without_non_series(mut f: Frame) -> Frame {
    f.cost.clear();
    for d in &mut f.block_devices {
        d.read_bytes_total = None;
        d.write_bytes_total = None;
        d.counters = None;
    }
    if let Some(s) = &mut f.system {
        for p in [&mut s.psi_io, &mut s.psi_memory].into_iter().flatten() {
            p.some_total_us = None;
        }
    }
    for j in &mut f.jobs {
        if let Some(io) = &mut j.io {
            io.devices.clear();
        }
    }
    f
}

#[test]
fn a_frame_rebuilt_from_its_series_has_every_figure_back() {
    let frame = fixture();
    assert!(!frame.jobs.is_empty() && frame.system.is_some());
    let v = values(&frame);
    let rebuilt = rebuild(&frame, frame.t_ms, from(&v));
    assert_eq!(rebuilt, without_non_series(frame));
}

#[test]
fn a_shape_takes_its_figures_from_the_series_not_from_itself() {
    let frame = fixture();
    let mut later = frame.clone();
    later.t_ms += 5_000;
    later.gpus[0].utilization_gpu_pct = Some(Percent(12.5));
    if let Some(m) = &mut later.gpus[0].memory {
        m.used_bytes = Bytes(m.used_bytes.0 / 2);
    }
    later.mounts[0].used_bytes = Some(Bytes(7));
    let rebuilt = rebuild(&frame, later.t_ms, from(&values(&later)));
    assert_eq!(rebuilt, without_non_series(later));
}

#[test]
fn a_figure_with_no_value_is_absent_never_zero() {
    let frame = fixture();
    let rebuilt = rebuild(&frame, frame.t_ms, |_, _, _| None);
    assert!(
        rebuilt
            .gpus
            .iter()
            .all(|g| g.memory.is_none() && g.utilization_gpu_pct.is_none() && g.power_w.is_none())
    );
    assert!(rebuilt.mounts.iter().all(|m| m.used_bytes.is_none()));
    assert!(rebuilt.block_devices.iter().all(|d| d.util_pct.is_none()));
    let s = rebuilt.system.expect("the shape had system figures");
    assert!(s.cpu_pct.is_none() && s.mem_total_bytes.is_none() && s.psi_io.is_none());
    assert!(rebuilt.jobs.iter().all(|j| j.rss_bytes.is_none()));
    // GPU memory needs used, total and free: with one missing there is no memory reading.
    let mut v = values(&frame);
    v.retain(|(s, item, i), _| !(*s == Scope::Gpu && item == "0" && *i == 3));
    let rebuilt = rebuild(&frame, frame.t_ms, from(&v));
    assert!(rebuilt.gpus[0].memory.is_none());
}

#[test]
fn a_lost_gpu_has_its_item_but_no_values() {
    let mut frame = fixture();
    frame.gpus[1] = crate::Gpu::unread(1, None, None, GpuState::Lost);
    let v = values(&frame);
    assert!(!v.keys().any(|(s, item, _)| *s == Scope::Gpu && item == "1"));
    let mut seen = false;
    visit(&frame, |s, item, vs| {
        if s == Scope::Gpu && item == "1" {
            seen = true;
            assert!(vs.iter().all(Option::is_none));
        }
    });
    assert!(seen);
}

#[test]
fn the_shape_hash_moves_with_the_shape_and_not_with_figures_or_messages() {
    let frame = fixture();
    let base = shape_hash(&frame);
    let mut figures = frame.clone();
    figures.t_ms += 1000;
    figures.seq += 1;
    figures.gpus[0].utilization_gpu_pct = Some(Percent(1.0));
    figures.mounts[0].used_bytes = Some(Bytes(1));
    assert_eq!(shape_hash(&figures), base);

    let mut lost = frame.clone();
    lost.gpus[0].state = GpuState::Lost;
    assert_ne!(shape_hash(&lost), base);
    let mut unmounted = frame.clone();
    unmounted.mounts.pop();
    assert_ne!(shape_hash(&unmounted), base);
    let mut failing = frame.clone();
    failing.errors.push(SourceError {
        source: crate::Source::Mounts,
        item: Some("/data".into()),
        message: "statvfs timed out after 1.0 s".into(),
    });
    let failing_hash = shape_hash(&failing);
    assert_ne!(failing_hash, base);
    failing.errors[0].message = "statvfs timed out after 2.0 s".into();
    assert_eq!(shape_hash(&failing), failing_hash);
}

#[test]
fn metric_names_are_unique_within_a_scope_and_scopes_round_trip() {
    for scope in Scope::ALL {
        let names: Vec<_> = scope.metrics().iter().map(|m| m.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{scope:?}");
        assert_eq!(Scope::from_id(scope.id()), Some(scope));
        for (i, n) in names.iter().enumerate() {
            assert_eq!(scope.metric(n), Some(i));
        }
    }
}

#[test]
fn job_items_name_kind_id_and_step() {
    let frame = fixture();
    let j = &frame.jobs[0];
    assert_eq!(job_item(j), "slurm:4412:0");
    let mut whole = j.clone();
    whole.step = None;
    assert_eq!(job_item(&whole), "slurm:4412");
}

#[test]
fn a_jobs_series_are_its_own_and_not_a_longer_ids() {
    assert!(of_job("slurm:12", "slurm:12"));
    assert!(of_job("slurm:12", "slurm:12:batch"));
    assert!(of_job("slurm:12", "slurm:12@0"));
    assert!(of_job("slurm:12", "slurm:12:batch@1 (MIG 1/0)"));
    assert!(!of_job("slurm:12", "slurm:123"));
    assert!(!of_job("slurm:12", "slurm:123@0"));
    assert!(!of_job("slurm:12", "pod:slurm:12"));
}

#[test]
fn a_job_filter_keeps_that_jobs_series_and_every_other_scope() {
    let key = Some("slurm:12");
    assert!(kept_for_job(key, Scope::Job, "slurm:12:batch"));
    assert!(kept_for_job(key, Scope::JobGpu, "slurm:12@0"));
    assert!(!kept_for_job(key, Scope::Job, "slurm:13"));
    assert!(!kept_for_job(key, Scope::JobGpu, "pod:a@1"));
    assert!(kept_for_job(key, Scope::Gpu, "0"));
    assert!(kept_for_job(key, Scope::Host, ""));
    assert!(kept_for_job(None, Scope::Job, "slurm:13"));
}
