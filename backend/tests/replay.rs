//! `vramio replay`: a recording made by `vramio record` served again, behind the same token as
//! `serve`, its frames played in order at the chosen speed with their own timestamps, and
//! diagnosed as they arrive.

#[path = "common/fake_nvml.rs"]
mod fake_nvml;
#[path = "common/vramio_bin.rs"]
mod vramio_bin;

use shared::Frame;
use std::time::{Duration, Instant};
use vramio_bin::{Server, TempDir, http};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_replays_in_order_behind_the_token() {
    let dir = TempDir::new("replay");
    let script = dir.join("gpu.json");
    std::fs::write(&script, vramio_bin::one_gpu_script(std::process::id())).expect("script");
    let rec = dir.join("run.ndjson");
    let rec_s = rec.to_string_lossy().into_owned();
    let r = std::process::Command::new(env!("CARGO_BIN_EXE_vramio"))
        .args([
            "record",
            "--out",
            &rec_s,
            "--duration",
            "2s",
            "--interval",
            "250ms",
        ])
        .arg("--nvml-lib")
        .arg(fake_nvml::fake_nvml_path())
        .env(fake_nvml::SCRIPT_ENV, &script)
        .output()
        .expect("vramio record");
    assert!(r.status.success(), "{r:?}");
    let recorded: Vec<Frame> = std::fs::read_to_string(&rec)
        .expect("recording")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a frame"))
        .collect();
    assert!(recorded.len() >= 6, "{}", recorded.len());

    let s = Server::start_command(
        "replay",
        &dir.join("state"),
        &script,
        &[&rec.to_string_lossy(), "--port", "0", "--speed", "4"],
    );
    let host = [("host", s.authority())];
    let none = http(s.authority(), "GET", "/api/snapshot", &host, "").await;
    assert_eq!(none.status, 401, "the same auth as serve");

    let bearer = format!("Bearer {}", s.token());
    let headers = [("host", s.authority()), ("authorization", bearer.as_str())];
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen: Vec<u64> = Vec::new();
    loop {
        let snap = http(s.authority(), "GET", "/api/snapshot", &headers, "").await;
        if snap.status == 200 {
            let v = snap.json();
            if let Some(t) = v["frame"]["t_ms"].as_u64()
                && seen.last() != Some(&t)
            {
                assert_eq!(v["frame"]["host"], recorded[0].host.as_str());
                seen.push(t);
            }
            if seen.last() == recorded.last().map(|f| &f.t_ms) {
                assert!(v["diagnosis"]["verdict"].is_string(), "{v}");
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the replay did not reach its end: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The time bar's facts: the span, the position, the speed and the verdict timeline.
    let deadline = Instant::now() + Duration::from_secs(20);
    let info = loop {
        let r = http(s.authority(), "GET", "/api/replay", &headers, "").await;
        assert_eq!(r.status, 200, "{}", r.text());
        let info: shared::replay::ReplayInfo = serde_json::from_slice(&r.body).expect("info");
        if info.timeline.is_some() {
            break info;
        }
        assert!(Instant::now() < deadline, "no timeline: {info:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let first = recorded.first().map(|f| f.t_ms);
    let last = recorded.last().map(|f| f.t_ms);
    assert_eq!((Some(info.start_ms), Some(info.end_ms)), (first, last));
    assert_eq!(info.frames, recorded.len());
    assert_eq!(info.speed, Some(4.0));
    assert_eq!(info.position_ms, last, "played to the end");
    let timeline = info.timeline.expect("timeline");
    assert_eq!(timeline.first().map(|t| t.from_ms), first);
    assert_eq!(timeline.last().map(|t| t.to_ms), last);

    // The admin steers it: a bad speed is refused, and the answer is the new state.
    let post_headers = [
        ("host", s.authority()),
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    let bad = http(
        s.authority(),
        "POST",
        "/api/replay",
        &post_headers,
        r#"{"speed":"fast"}"#,
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.text());
    // A speed so slow that a frame's wait overflows a Duration (it killed the player thread).
    let crawl = http(
        s.authority(),
        "POST",
        "/api/replay",
        &post_headers,
        r#"{"speed":"1e-20"}"#,
    )
    .await;
    assert_eq!(crawl.status, 400, "{}", crawl.text());
    assert!(crawl.text().contains("at least"), "{}", crawl.text());
    let paused = http(
        s.authority(),
        "POST",
        "/api/replay",
        &post_headers,
        r#"{"playing":false,"speed":"60x"}"#,
    )
    .await;
    assert_eq!(paused.status, 200, "{}", paused.text());
    let paused: shared::replay::ReplayInfo = serde_json::from_slice(&paused.body).expect("info");
    assert!(!paused.playing);
    assert_eq!(paused.speed, Some(60.0));
    // Jumps: to a moment (the frame at or before it), past the end (the last frame), and bad
    // ones refused with the reason.
    let mid = recorded[recorded.len() / 2].t_ms;
    for (body, want) in [
        (format!(r#"{{"seek_ms":{}}}"#, mid + 1), Some(mid)),
        (format!(r#"{{"seek_ms":{}}}"#, u64::MAX), last),
        (r#"{"seek_ms":0}"#.to_owned(), first),
    ] {
        let r = http(s.authority(), "POST", "/api/replay", &post_headers, &body).await;
        assert_eq!(r.status, 200, "{body}: {}", r.text());
        let info: shared::replay::ReplayInfo = serde_json::from_slice(&r.body).expect("info");
        assert_eq!(info.position_ms, want, "{body}");
        assert!(!info.playing, "a jump keeps the pause");
    }
    for bad in [
        r#"{"seek_ms":-1}"#,
        r#"{"seek_ms":"noon"}"#,
        r#"{"seek":1}"#,
        r#"{"seek_ms":1e400}"#,
    ] {
        let r = http(s.authority(), "POST", "/api/replay", &post_headers, bad).await;
        assert!(
            (400..500).contains(&r.status),
            "{bad}: {} {}",
            r.status,
            r.text()
        );
    }
    let none = http(
        s.authority(),
        "POST",
        "/api/replay",
        &host,
        r#"{"playing":true}"#,
    )
    .await;
    assert_eq!(none.status, 401);

    // The recording's own times, in its order.
    let times: Vec<u64> = recorded.iter().map(|f| f.t_ms).collect();
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert!(
        seen.iter().all(|t| times.contains(t)),
        "{seen:?} vs {times:?}"
    );
    assert!(
        seen.len() >= 2,
        "frames arrived over time, not at once: {seen:?}"
    );
}
