//! What the agent costs while it runs: `vramio serve` at 1 Hz with two fake GPUs (and this host's
//! real disks, mounts and /proc), measured from outside over a steady window with 0, 1 and 10
//! WebSocket viewers that read every message (docs/performance.md#targets: <= 0.05% of one core with one
//! viewer, <= +0.005% per further viewer, <= 15 MB RSS).
//!
//! `cargo bench -p vramio --bench agent_cost` prints one row per viewer count. CPU is the sum of
//! every thread's on-CPU time from `/proc/<pid>/task/*/schedstat` (nanoseconds; `/proc/<pid>/stat`
//! counts 10 ms ticks, too coarse for 0.05%), over `VRAMIO_COST_SECS` seconds per row (default 60).
//! `VRAMIO_COST_VIEWERS=0,1,10` picks the rows; `VRAMIO_COST_BIN=PATH` measures another `vramio`
//! binary the same way (to compare with an older build); `VRAMIO_COST_HISTORY=on|off|/DIR` runs it
//! with its history in a temp dir, with `--no-history`, or on the history in `/DIR` (a 30-day
//! store the history_cost bench filled and kept). The figures are the process' own; the viewers run
//! in this bench process and are not counted.
//!
//! The same binary measures up to a fifth apart from one server process to the next on the 2-core
//! VM (where its threads land, what shares the host), so the rows are taken `VRAMIO_COST_ROUNDS`
//! times (default 3), each on a fresh server, and the summary gives the median and range. First
//! the bench prints the floor: what the kernel alone charges for the work one tick cannot skip
//! (a 1 s sleep's wake, one read of each `/proc` and `/sys` file the sampler reads on most ticks, one frame-sized loopback
//! TCP send), timed on a thread of its own, a second apart, as cold as the sampler finds them.

use futures_util::StreamExt;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[path = "../tests/common/fake_nvml.rs"]
mod fake_nvml;

/// Time for start-up costs (NVML init, first sysfs walks, page-cache misses) to pass. The hub's
/// history ring still fills for 15 minutes after (a page fault every second or two, as the heap
/// grows): `VRAMIO_COST_WARMUP=960` (seconds) measures with it full, the steady state.
const WARM_UP: Duration = Duration::from_secs(5);
/// After viewers connect: their backfill and the first diagnosis are not steady state.
const SETTLE: Duration = Duration::from_secs(3);

fn two_gpu_script(pid: u32) -> String {
    let gpu = |i: u32, used: u32, util: u32| {
        format!(
            r#"{{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0000000{i}-0000-0000-0000-000000000000",
            "memory_total_mib": 81559, "repeat": true, "lost_at_s": null, "slow_ms": 0,
            "timeline": [{{"at_s": 0, "memory_used_mib": {used}, "util_gpu": {util}, "util_mem": 40,
              "temperature_c": 60, "power_w": 500, "processes": [{{"pid": {pid}, "used_mib": {used}}}]}},
              {{"at_s": 30, "memory_used_mib": {used2}, "util_gpu": {util}}}]}}"#,
            used2 = used + 2000
        )
    };
    format!(
        r#"{{"driver_version": "580.00", "devices": [{}, {}]}}"#,
        gpu(0, 30_000, 90),
        gpu(1, 50_000, 35)
    )
}

/// On-CPU nanoseconds of every live thread of `pid`.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// On-CPU nanoseconds of `pid`'s live threads, summed by thread name (`comm`).
fn cpu_ns_by_thread(pid: u32) -> std::collections::BTreeMap<String, u64> {
    let mut by = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return by;
    };
    for t in tasks.flatten() {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let ns = std::fs::read_to_string(t.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        *by.entry(name.trim().to_owned()).or_insert(0) += ns;
    }
    by
}

/// `utime + stime` of `pid` in clock ticks (dead threads included).
fn cpu_ticks(pid: u32) -> u64 {
    stat_fields(pid, &[11, 12]).iter().sum()
}

