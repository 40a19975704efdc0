//! Strategies for what goes on the wire besides frames: a [`Diagnosis`] of any shape (not only
//! one `diagnose` makes), [`HostSummary`], chart [`Sample`]s and every [`ServerMsg`] and
//! [`ClientMsg`] variant.

use super::frame::frame;
use super::{Floats, float, int, int32, name, one_of, opt};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use shared::diagnosis::{
    Contention, Diagnosis, Evidence, Finding, Held, JobDiagnosis, NoDataCause, PathNode,
    Projection, Suggestion, Threshold,
};
use shared::history::{DiskSample, GpuSample, Sample};
use shared::summary::{DiskBrief, GpuBrief, JobBrief};
use shared::{ClientMsg, HostSummary, ServerMsg};

static SUBJECTS: [&str; 4] = ["gpu 0", "gpu 1", "/data", "nvme0n1"];
static HOSTS: [&str; 4] = ["gpu-node-7", "ssh://gpu1", "gpu2:7575", ""];
static TEXT: [&str; 3] = [
    "GPU is lost (NVML_ERROR_GPU_IS_LOST)",
    "no frame for 3.2 s",
    "",
];

fn evidence(f: Floats) -> impl Strategy<Value = Evidence> {
    let threshold = (one_of(), float(f, 0.0..100.0))
        .prop_map(|(comparison, value)| Threshold { comparison, value });
    let held = (int(0..u64::MAX), float(f, 0.0..100.0), float(f, 0.0..100.0)).prop_map(
        |(since_ms, entered_at, clears_at)| Held {
            since_ms,
            entered_at,
            clears_at,
        },
    );
    (
        (
            one_of(),
            opt(name(&SUBJECTS)),
            opt(float(f, 0.0..100.0)),
            one_of(),
        ),
        (
            opt(threshold),
            opt(float(f, 0.0..3600.0)),
            opt((any::<u32>(), any::<u32>())),
            opt(held),
            opt(name(&TEXT)),
        ),
    )
        .prop_map(
            |((metric, subject, value, unit), (threshold, window_s, samples, held, detail))| {
                Evidence {
                    metric,
                    subject,
                    value,
                    unit,
                    threshold,
                    window_s,
                    samples,
                    held,
                    detail,
                }
            },
        )
}

fn suggestion() -> impl Strategy<Value = Suggestion> {
    (one_of(), name(&TEXT)).prop_map(|(id, why)| Suggestion { id, why })
}

fn finding(f: Floats) -> impl Strategy<Value = Finding> {
    (
        (one_of(), one_of(), float(f, 0.0..1.0), opt(name(&SUBJECTS))),
        (
            int(0..u64::MAX),
            vec(evidence(f), 0..3),
            vec(suggestion(), 0..3),
        ),
    )
        .prop_map(
            |((rule, severity, confidence, subject), (since_ms, evidence, suggestions))| Finding {
                rule,
                severity,
                confidence,
                subject,
                since_ms,
                evidence,
                suggestions,
            },
        )
}

fn no_data_cause() -> impl Strategy<Value = NoDataCause> {
    prop_oneof![
        Just(NoDataCause::NoFrames),
        name(&TEXT).prop_map(|message| NoDataCause::NoDriver { message }),
        name(&TEXT).prop_map(|message| NoDataCause::NvmlFailed { message }),
        Just(NoDataCause::NoGpus),
        (name(&SUBJECTS), name(&TEXT))
            .prop_map(|(gpu, message)| NoDataCause::GpuLost { gpu, message }),
        (any::<u32>(), any::<u32>())
            .prop_map(|(have, need)| NoDataCause::TooFewSamples { have, need }),
        one_of().prop_map(|node| NoDataCause::NotRead { node }),
    ]
}

fn path_node(f: Floats) -> impl Strategy<Value = PathNode> {
    (one_of(), name(&TEXT), one_of(), vec(evidence(f), 0..3)).prop_map(
        |(node, question, answer, evidence)| PathNode {
            node,
            question,
            answer,
            evidence,
        },
    )
}

static JOB_IDS: [&str; 3] = ["4412", "0123456789abcdef0123", ""];

fn job_diagnosis(f: Floats) -> impl Strategy<Value = JobDiagnosis> {
    let contention = (
        (one_of(), name(&JOB_IDS), opt(name(&JOB_IDS)), name(&TEXT)),
        (
            name(&SUBJECTS),
            float(f, 0.0..1e10),
            opt(float(f, 0.0..1e10)),
        ),
    )
        .prop_map(
            |((kind, id, step, label), (device, read_bytes_per_sec, own_read_bytes_per_sec))| {
                Contention {
                    kind,
                    id,
                    step,
                    label,
                    device,
                    read_bytes_per_sec,
                    own_read_bytes_per_sec,
                }
            },
        );
    (
        (one_of(), name(&JOB_IDS), opt(name(&JOB_IDS)), name(&TEXT)),
        (vec(0u32..16, 0..4), one_of(), one_of()),
        (
            vec(path_node(f), 0..3),
            vec(finding(f), 0..2),
            opt(contention),
        ),
    )
        .prop_map(
            |((kind, id, step, label), (gpus, verdict, severity), (path, findings, contention))| {
                JobDiagnosis {
                    kind,
                    id,
                    step,
                    label,
                    user: None,
                    gpus,
                    verdict,
                    severity,
                    path,
                    findings,
                    contention,
                }
            },
        )
}

