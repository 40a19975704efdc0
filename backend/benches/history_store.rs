//! What an embedded history store costs before it is built (docs/history.md#the-store): redb with
//! column blocks of 232 series (8 GPUs x 8, 16 disks x 6, 20 mounts x 2, the host's 8, 4 jobs x
//! 6), synthetic and noisy, over `VRAMIO_HISTORY_DAYS` days (default 30) filled in seconds, for
//! each block encoding (`pco`, `lz4`, `raw` f32). Prints the bytes of each tier (1 s points kept
//! 48 h, 1 min and 1 h points kept for the whole run, each of those a min, mean and max), the
//! file's size before and after `compact`, and the thread CPU of the two ways of making the
//! newest 10 s durable at 1 Hz:
//!
//! - every series' open block (raw, up to 10 min) rewritten at each 10 s commit;
//! - one row per 10 s batch (every series' 10 new points), sealed into compressed per-series
//!   blocks every 10 min (the sealing printed apart).
//!
//! `cargo bench -p vramio --bench history_store` (`VRAMIO_HISTORY_CODECS=pco` picks codecs).

use redb::{Database, Durability, ReadableTable, TableDefinition};
use std::path::Path;
use std::time::{Duration, Instant};

const SECOND: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("1s");
const MINUTE: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("1min");
const HOUR: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("1h");
const OPEN: TableDefinition<u32, &[u8]> = TableDefinition::new("open");
const BATCH: TableDefinition<u64, &[u8]> = TableDefinition::new("batch");

/// 1 s points are kept this long; a 1 s block holds 10 minutes.
const KEEP_SECONDS: u64 = 48 * 3600;
const BLOCK_SECONDS: u64 = 600;

/// This thread's CPU time.
fn cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// xorshift64: the same synthetic run every time.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// What a series looks like.
#[derive(Clone, Copy)]
enum Kind {
    /// 0 to 100 %, noisy, idle one phase in four.
    Util,
    /// Bytes held, a new level each hour.
    Held,
    /// A slow random walk (temperatures).
    Drift,
    /// Watts, noisy.
    Power,
    /// Bytes per second, bursty, zero 60 % of the time.
    Rate,
    /// Operations per second, as bursty.
    Iops,
    /// 0 to 100 % in tenths, uniform (the worst case).
    Pct,
    /// Bytes used, only growing.
    Used,
    /// Never measured (absent, stored as NaN).
    Absent,
}

fn kinds() -> Vec<Kind> {
    use Kind::*;
    let mut k = Vec::new();
    for _ in 0..8 {
        k.extend([Util, Held, Drift, Power, Util, Util, Rate, Rate]);
    }
    for _ in 0..16 {
        k.extend([Rate, Rate, Iops, Iops, Pct, Pct]);
    }
    for _ in 0..20 {
        k.extend([Used, Pct]);
    }
    k.extend([Util, Held, Pct, Pct, Pct, Drift, Rate, Rate]);
    for _ in 0..4 {
        k.extend([Held, Util, Rate, Rate, Held, Absent]);
    }
    k
}

/// A series' value at second `t`, `s` its state.
fn value(kind: Kind, t: u64, s: &mut f32, r: &mut Rng) -> f32 {
    let idle = (t / 1800) % 4 == 3;
    match kind {
        Kind::Util if idle => 0.0,
        Kind::Util => (85.0 + 15.0 * r.unit()).round(),
        Kind::Held => {
            if t.is_multiple_of(3600) {
                *s = (40.0 + 30.0 * r.unit()) * 1_073_741_824.0;
            }
            (*s / 1_048_576.0).round() * 1_048_576.0
        }
        Kind::Drift => {
            *s = (*s + r.unit() - 0.5).clamp(40.0, 85.0);
            s.round()
        }
        Kind::Power => (300.0 + 400.0 * r.unit()).round(),
        Kind::Rate if r.unit() < 0.6 => 0.0,
        Kind::Rate => (r.unit() * 900e6 / 4096.0).round() * 4096.0,
        Kind::Iops if r.unit() < 0.6 => 0.0,
        Kind::Iops => (r.unit() * 20000.0).round(),
        Kind::Pct => (r.unit() * 1000.0).round() / 10.0,
        Kind::Used => {
            *s += (r.unit() * 4096.0).round() * 4096.0;
            *s
        }
        Kind::Absent => f32::NAN,
    }
}

