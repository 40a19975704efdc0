//! Importing logs (issue 10: 1 million CSV rows in <= 2 s): an nvidia-smi `--query-gpu` CSV of
//! 8 GPUs at 1 Hz written to a temp file, imported into frames through the same code as
//! `vramio import` (detection, the streaming reader, the merge, the conversion), and the peak
//! RSS, which stays flat however long the log (`VRAMIO_IMPORT_ROWS`, default 1,000,000; 10
//! million rows is about 1 GB).
//!
//! `cargo bench -p vramio --bench import`.

use std::io::Write;
use std::time::Instant;
use vramio::ingest::{ImportOptions, import};

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let rows: u64 = std::env::var("VRAMIO_IMPORT_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::temp_dir().join(format!("vramio-bench-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("gpu.csv");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    writeln!(
        out,
        "timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%], utilization.memory [%], temperature.gpu, power.draw [W]"
    )
    .expect("write");
    let gpus = 8;
    for r in 0..rows {
        let (sample, gpu) = (r / gpus, r % gpus);
        let (h, m, s) = ((sample / 3600) % 24, (sample / 60) % 60, sample % 60);
        let day = 1 + (sample / 86_400) % 28;
        writeln!(
            out,
            "2024/03/{day:02} {h:02}:{m:02}:{s:02}.{:03}, {gpu}, GPU-{gpu:08}-aaaa-bbbb-cccc-dddddddddddd, NVIDIA H100 80GB HBM3, 81559 MiB, {} MiB, {} %, {} %, {}, {}.{:02} W",
            gpu * 2,
            40_000 + (r * 7) % 30_000,
            (r * 13) % 100,
            (r * 3) % 60,
            40 + r % 30,
            300 + r % 400,
            r % 100
        )
        .expect("write");
    }
    out.flush().expect("flush");
    drop(out);
    let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    let before = peak_rss_kib();
    let opts = ImportOptions {
        files: vec![path.clone()],
        format: None,
        step_ms: 1000,
        host: "bench".into(),
        tuning: Default::default(),
    };
    let start = Instant::now();
    let mut frames = 0u64;
    let mut gpu_rows = 0u64;
    let notes = import(&opts, |f| {
        frames += 1;
        gpu_rows += f.gpus.len() as u64;
    })
    .expect("imports");
    let took = start.elapsed();
    println!(
        "{rows} rows ({:.1} MB) -> {frames} frames, {gpu_rows} GPU readings in {:.2} s ({:.0} rows/s); peak RSS {} MiB before, {} MiB after; {} notes",
        bytes as f64 / 1e6,
        took.as_secs_f64(),
        rows as f64 / took.as_secs_f64(),
        before / 1024,
        peak_rss_kib() / 1024,
        notes.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
