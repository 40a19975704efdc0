//! Sealing, the tiers and reading a range, on a store filled hours at a time.

use super::super::store::{Batch, Store};
use super::super::tables::{ROW_SECONDS, item_key, push_sample};
use shared::series::Scope;

/// 2023-11-14 22:00:00 UTC, the start of an hour (not of a day).
const T0: u64 = 1_700_000_400 - 1_700_000_400 % 3600;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("vramio-seal-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Host CPU (series id 0) at 1 Hz for `secs` from `from`: 10 % but 100 % at `spike`.
fn fill(store: &Store, from: u64, secs: u64, spike: u64) {
    let mut batch = Batch {
        items: vec![(item_key(Scope::Host, ""), 0)],
        ..Batch::default()
    };
    let mut window = None;
    let mut row = Vec::new();
    for t in from..from + secs {
        let w = t - t % ROW_SECONDS;
        if window.is_some_and(|x| x != w) {
            batch
                .rows
                .push((window.unwrap_or(0), std::mem::take(&mut row)));
        }
        window = Some(w);
        let v = if t == spike { 100.0 } else { 10.0 };
        push_sample(&mut row, t * 1000 + 250, &[(0, v)]);
        if batch.rows.len() >= 360 {
            store.commit(&batch).expect("commit");
            batch = Batch::default();
        }
    }
    batch.rows.push((window.unwrap_or(0), row));
    store.commit(&batch).expect("commit");
}

fn cpu(answer: &super::super::Answer) -> &Vec<(u64, f64, f64, f64)> {
    &answer
        .series
        .iter()
        .find(|s| s.scope == Scope::Host && s.metric == "cpu_pct")
        .expect("cpu series")
        .points
}

#[test]
fn a_one_second_spike_is_the_max_of_its_minute_and_its_hour_after_sealing() {
    let dir = temp_dir("spike");
    let (store, aside) = Store::open(&dir).expect("opens");
    assert!(aside.is_none());
    let spike = T0 + 3 * 3600 + 1234;
    // 8 hours, past midnight: the first day's minutes are built from its seconds, the second
    // day's are read from the seconds until it ends.
    fill(&store, T0, 8 * 3600, spike);
    let now = T0 + 8 * 3600;
    let sealed = store.seal(now).expect("seals");
    assert_eq!(sealed.blocks, 8, "one block an hour");
    assert_eq!(
        store.row_count().expect("rows"),
        0,
        "every whole block sealed"
    );

    // One point an hour: the hour of the spike has max 100 and a mean of 3,599 tens and one 100.
    let a = store.read(T0 * 1000, now * 1000, 8).expect("reads");
    assert_eq!(a.step_ms, 3_600_000);
    let pts = cpu(&a);
    assert_eq!(pts.len(), 8, "{pts:?}");
    let hour = pts
        .iter()
        .find(|p| p.0 == (T0 + 3 * 3600) * 1000)
        .expect("the spike's hour");
    assert_eq!((hour.1, hour.3), (10.0, 100.0));
    assert!(
        (hour.2 - (10.0 * 3599.0 + 100.0) / 3600.0).abs() < 1e-9,
        "{hour:?}"
    );
    assert!(pts.iter().filter(|p| p.3 == 100.0).count() == 1);

    // Minutes: read from the minute tier, on the day that is built and on the day still going
    // (the spike's: its hours so far, built hour by hour).
    let a = store
        .read(T0 * 1000, (T0 + 3600) * 1000, 60)
        .expect("reads");
    assert_eq!(a.tiers.len(), 1, "{:?}", a.tiers);
    assert_eq!(a.tiers[0].step_ms, 60_000, "{:?}", a.tiers);
    assert_eq!(cpu(&a).len(), 60);
    let h = (T0 + 3 * 3600) * 1000;
    let a = store.read(h, h + 3_600_000, 60).expect("reads");
    assert_eq!(a.step_ms, 60_000);
    assert!(a.tiers.iter().all(|p| p.step_ms == 60_000), "{:?}", a.tiers);
    let pts = cpu(&a);
    assert_eq!(pts.len(), 60);
    let minute = (spike - spike % 60) * 1000;
    let m = pts
        .iter()
        .find(|p| p.0 == minute)
        .expect("the spike's minute");
    assert_eq!((m.1, m.3), (10.0, 100.0));

    // Each second, from the 1 s tier.
    let a = store
        .read(spike * 1000 - 5_000, spike * 1000 + 5_000, 100)
        .expect("reads");
    assert_eq!(a.step_ms, 1000);
    let pts = cpu(&a);
    assert_eq!(pts.len(), 10);
    assert_eq!(
        pts.iter().find(|p| p.0 == spike * 1000).map(|p| p.2),
        Some(100.0)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unsealed_rows_are_read_and_old_seconds_give_way_to_minutes() {
    let dir = temp_dir("retention");
    let (store, _) = Store::open(&dir).expect("opens");
    fill(&store, T0, 7 * 3600, 0);
    store.seal(T0 + 7 * 3600).expect("seals");
    // A last half window not sealed yet is read from the rows.
    fill(&store, T0 + 7 * 3600, 300, 0);
    let a = store
        .read((T0 + 7 * 3600) * 1000, (T0 + 7 * 3600 + 300) * 1000, 1000)
        .expect("reads");
    assert_eq!(cpu(&a).len(), 300);

    // Three days on, the 1 s blocks of the first hours are gone: the range is read in minutes.
    let later = T0 + 3 * 86_400;
    let sealed = store.seal(later).expect("seals");
    assert!(sealed.dropped > 0, "{sealed:?}");
    let a = store
        .read(T0 * 1000, (T0 + 600) * 1000, 600)
        .expect("reads");
    assert!(a.tiers.iter().all(|p| p.step_ms >= 60_000), "{:?}", a.tiers);
    assert_eq!(cpu(&a).len(), 10, "10 minutes in minutes");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn trimming_drops_the_oldest_seconds_first() {
    let dir = temp_dir("trim");
    let (store, _) = Store::open(&dir).expect("opens");
    fill(&store, T0, 7 * 3600, 0);
    store.seal(T0 + 7 * 3600).expect("seals");
    let dropped = store.trim(0).expect("trims");
    assert!(dropped > 0);
    // The built day's first 2 h are minutes now.
    let a = store
        .read(T0 * 1000, (T0 + 2 * 3600) * 1000, 7200)
        .expect("reads");
    assert!(
        a.tiers.iter().all(|p| p.step_ms > 1000),
        "no seconds left: {:?}",
        a.tiers
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// 1 s blocks of series 0.
fn s1_blocks(store: &Store) -> usize {
    store
        .tier_sizes()
        .expect("sizes")
        .iter()
        .find(|t| t.0 == "s1")
        .map_or(0, |t| t.1 as usize)
}

#[test]
fn seals_a_few_seconds_past_the_hour_keep_no_block_past_its_time() {
    let dir = temp_dir("unaligned");
    let (store, _) = Store::open(&dir).expect("opens");
    // Three days an hour at a time, each sealed 9 s into the next hour, as the writer does.
    for h in 0..72 {
        fill(&store, T0 + h * 3600, 3600, 0);
        store.seal(T0 + (h + 1) * 3600 + 9).expect("seals");
    }
    // Kept: 48 h and the hour being built out of the seconds (and at most a day not yet in
    // minutes), never more.
    let blocks = s1_blocks(&store);
    assert!((48..=50).contains(&blocks), "{blocks} 1 s blocks kept");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_older_hour_imported_keeps_the_rest_of_its_days_minutes() {
    let dir = temp_dir("older");
    let (store, _) = Store::open(&dir).expect("opens");
    // Two whole days (the first day's minutes built), sealed at the end.
    let day0 = T0 - T0 % 86_400;
    fill(&store, day0, 2 * 86_400, 0);
    store.seal(day0 + 2 * 86_400).expect("seals");
    let minutes = |store: &Store| {
        cpu(&store
            .read(day0 * 1000, (day0 + 86_400) * 1000, 1440)
            .expect("reads"))
        .len()
    };
    assert_eq!(minutes(&store), 1440);
    // An hour of that first day imported again: the other 23 hours' minutes stay.
    fill(&store, day0 + 5 * 3600, 3600, day0 + 5 * 3600 + 30);
    store.seal(day0 + 2 * 86_400 + 60).expect("seals");
    assert_eq!(minutes(&store), 1440);
    let a = store
        .read((day0 + 5 * 3600) * 1000, (day0 + 6 * 3600) * 1000, 60)
        .expect("reads");
    assert_eq!(cpu(&a).iter().map(|p| p.3).fold(0.0, f64::max), 100.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn trimming_never_drops_seconds_not_yet_in_minutes() {
    let dir = temp_dir("trim-built");
    let (store, _) = Store::open(&dir).expect("opens");
    // 7 h from 22:00: the first 2 h are in a built day, the next 5 only in seconds.
    fill(&store, T0, 7 * 3600, 0);
    store.seal(T0 + 7 * 3600).expect("seals");
    store.trim(0).expect("trims");
    let a = store
        .read(T0 * 1000, (T0 + 7 * 3600) * 1000, 25_200)
        .expect("reads");
    let pts = cpu(&a);
    assert_eq!(
        pts.iter().filter(|p| p.0 >= (T0 + 2 * 3600) * 1000).count(),
        5 * 3600,
        "every second after the built day is still there"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_days_minutes_so_far_are_built_hour_by_hour_and_give_way_to_the_whole_day() {
    let dir = temp_dir("parts");
    let (store, _) = Store::open(&dir).expect("opens");
    let day0 = T0 - T0 % 86_400;
    // 20 hours of a day, sealed each hour as the writer does, a spike in the 7th.
    let spike = day0 + 6 * 3600 + 99;
    for h in 0..20 {
        fill(&store, day0 + h * 3600, 3600, spike);
        store.seal(day0 + (h + 1) * 3600 + 9).expect("seals");
    }
    // The whole day so far in minutes, from the minute tier alone: no second is rolled up on
    // the read.
    let a = store
        .read(day0 * 1000, (day0 + 20 * 3600) * 1000, 1200)
        .expect("reads");
    assert_eq!(a.step_ms, 60_000);
    assert!(a.tiers.iter().all(|p| p.step_ms == 60_000), "{:?}", a.tiers);
    let pts = cpu(&a).clone();
    assert_eq!(pts.len(), 1200, "every minute of 20 hours");
    let m = (spike - spike % 60) * 1000;
    assert_eq!(
        pts.iter().find(|p| p.0 == m).map(|p| (p.1, p.3)),
        Some((10.0, 100.0)),
        "the spike is its minute's max"
    );
    // The same range in hours: the week's hours so far are built day by day, so today's are
    // rolled up from its minutes.
    let hours = store
        .read(day0 * 1000, (day0 + 20 * 3600) * 1000, 20)
        .expect("reads");
    assert_eq!(hours.step_ms, 3_600_000);
    assert_eq!(cpu(&hours).len(), 20);

    // The rest of the day and two more hours: the whole day is built, its hourly parts gone,
    // and a read gives each minute once, as before.
    for h in 20..26 {
        fill(&store, day0 + h * 3600, 3600, spike);
        store.seal(day0 + (h + 1) * 3600 + 9).expect("seals");
    }
    let a = store
        .read(day0 * 1000, (day0 + 86_400) * 1000, 1440)
        .expect("reads");
    assert!(a.tiers.iter().all(|p| p.step_ms == 60_000), "{:?}", a.tiers);
    let day = cpu(&a).clone();
    assert_eq!(day.len(), 1440, "each minute once");
    assert_eq!(
        &day[..1200],
        &pts[..],
        "the parts held what the whole day holds"
    );
    assert!(
        day.iter().all(|p| (p.1, p.2) == (10.0, 10.0) || p.0 == m),
        "{:?}",
        &day[..3]
    );
    // One point a minute stands for 60 samples: none counted twice.
    let a = store
        .read(day0 * 1000, (day0 + 86_400) * 1000, 1)
        .expect("reads");
    let whole = cpu(&a);
    assert_eq!(whole.len(), 1);
    assert!(
        (whole[0].2 - (10.0 * 86_399.0 + 100.0) / 86_400.0).abs() < 1e-9,
        "{whole:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn seconds_imported_into_an_hour_already_in_minutes_build_its_part_again() {
    let dir = temp_dir("parts-import");
    let (store, _) = Store::open(&dir).expect("opens");
    let day0 = T0 - T0 % 86_400;
    for h in 0..5 {
        fill(&store, day0 + h * 3600, 3600, 0);
        store.seal(day0 + (h + 1) * 3600 + 9).expect("seals");
    }
    // A spike written late into the 2nd hour (an import of a log of it).
    let late = day0 + 3600 + 1800;
    fill(&store, late, 1, late);
    store.seal(day0 + 5 * 3600 + 20).expect("seals");
    let a = store
        .read(day0 * 1000, (day0 + 5 * 3600) * 1000, 300)
        .expect("reads");
    assert!(a.tiers.iter().all(|p| p.step_ms == 60_000), "{:?}", a.tiers);
    let m = (late - late % 60) * 1000;
    assert_eq!(
        cpu(&a).iter().find(|p| p.0 == m).map(|p| p.3),
        Some(100.0),
        "the late second is in its minute"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_late_second_of_one_series_keeps_the_other_series_minutes_of_its_hour() {
    let dir = temp_dir("parts-two");
    let (store, _) = Store::open(&dir).expect("opens");
    let day0 = T0 - T0 % 86_400;
    // Two series (the host's cpu and iowait, ids 0 and 1) for three hours.
    let mut batch = Batch {
        items: vec![(item_key(Scope::Host, ""), 0)],
        ..Batch::default()
    };
    for w in (day0..day0 + 3 * 3600).step_by(ROW_SECONDS as usize) {
        let mut row = Vec::new();
        for t in w..w + ROW_SECONDS {
            push_sample(&mut row, t * 1000, &[(0, 10.0), (1, 5.0)]);
        }
        batch.rows.push((w, row));
    }
    store.commit(&batch).expect("commit");
    store.seal(day0 + 3 * 3600 + 9).expect("seals");
    // A late second of the cpu alone, in the 2nd hour.
    let late = day0 + 3600 + 42;
    fill(&store, late, 1, late);
    store.seal(day0 + 3 * 3600 + 20).expect("seals");
    let a = store
        .read(day0 * 1000, (day0 + 3 * 3600) * 1000, 180)
        .expect("reads");
    assert!(a.tiers.iter().all(|p| p.step_ms == 60_000), "{:?}", a.tiers);
    let iowait = &a
        .series
        .iter()
        .find(|s| s.metric == "iowait_pct")
        .expect("iowait")
        .points;
    assert_eq!(iowait.len(), 180, "every minute of iowait is still there");
    let m = (late - late % 60) * 1000;
    assert_eq!(cpu(&a).iter().find(|p| p.0 == m).map(|p| p.3), Some(100.0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_hour_imported_days_before_a_young_stores_first_day_shows_in_hours() {
    let dir = temp_dir("parts-young");
    let (store, _) = Store::open(&dir).expect("opens");
    let day0 = T0 - T0 % 86_400;
    // A store three hours old: no day closed yet.
    for h in 0..3 {
        fill(&store, day0 + h * 3600, 3600, 0);
        store.seal(day0 + (h + 1) * 3600 + 9).expect("seals");
    }
    // An hour of an older log imported, three days earlier, with a spike.
    let old = day0 - 3 * 86_400 + 5 * 3600;
    fill(&store, old, 3600, old + 77);
    store.seal(day0 + 3 * 3600 + 20).expect("seals");
    // Read in hours: the old hour is there, its spike its max.
    let a = store
        .read((day0 - 3 * 86_400) * 1000, day0 * 1000, 72)
        .expect("reads");
    assert_eq!(a.step_ms, 3_600_000, "{:?}", a.tiers);
    assert_eq!(
        cpu(&a).iter().find(|p| p.0 == old * 1000).map(|p| p.3),
        Some(100.0),
        "{:?}",
        a.tiers
    );
    let _ = std::fs::remove_dir_all(&dir);
}