/// A diagnosis of any shape: any verdict with any path, findings and projections, whether or
/// not the rules could have made it (a page renders what a peer of another version sends).
pub fn diagnosis(f: Floats) -> impl Strategy<Value = Diagnosis> {
    let path_node = path_node(f);
    let projection = (
        name(&SUBJECTS),
        one_of(),
        float(f, 0.0..86_400.0),
        float(f, 0.0..1e9),
    )
        .prop_map(|(subject, kind, seconds, slope_per_s)| Projection {
            subject,
            kind,
            seconds,
            slope_per_s,
        });
    (
        (one_of(), one_of(), vec(path_node, 0..4)),
        (vec(finding(f), 0..3), vec(projection, 0..3)),
        (
            opt(float(f, 0.0..3600.0)),
            opt(int(0..u64::MAX)),
            opt(no_data_cause()),
        ),
        vec(job_diagnosis(f), 0..3),
    )
        .prop_map(
            |(
                (verdict, severity, path),
                (findings, projections),
                (window_s, t_ms, no_data),
                jobs,
            )| {
                Diagnosis {
                    verdict,
                    severity,
                    path,
                    findings,
                    projections,
                    window_s,
                    t_ms,
                    no_data,
                    jobs,
                }
            },
        )
}

pub fn host_summary() -> impl Strategy<Value = HostSummary> {
    let gpu = (opt(any::<u8>()), opt(any::<u8>()))
        .prop_map(|(mem_pct, util_pct)| GpuBrief { mem_pct, util_pct });
    let disk = (name(&SUBJECTS), opt(any::<u8>()))
        .prop_map(|(name, util_pct)| DiskBrief { name, util_pct });
    (
        (
            one_of(),
            opt(int(0..u64::MAX)),
            opt(name(&TEXT)),
            opt(name(&HOSTS)),
        ),
        (opt(one_of()), opt(one_of()), vec(gpu, 0..4), opt(disk)),
        (
            opt(int(0..86_400)),
            opt(int(0..86_400)),
            opt((name(&TEXT), one_of()).prop_map(|(label, verdict)| JobBrief { label, verdict })),
        ),
    )
        .prop_map(
            |(
                (state, seen_ms, error, hostname),
                (verdict, severity, gpus, disk),
                (oom_s, full_s, job),
            )| HostSummary {
                state,
                seen_ms,
                error,
                hostname,
                verdict,
                severity,
                gpus,
                disk,
                oom_s,
                full_s,
                job,
            },
        )
}

/// A chart sample whose figures come from `figure` (see `prop_history` for why they are
/// constrained).
pub fn sample(figure: BoxedStrategy<f64>) -> impl Strategy<Value = Sample> {
    let fig = move || opt(figure.clone());
    let gpu = (int32(0..8), fig(), fig()).prop_map(|(index, mem_pct, util_pct)| GpuSample {
        index,
        mem_pct,
        util_pct,
    });
    let disk = (name(&SUBJECTS), fig(), fig(), fig()).prop_map(
        |(name, read_mib_s, write_mib_s, util_pct)| DiskSample {
            name,
            read_mib_s,
            write_mib_s,
            util_pct,
        },
    );
    (
        int(0..u64::MAX),
        int(0..u64::MAX),
        vec(gpu, 0..4),
        vec(disk, 0..4),
    )
        .prop_map(|(seq, t_ms, gpus, disks)| Sample {
            seq,
            t_ms,
            gpus,
            disks,
        })
}

