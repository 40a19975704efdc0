//! Storage tables: mounts (space and inodes) and block devices (`iostat -x`-style I/O) of the current
//! host's latest frame, each row with its own errors. Reads `Store::latest`, and `Store::diagnosis`
//! for a mount's time-to-full projection.

use super::projection::ProjectionTag;
use super::{Bar, Errors};
use crate::format::{
    DASH, item_errors, mount_kind, opt_bytes, opt_mib_s, opt_ms, opt_num, opt_pct, rotational,
    section_errors,
};
use crate::store::use_store;
use leptos::prelude::*;
use shared::diagnosis::ProjectionKind;
use shared::{BlockDevice, Mount, Source};

/// Names of the items of one list in the latest frame, and the section's errors.
fn items_and_errors(
    source: Source,
    names: fn(&shared::Frame) -> Vec<String>,
) -> (Memo<Vec<String>>, Memo<Vec<String>>) {
    let store = use_store();
    let items = Memo::new(move |_| {
        store
            .latest
            .with(|f| f.as_ref().map(|f| names(f)).unwrap_or_default())
    });
    let errors = Memo::new(move |_| {
        store.latest.with(|f| {
            f.as_ref()
                .map(|f| items.with(|i| section_errors(&f.errors, source, i)))
                .unwrap_or_default()
        })
    });
    (items, errors)
}

/// Errors of `source` about `item` in the latest frame.
fn row_errors(source: Source, item: String) -> Memo<Vec<String>> {
    let store = use_store();
    Memo::new(move |_| {
        store.latest.with(|f| {
            f.as_ref()
                .map(|f| item_errors(&f.errors, source, &item))
                .unwrap_or_default()
        })
    })
}

#[component]
pub fn MountsSection() -> impl IntoView {
    let (points, errors) = items_and_errors(Source::Mounts, |f| {
        f.mounts.iter().map(|m| m.mount_point.clone()).collect()
    });
    view! {
        <section class="section" aria-labelledby="mounts-h">
            <h2 id="mounts-h">"Mounts"</h2>
            <Errors list=errors />
            <div class="table-wrap">
                <table class="mounts">
                    <thead>
                        <tr>
                            <th>"Mount point"</th>
                            <th>"Device"</th>
                            <th>"FS"</th>
                            <th>"Kind"</th>
                            <th class="num">"Used"</th>
                            <th class="num">"Avail"</th>
                            <th class="num">"Total"</th>
                            <th class="bar-col">"Use"</th>
                            <th class="num">"Inodes"</th>
                        </tr>
                    </thead>
                    <tbody>
                        <For
                            each=move || points.get()
                            key=|p| p.clone()
                            children=move |point| view! { <MountRow point /> }
                        />
                    </tbody>
                </table>
            </div>
        </section>
    }
}

#[component]
fn MountRow(point: String) -> impl IntoView {
    let store = use_store();
    let key = point.clone();
    let mount = Memo::new(move |_| {
        store.latest.with(|f| {
            f.as_ref()
                .and_then(|f| f.mounts.iter().find(|m| m.mount_point == key).cloned())
        })
    });
    let errors = row_errors(Source::Mounts, point.clone());
    let attr = point.clone();
    let proj_subject = point.clone();
    let text = move |f: fn(&Mount) -> String| {
        move || mount.with(|m| m.as_ref().map_or_else(|| DASH.to_owned(), f))
    };
    let used_pct = Signal::derive(move || mount.with(|m| m.as_ref().and_then(Mount::used_pct)));
    view! {
        <tr data-testid="mount-row" data-mount-point=attr>
            <td class="mono">
                {point}
                {move || mount.with(|m| m.as_ref().is_some_and(|m| m.read_only == Some(true))).then(|| view! { <span class="tag">"ro"</span> })}
                <Errors list=errors />
            </td>
            <td class="mono">{text(|m| m.device.clone())}</td>
            <td>{text(|m| m.fs_type.clone().unwrap_or_default())}</td>
            <td>{text(|m| mount_kind(m.kind).to_owned())}</td>
            <td class="num">{text(|m| opt_bytes(m.used_bytes))}</td>
            <td class="num">{text(|m| opt_bytes(m.available_bytes))}</td>
            <td class="num">{text(|m| opt_bytes(m.total_bytes))}</td>
            <td class="bar-col">
                <Bar pct=used_pct />
                <span class="bar-label">{move || opt_pct(used_pct.get())}</span>
                <ProjectionTag kind=ProjectionKind::TimeToFullDisk subject=proj_subject />
            </td>
            <td class="num">{text(|m| opt_pct(m.inodes_used_pct()))}</td>
        </tr>
    }
}

#[component]
pub fn BlockSection() -> impl IntoView {
    let (names, errors) = items_and_errors(Source::BlockDevices, |f| {
        f.block_devices.iter().map(|d| d.name.clone()).collect()
    });
    view! {
        <section class="section" aria-labelledby="block-h">
            <h2 id="block-h">"Block devices"</h2>
            <Errors list=errors />
            <div class="table-wrap">
                <table class="block">
                    <thead>
                        <tr>
                            <th>"Device"</th>
                            <th class="num">"Read"</th>
                            <th class="num">"Write"</th>
                            <th class="num">"r/s"</th>
                            <th class="num">"w/s"</th>
                            <th class="num">"Util"</th>
                            <th class="num">"r_await"</th>
                            <th class="num">"w_await"</th>
                            <th class="num">"aqu-sz"</th>
                            <th>"Medium"</th>
                        </tr>
                    </thead>
                    <tbody>
                        <For
                            each=move || names.get()
                            key=|n| n.clone()
                            children=move |name| view! { <BlockRow name /> }
                        />
                    </tbody>
                </table>
            </div>
        </section>
    }
}

#[component]
fn BlockRow(name: String) -> impl IntoView {
    let store = use_store();
    let key = name.clone();
    let dev = Memo::new(move |_| {
        store.latest.with(|f| {
            f.as_ref()
                .and_then(|f| f.block_devices.iter().find(|d| d.name == key).cloned())
        })
    });
    let errors = row_errors(Source::BlockDevices, name.clone());
    let attr = name.clone();
    let text = move |f: fn(&BlockDevice) -> String| {
        move || dev.with(|d| d.as_ref().map_or_else(|| DASH.to_owned(), f))
    };
    let partitions = move || {
        dev.with(|d| {
            d.as_ref()
                .filter(|d| !d.partitions.is_empty())
                .map(|d| d.partitions.join(" "))
        })
    };
    view! {
        <tr data-testid="block-row" data-name=attr>
            <td class="mono">
                {name}
                {move || partitions().map(|p| view! { <div class="small">{p}</div> })}
                <Errors list=errors />
            </td>
            <td class="num">{text(|d| opt_mib_s(d.read_bytes_per_sec))}</td>
            <td class="num">{text(|d| opt_mib_s(d.write_bytes_per_sec))}</td>
            <td class="num">{text(|d| opt_num(d.read_iops))}</td>
            <td class="num">{text(|d| opt_num(d.write_iops))}</td>
            <td class="num">{text(|d| opt_pct(d.util_pct))}</td>
            <td class="num">{text(|d| opt_ms(d.r_await_ms))}</td>
            <td class="num">{text(|d| opt_ms(d.w_await_ms))}</td>
            <td class="num">{text(|d| opt_num(d.avg_queue_size))}</td>
            <td>{text(|d| rotational(d.rotational).to_owned())}</td>
        </tr>
    }
}