/// Minor page faults of `pid` so far (a heap that grows faults its new pages in).
fn minor_faults(pid: u32) -> u64 {
    stat_fields(pid, &[7])[0]
}

/// Fields of `/proc/<pid>/stat` by index after `comm` (field 3 is index 0, so `minflt` (10) is 7,
/// `utime` (14) and `stime` (15) are 11 and 12); 0 where unreadable.
fn stat_fields(pid: u32, at: &[usize]) -> Vec<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_comm = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    at.iter()
        .map(|&i| fields.get(i).and_then(|f| f.parse().ok()).unwrap_or(0))
        .collect()
}

/// `VmRSS` and `VmHWM` of `pid` in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let get = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (get("VmRSS:"), get("VmHWM:"))
}

struct Server {
    child: Child,
    port: u16,
    _script: fake_nvml::ScriptFile,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `VRAMIO_COST_HISTORY=off` measures `--no-history`, `on` a history in a temp dir (a row with
/// it, a row without: docs/performance.md#history); unset passes neither (older builds).
fn history_flags() -> Vec<String> {
    match std::env::var("VRAMIO_COST_HISTORY").as_deref() {
        Ok("off") => vec!["--no-history".into()],
        Ok("on") => {
            let dir =
                std::env::temp_dir().join(format!("vramio-cost-history-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            vec!["--history-dir".into(), dir.to_string_lossy().into_owned()]
        }
        // A directory: a store filled beforehand (`VRAMIO_HISTORY_KEEP` of the history_cost
        // bench), to see whether the agent's RSS grows with the history's length.
        Ok(dir) if dir.starts_with('/') => vec!["--history-dir".into(), dir.to_owned()],
        _ => Vec::new(),
    }
}

fn start_server() -> Server {
    let script = fake_nvml::ScriptFile::new();
    std::fs::write(script.path(), two_gpu_script(std::process::id())).expect("write script");
    let lib: PathBuf = fake_nvml::fake_nvml_path();
    // `VRAMIO_COST_BIN` measures another build (an older one, to compare) the same way.
    let bin = std::env::var_os("VRAMIO_COST_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_vramio")),
        PathBuf::from,
    );
    let mut child = Command::new(bin)
        // Auth costs only at the handshake; --no-auth keeps the bench able to measure old builds.
        .args([
            "serve",
            "--no-auth",
            "--port",
            "0",
            "--interval",
            "1s",
            "--nvml-lib",
        ])
        .arg(&lib)
        .args(history_flags())
        .env(fake_nvml::SCRIPT_ENV, script.path())
        .env("VRAMIO_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start vramio serve");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let port = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            let rest = l.split_once("serving on http://")?.1;
            rest.split_once(':')?.1.trim_end_matches('/').parse().ok()
        })
        .expect("vramio prints the URL it serves");
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines.by_ref() {});
    Server {
        child,
        port,
        _script: script,
    }
}