/// Columns encoded one after another, each led by its length.
fn encode(codec: &str, columns: &[Vec<f32>]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in columns {
        let raw = || c.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        let bytes = match codec {
            "raw" => raw(),
            "lz4" => lz4_flex::compress_prepend_size(&raw()),
            _ => pco::standalone::simple_compress(c, &pco::ChunkConfig::default())
                .expect("pco compresses f32"),
        };
        out.extend((bytes.len() as u32).to_le_bytes());
        out.extend(bytes);
    }
    out
}

/// Min, sum and max of the measured values of one period, and how many.
#[derive(Clone, Copy)]
struct Roll(f32, f32, f32, u32);

impl Roll {
    const EMPTY: Roll = Roll(f32::MAX, 0.0, f32::MIN, 0);

    fn add(&mut self, v: f32) {
        if !v.is_nan() {
            *self = Roll(self.0.min(v), self.1 + v, self.2.max(v), self.3 + 1);
        }
    }

    /// Pushed onto min, mean and max columns (NaN where nothing was measured).
    fn push(self, cols: &mut [Vec<f32>; 3]) {
        let (lo, mean, hi) = match self.3 {
            0 => (f32::NAN, f32::NAN, f32::NAN),
            n => (self.0, self.1 / n as f32, self.2),
        };
        cols[0].push(lo);
        cols[1].push(mean);
        cols[2].push(hi);
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Fills `days` of history; returns the bytes of each tier.
fn fill(db: &Database, codec: &str, days: u64) -> [u64; 3] {
    let kinds = kinds();
    let n = kinds.len();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut state = vec![0f32; n];
    let secs = days * 86400;
    let mut bytes = [0u64; 3];
    let mut seconds: Vec<Vec<f32>> = vec![Vec::new(); n];
    let mut minutes: Vec<[Vec<f32>; 3]> = vec![Default::default(); n];
    let mut hours: Vec<[Vec<f32>; 3]> = vec![Default::default(); n];
    let mut minute = vec![Roll::EMPTY; n];
    let mut hour = vec![Roll::EMPTY; n];
    let begin = || {
        let mut w = db.begin_write().expect("write");
        w.set_durability(Durability::None).expect("durability");
        w
    };
    let mut w = begin();
    for t in 1..=secs {
        for i in 0..n {
            let v = value(kinds[i], t, &mut state[i], &mut rng);
            seconds[i].push(v);
            minute[i].add(v);
            hour[i].add(v);
        }
        if t.is_multiple_of(60) {
            for i in 0..n {
                std::mem::replace(&mut minute[i], Roll::EMPTY).push(&mut minutes[i]);
            }
        }
        if t.is_multiple_of(3600) {
            for i in 0..n {
                std::mem::replace(&mut hour[i], Roll::EMPTY).push(&mut hours[i]);
            }
        }
        if t.is_multiple_of(BLOCK_SECONDS) {
            // Only the last 48 h of 1 s blocks are kept: older ones are not written at all.
            let kept = t + KEEP_SECONDS > secs;
            let mut table = w.open_table(SECOND).expect("table");
            for (i, column) in seconds.iter_mut().enumerate() {
                let column = std::mem::take(column);
                if kept {
                    let block = encode(codec, &[column]);
                    bytes[0] += block.len() as u64;
                    table
                        .insert((i as u32, t), block.as_slice())
                        .expect("insert");
                }
            }
        }
        if t.is_multiple_of(86400) {
            let mut table = w.open_table(MINUTE).expect("table");
            for (i, cols) in minutes.iter_mut().enumerate() {
                let block = encode(codec, &std::mem::take(cols));
                bytes[1] += block.len() as u64;
                table
                    .insert((i as u32, t), block.as_slice())
                    .expect("insert");
            }
            drop(table);
            w.commit().expect("commit");
            w = begin();
        }
        if t.is_multiple_of(7 * 86400) || t == secs {
            let mut table = w.open_table(HOUR).expect("table");
            for (i, cols) in hours.iter_mut().enumerate() {
                if cols[0].is_empty() {
                    continue;
                }
                let block = encode(codec, &std::mem::take(cols));
                bytes[2] += block.len() as u64;
                table
                    .insert((i as u32, t), block.as_slice())
                    .expect("insert");
            }
        }
    }
    w.commit().expect("commit");
    bytes
}

/// The median and mean thread CPU of `rounds` calls of `commit`, in % of a core at one call
/// every `every`.
fn live(rounds: u64, every: Duration, mut commit: impl FnMut(u64)) -> (Duration, f64) {
    let mut costs: Vec<Duration> = (0..rounds)
        .map(|k| {
            let t0 = cpu();
            commit(k);
            cpu() - t0
        })
        .collect();
    let total: Duration = costs.iter().sum();
    costs.sort();
    let pct = total.as_secs_f64() / (every.as_secs_f64() * rounds as f64) * 100.0;
    (costs[costs.len() / 2], pct)
}

fn run(codec: &str, days: u64, path: &Path) {
    let _ = std::fs::remove_file(path);
    let mut db = Database::create(path).expect("create");
    let started = Instant::now();
    let bytes = fill(&db, codec, days);
    let filled = started.elapsed();
    db.begin_write().expect("write").commit().expect("commit");
    let before = std::fs::metadata(path).map_or(0, |m| m.len());
    db.compact().expect("compact");
    let after = std::fs::metadata(path).map_or(0, |m| m.len());
    println!(
        "{codec:<4} {days} d filled in {filled:.1?}: 1 s tier (48 h) {:.1} MB, 1 min {:.1} MB, 1 h {:.2} MB; file {:.1} MB, compacted {:.1} MB",
        mb(bytes[0]),
        mb(bytes[1]),
        mb(bytes[2]),
        mb(before),
        mb(after)
    );

    let kinds = kinds();
    let n = kinds.len();
    let mut rng = Rng(7);
    let mut state = vec![0f32; n];
    let ten = Duration::from_secs(10);
    // Each series' open block rewritten at every 10 s commit (an hour of commits).
    let mut open: Vec<Vec<u8>> = vec![Vec::new(); n];
    let (median, pct) = live(360, ten, |k| {
        let w = db.begin_write().expect("write");
        {
            let mut table = w.open_table(OPEN).expect("table");
            for (i, block) in open.iter_mut().enumerate() {
                if k.is_multiple_of(60) {
                    block.clear();
                }
                for s in 0..10 {
                    block
                        .extend(value(kinds[i], k * 10 + s, &mut state[i], &mut rng).to_le_bytes());
                }
                table.insert(i as u32, block.as_slice()).expect("insert");
            }
        }
        w.commit().expect("commit");
    });
    println!("     open blocks rewritten every 10 s: a commit {median:.1?}, {pct:.4}% of a core");
    // One row per 10 s batch.
    let mut row: Vec<u8> = Vec::new();
    let (median, pct) = live(60, ten, |k| {
        row.clear();
        for (i, kind) in kinds.iter().enumerate() {
            for s in 0..10 {
                row.extend(value(*kind, k * 10 + s, &mut state[i], &mut rng).to_le_bytes());
            }
        }
        let w = db.begin_write().expect("write");
        w.open_table(BATCH)
            .expect("table")
            .insert(k, row.as_slice())
            .expect("insert");
        w.commit().expect("commit");
    });
    // Sealing those 10 minutes: read the 60 rows, one column per series, compressed.
    let (seal, seal_pct) = live(1, Duration::from_secs(600), |_| {
        let w = db.begin_write().expect("write");
        {
            let mut batch = w.open_table(BATCH).expect("table");
            let mut columns: Vec<Vec<f32>> = vec![Vec::with_capacity(600); n];
            for k in 0..60u64 {
                let row = batch.get(k).expect("get").expect("a row");
                for (j, v) in row.value().chunks_exact(4).enumerate() {
                    columns[j / 10].push(f32::from_le_bytes([v[0], v[1], v[2], v[3]]));
                }
            }
            for k in 0..60u64 {
                batch.remove(k).expect("remove");
            }
            let mut table = w.open_table(SECOND).expect("table");
            for (i, column) in columns.into_iter().enumerate() {
                let block = encode(codec, &[column]);
                table
                    .insert((i as u32, u64::MAX), block.as_slice())
                    .expect("insert");
            }
        }
        w.commit().expect("commit");
    });
    println!(
        "     a 10 s batch row: a commit {median:.1?}, {pct:.4}% of a core; sealing 10 min {seal:.1?}, {seal_pct:.4}%; together {:.4}%",
        pct + seal_pct
    );
    drop(db);
    let _ = std::fs::remove_file(path);
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let days: u64 = std::env::var("VRAMIO_HISTORY_DAYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let codecs = std::env::var("VRAMIO_HISTORY_CODECS").unwrap_or_else(|_| "pco,lz4,raw".into());
    let path = std::env::temp_dir().join(format!("vramio-history-{}.redb", std::process::id()));
    println!(
        "history_store: {} series, redb 3, 1 s blocks of {BLOCK_SECONDS} s",
        kinds().len()
    );
    for codec in codecs.split(',') {
        run(codec.trim(), days, &path);
    }
}