/// Every server message, floats drawn as `f` says, except that `figure` draws the chart samples
/// of `history`.
pub fn server_msg(f: Floats, figure: BoxedStrategy<f64>) -> impl Strategy<Value = ServerMsg> {
    let host = || name(&HOSTS);
    prop_oneof![
        (
            any::<u32>(),
            name(&["0.1.0", ""]),
            vec(host(), 0..3),
            int(0..10_000),
            proptest::option::of(name(&["5e0a1c2b3d4f6a7b", ""]))
        )
            .prop_map(|(protocol, version, hosts, interval_ms, instance)| {
                ServerMsg::Hello {
                    protocol,
                    version,
                    hosts,
                    interval_ms,
                    instance,
                }
            }),
        (host(), vec(frame(f), 0..3))
            .prop_map(|(host, frames)| ServerMsg::Backfill { host, frames }),
        (host(), frame(f)).prop_map(|(host, frame)| ServerMsg::Frame {
            host,
            frame: Box::new(frame),
        }),
        (host(), host_summary()).prop_map(|(host, summary)| ServerMsg::Summary {
            host,
            summary: Box::new(summary),
        }),
        (host(), diagnosis(f)).prop_map(|(host, diagnosis)| {
            ServerMsg::Diagnosis {
                host,
                diagnosis: Box::new(diagnosis),
            }
        }),
        (host(), one_of(), opt(int(0..u64::MAX)), opt(name(&TEXT))).prop_map(
            |(host, state, last_seen_ms, error)| ServerMsg::HostStatus {
                host,
                state,
                last_seen_ms,
                error,
            }
        ),
        (host(), int(0..1000)).prop_map(|(host, frames)| ServerMsg::Reset { host, frames }),
        (host(), vec(sample(figure.clone()), 0..3))
            .prop_map(|(host, samples)| ServerMsg::History { host, samples }),
        int(0..1000).prop_map(|skipped| ServerMsg::Lagged { skipped }),
        (one_of(), name(&TEXT)).prop_map(|(code, message)| ServerMsg::Error { code, message }),
        Just(ServerMsg::Pong),
        (int(0..u64::MAX), stored_answer(f, figure.clone())).prop_map(|(id, answer)| {
            ServerMsg::HistoryAnswer {
                id,
                answer: Box::new(answer),
            }
        }),
        (
            int(0..u64::MAX),
            int(0..u64::MAX),
            int(0..100_000),
            frame(f),
            diagnosis(f)
        )
            .prop_map(
                |(id, t_ms, step_ms, frame, diagnosis)| ServerMsg::MomentAnswer {
                    id,
                    moment: Box::new(shared::stored::Moment {
                        t_ms,
                        step_ms,
                        frame,
                        diagnosis,
                    }),
                }
            ),
        (int(0..u64::MAX), name(&TEXT))
            .prop_map(|(id, message)| ServerMsg::QueryFailed { id, message }),
    ]
}

/// A stored range of any shape.
pub fn stored_answer(
    f: Floats,
    figure: BoxedStrategy<f64>,
) -> impl Strategy<Value = shared::stored::Answer> {
    use shared::stored::{Answer, Piece, Segment, SeriesPoints};
    let point = (int(0..u64::MAX), figure.clone(), figure.clone(), figure);
    let series = (
        one_of(),
        name(&SUBJECTS),
        name(&["util_pct", "used_bytes"]),
        one_of(),
        vec(point, 0..3),
    )
        .prop_map(|(scope, item, metric, unit, points)| SeriesPoints {
            scope,
            item,
            metric,
            unit,
            points,
        });
    let segment = (
        int(0..u64::MAX),
        int(0..u64::MAX),
        one_of(),
        one_of(),
        vec(finding(f), 0..2),
    )
        .prop_map(|(from_ms, to_ms, verdict, severity, findings)| Segment {
            from_ms,
            to_ms,
            verdict,
            severity,
            findings,
        });
    let piece = (int(0..u64::MAX), int(0..u64::MAX), int(0..100_000)).prop_map(
        |(from_ms, to_ms, step_ms)| Piece {
            from_ms,
            to_ms,
            step_ms,
        },
    );
    (
        (int(0..u64::MAX), int(0..u64::MAX), int(0..100_000)),
        vec(piece, 0..2),
        vec(series, 0..3),
        vec(segment, 0..2),
        vec(name(&TEXT), 0..2),
    )
        .prop_map(
            |((from_ms, to_ms, step_ms), tiers, series, segments, notices)| Answer {
                from_ms,
                to_ms,
                step_ms,
                tiers,
                series,
                segments,
                events: Vec::new(),
                notices,
            },
        )
}

/// Every client message.
pub fn client_msg() -> impl Strategy<Value = ClientMsg> {
    prop_oneof![
        (
            opt(vec(name(&HOSTS), 0..3)),
            opt(int(0..u64::MAX)),
            opt(btree_map(name(&HOSTS), int(0..u64::MAX), 0..3)),
            any::<bool>(),
            opt(int(0..u64::MAX)),
        )
            .prop_map(|(hosts, since_seq, since, samples, max_frames)| {
                ClientMsg::Subscribe {
                    hosts,
                    since_seq,
                    since,
                    samples,
                    max_frames,
                }
            }),
        Just(ClientMsg::Ping),
        (
            int(0..u64::MAX),
            int(0..u64::MAX),
            int(0..u64::MAX),
            int32(0..20_000),
            opt(name(&["gpu:util_pct", ""]))
        )
            .prop_map(
                |(id, from_ms, to_ms, points, only)| ClientMsg::HistoryQuery {
                    id,
                    from_ms,
                    to_ms,
                    points,
                    findings: id % 2 == 0,
                    only,
                }
            ),
        (int(0..u64::MAX), int(0..u64::MAX))
            .prop_map(|(id, t_ms)| ClientMsg::MomentQuery { id, t_ms }),
    ]
}