/// Opens `n` viewers that read every message until dropped; returns their message counter.
async fn open_viewers(port: u16, n: usize) -> (Vec<tokio::task::JoinHandle<()>>, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..n {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/ws"))
            .await
            .expect("viewer connects");
        let count = count.clone();
        tasks.push(tokio::spawn(async move {
            let (_sink, mut stream) = ws.split();
            while let Some(Ok(_)) = stream.next().await {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    (tasks, count)
}

struct Row {
    viewers: usize,
    pct: f64,
    ticks_pct: f64,
    rss_kib: u64,
    faults_per_s: f64,
    messages_per_viewer_s: f64,
    /// `(thread name, % of one core)`.
    threads: Vec<(String, f64)>,
}

fn measure(server: &Server, viewers: usize, secs: u64, rt: &tokio::runtime::Runtime) -> Row {
    let pid = server.child.id();
    let (tasks, count) = rt.block_on(open_viewers(server.port, viewers));
    std::thread::sleep(SETTLE);
    let threads0 = cpu_ns_by_thread(pid);
    let faults0 = minor_faults(pid);
    let (ns0, ticks0, m0, t0) = (
        cpu_ns(pid),
        cpu_ticks(pid),
        count.load(Ordering::Relaxed),
        Instant::now(),
    );
    std::thread::sleep(Duration::from_secs(secs));
    let (ns1, ticks1, m1, wall) = (
        cpu_ns(pid),
        cpu_ticks(pid),
        count.load(Ordering::Relaxed),
        t0.elapsed(),
    );
    let faults1 = minor_faults(pid);
    let threads: Vec<(String, f64)> = cpu_ns_by_thread(pid)
        .into_iter()
        .map(|(name, ns)| {
            let was = threads0.get(&name).copied().unwrap_or(0);
            let pct = ns.saturating_sub(was) as f64 / 1e9 / wall.as_secs_f64() * 100.0;
            (name, pct)
        })
        .filter(|(_, pct)| *pct > 0.0)
        .collect();
    for t in tasks {
        t.abort();
    }
    // USER_HZ, the unit of utime/stime: 100 on every Linux architecture vramio runs on.
    let hz = 100.0;
    let wall_s = wall.as_secs_f64();
    Row {
        viewers,
        pct: ns1.saturating_sub(ns0) as f64 / 1e9 / wall_s * 100.0,
        ticks_pct: ticks1.saturating_sub(ticks0) as f64 / hz / wall_s * 100.0,
        rss_kib: rss_kib(pid).0,
        faults_per_s: faults1.saturating_sub(faults0) as f64 / wall_s,
        threads,
        messages_per_viewer_s: if viewers == 0 {
            0.0
        } else {
            m1.saturating_sub(m0) as f64 / viewers as f64 / wall_s
        },
    }
}

/// The kernel's share of one tick, timed on this thread: a 1 s sleep's wake, one `pread` of each
/// `/proc` file the sampler reads, and one 2.7 KB send over loopback TCP to a reader blocked on it
/// (a viewer's frame). Microseconds of this thread's CPU each, medians of `n` ticks a second apart.
fn floor(n: usize) -> Vec<(String, f64)> {
    use std::io::{Read, Write};
    use std::os::unix::fs::FileExt;
    let thread_ns = || {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback listener");
    let mut reader =
        std::net::TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
    let (mut writer, _) = listener.accept().expect("accept");
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        while reader.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    // What the sampler reads on most ticks: each disk's own `stat` (`/proc/diskstats` only every
    // 10 s) and the host's files.
    let disks: Vec<PathBuf> = std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !["loop", "zram", "ram"].iter().any(|p| name.starts_with(p))
        })
        .map(|e| e.path().join("stat"))
        .collect();
    let host = [
        "/proc/stat",
        "/proc/meminfo",
        "/proc/pressure/io",
        "/proc/pressure/memory",
    ];
    let files: Vec<std::fs::File> = disks
        .iter()
        .map(PathBuf::as_path)
        .chain(host.iter().map(std::path::Path::new))
        .filter_map(|p| std::fs::File::open(p).ok())
        .collect();
    let frame = vec![b'x'; 2750];
    let mut buf = vec![0u8; 16384];
    let mut taken: [Vec<f64>; 3] = Default::default();
    // Two ticks to settle, then `n` measured.
    for i in 0..n + 2 {
        let t0 = thread_ns();
        std::thread::sleep(Duration::from_secs(1));
        let t1 = thread_ns();
        for f in &files {
            let _ = f.read_at(&mut buf, 0);
        }
        let t2 = thread_ns();
        writer.write_all(&frame).expect("loopback send");
        let t3 = thread_ns();
        if i >= 2 {
            for (k, (a, b)) in [(t0, t1), (t1, t2), (t2, t3)].into_iter().enumerate() {
                taken[k].push(b.saturating_sub(a) as f64 / 1e3);
            }
        }
    }
    let [sleep, reads, send] = taken.map(|mut v| median(&mut v));
    vec![
        ("1 s sleep and wake".to_owned(), sleep),
        (format!("{} /proc and /sys reads", files.len()), reads),
        ("frame send, loopback".to_owned(), send),
    ]
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn print_rows(rows: &[Row]) {
    println!(
        "viewers  cpu % of one core  (from 10 ms ticks)  rss MiB  minor faults/s  msgs/viewer/s"
    );
    for r in rows {
        println!(
            "{:>7}  {:>17.4}  {:>18.3}  {:>7.1}  {:>14.2}  {:>13.2}",
            r.viewers,
            r.pct,
            r.ticks_pct,
            r.rss_kib as f64 / 1024.0,
            r.faults_per_s,
            r.messages_per_viewer_s
        );
    }
    // Where it goes: each thread's share (threads of one name summed), row by row.
    for r in rows {
        let parts: Vec<String> = r
            .threads
            .iter()
            .map(|(name, pct)| format!("{name} {pct:.4}"))
            .collect();
        println!("  {} viewer(s), by thread: {}", r.viewers, parts.join(", "));
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing and expects a quick run.
    let benching = std::env::args().any(|a| a == "--bench");
    let var = |name: &str| std::env::var(name).ok();
    let secs: u64 = var("VRAMIO_COST_SECS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(if benching { 60 } else { 2 });
    let rounds: usize = var("VRAMIO_COST_ROUNDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(if benching { 3 } else { 1 })
        .max(1);
    let warm_up = match var("VRAMIO_COST_WARMUP").and_then(|s| s.parse().ok()) {
        Some(secs) => Duration::from_secs(secs),
        None if benching => WARM_UP,
        None => SETTLE,
    };
    let viewers: Vec<usize> = var("VRAMIO_COST_VIEWERS")
        .map(|s| s.split(',').filter_map(|v| v.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![0, 1, 10]);
    // Viewers run on their own worker thread while the main thread sleeps through the window.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "agent cost: vramio serve, 1 Hz, 2 fake GPUs, this host's disks; {secs} s per row, \
         {rounds} round(s), each on a fresh server warmed up for {} s",
        warm_up.as_secs()
    );
    if benching {
        let parts = floor(10);
        let total: f64 = parts.iter().map(|(_, us)| us).sum();
        let shown: Vec<String> = parts
            .iter()
            .map(|(what, us)| format!("{what} {us:.1} us"))
            .collect();
        // At 1 Hz, 1 us of CPU a second is 0.0001% of a core.
        println!(
            "floor, the kernel's part of one tick with one viewer: {} = {total:.0} us, {:.4} % of a core",
            shown.join(", "),
            total / 1e4
        );
    }
    let mut all: Vec<Vec<Row>> = Vec::new();
    for round in 1..=rounds {
        let server = start_server();
        std::thread::sleep(warm_up);
        let rows: Vec<Row> = viewers
            .iter()
            .map(|&n| measure(&server, n, secs, &rt))
            .collect();
        drop(server);
        println!("round {round}:");
        print_rows(&rows);
        if rows
            .iter()
            .any(|r| r.viewers > 0 && r.messages_per_viewer_s < 0.5)
        {
            eprintln!("warning: viewers received almost nothing: is the server streaming?");
        }
        all.push(rows);
    }
    // Per viewer count, the median over rounds (and the range).
    let medians: Vec<(usize, f64)> = viewers
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let mut pcts: Vec<f64> = all.iter().map(|rows| rows[i].pct).collect();
            let (lo, hi) = pcts
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), &p| (lo.min(p), hi.max(p)));
            let med = median(&mut pcts);
            println!(
                "{n:>3} viewer(s): median {med:.4} % of a core over {rounds} round(s) (range {lo:.4}-{hi:.4})"
            );
            (n, med)
        })
        .collect();
    let at = |n: usize| medians.iter().find(|(v, _)| *v == n).map(|(_, p)| *p);
    if let (Some(base), Some(one)) = (at(0), at(1)) {
        println!("first viewer adds {:+.4} % of a core (medians)", one - base);
    }
    if let (Some(one), Some(ten)) = (at(1), at(10)) {
        println!(
            "each viewer after the first adds {:+.5} % of a core (medians)",
            (ten - one) / 9.0
        );
    }
}
