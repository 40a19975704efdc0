//! The decision tree drawn as a flowchart (SVG) from `shared::diagnosis::tree()`, with the current
//! diagnosis' path lit: visited questions coloured by their answer, edges taken highlighted, the
//! leaf reached highlighted, the rest dimmed. Hovering a box shows its question, answer and
//! evidence (SVG `<title>`); clicking it (or Enter / Space on a focused box) shows them in the
//! details panel. Geometry and lighting come from `crate::diag`; this file only draws.

use super::evidence::EvidenceList;
use crate::diag::layout::{BOX_H, BOX_W, PlacedBox, PlacedEdge};
use crate::diag::walk::branch_of;
use crate::diag::{
    Branch, Layout, Lit, Slot, answer_attr, layout, local_tz, severity_attr, wire_id,
};
use crate::store::use_store;
use leptos::prelude::*;
use shared::diagnosis::words::{Tz, evidence_text, verdict_text};
use shared::diagnosis::{PathNode, Severity, tree};

/// Height of one text line in a box.
const LINE_H: f64 = 15.0;

/// The hover text of a box: what it asks or concludes, and what the walk found there.
pub fn box_title(b: &PlacedBox, path: &[PathNode], lit: &Lit, tz: Tz) -> String {
    match b.slot {
        Slot::Node(id) => match path.iter().find(|p| p.node == id) {
            Some(p) => {
                let mut s = format!("{}\nAnswer: {}", p.question, answer_attr(p.answer));
                for e in &p.evidence {
                    s.push_str("\n• ");
                    s.push_str(&evidence_text(e, tz));
                }
                s
            }
            None => format!("{}\nNot visited on this walk.", id.question()),
        },
        Slot::Leaf(v) => {
            let reached = if lit.leaf == Some(v) {
                "The walk ends here."
            } else {
                "Not reached."
            };
            format!(
                "{}: {}\n{reached}",
                verdict_text(v),
                b.advice.as_deref().unwrap_or_default()
            )
        }
    }
}

/// The classes of a box: kind, answer or lit state, dimmed when off the path, selected.
pub fn box_class(slot: Slot, lit: &Lit, severity: Option<Severity>, selected: bool) -> String {
    let mut c = match slot {
        Slot::Node(id) => match lit.answer(id) {
            Some(a) => format!("tnode question ans-{}", answer_attr(a)),
            None => "tnode question dim".to_owned(),
        },
        Slot::Leaf(v) if lit.leaf == Some(v) => format!(
            "tnode leaf reached sev-{}",
            severity_attr(severity.unwrap_or(Severity::Unknown))
        ),
        Slot::Leaf(_) => "tnode leaf dim".to_owned(),
    };
    if selected {
        c.push_str(" selected");
    }
    c
}

/// Baseline of text line `i` of `n` in a box at `y`, so the block is centred vertically.
pub fn line_y(y: f64, i: usize, n: usize) -> f64 {
    let n = n.max(1) as f64;
    y + BOX_H / 2.0 - (n - 1.0) * LINE_H / 2.0 + i as f64 * LINE_H + 4.0
}

#[component]
pub fn TreeSection() -> impl IntoView {
    let store = use_store();
    let t = tree();
    let Layout {
        boxes,
        edges,
        width,
        height,
    } = layout(&t);
    let path = Memo::new(move |_| {
        store
            .diagnosis
            .with(|d| d.as_ref().map(|d| d.path.clone()).unwrap_or_default())
    });
    let lit = Memo::new(move |_| path.with(|p| crate::diag::lit(&t, p)));
    let severity = Memo::new(move |_| store.diagnosis.with(|d| d.as_ref().map(|d| d.severity)));
    let picked = RwSignal::new(None::<Slot>);
    // The panel shows the picked box, else the node that decided the verdict.
    let shown = Memo::new(move |_| {
        picked
            .get()
            .or_else(|| path.with(|p| p.last().map(|n| Slot::Node(n.node))))
    });
    let edges = edges
        .into_iter()
        .map(|e| view! { <TreeEdgeLine e lit /> })
        .collect_view();
    let boxes = boxes
        .into_iter()
        .map(|b| view! { <TreeBox b path lit severity shown picked /> })
        .collect_view();
    view! {
        <section class="section" aria-labelledby="tree-h">
            <h2 id="tree-h">"Decision tree"</h2>
            <div class="diagnosis-grid">
                <div class="tree-wrap" data-testid="tree">
                    <svg
                        class="tree"
                        width=width
                        height=height
                        viewBox=format!("0 0 {width} {height}")
                        role="group"
                        aria-label="Decision tree: yes goes right, no goes down"
                    >
                        <defs>
                            <marker id="arrow" class="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse">
                                <path d="M 0 0 L 10 5 L 0 10 z"></path>
                            </marker>
                            <marker id="arrow-lit" class="arrow lit" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse">
                                <path d="M 0 0 L 10 5 L 0 10 z"></path>
                            </marker>
                        </defs>
                        {edges}
                        {boxes}
                    </svg>
                </div>
                <NodeDetails shown path lit />
            </div>
        </section>
    }
}

#[component]
fn TreeEdgeLine(e: PlacedEdge, lit: Memo<Lit>) -> impl IntoView {
    let (from, branch) = (e.from, e.branch);
    let on = move || lit.with(|l| l.took(from, branch));
    let anchor = if branch == Branch::Yes {
        "middle"
    } else {
        "start"
    };
    view! {
        <g
            class=move || if on() { "tedge lit" } else { "tedge" }
            data-testid="tree-edge"
            data-from=wire_id(&from)
            data-branch=branch.label()
            data-lit=move || on().to_string()
        >
            <line
                x1=e.x1
                y1=e.y1
                x2=e.x2
                y2=e.y2
                marker-end=move || if on() { "url(#arrow-lit)" } else { "url(#arrow)" }
            ></line>
            <text class="edge-label" x=e.label_x y=e.label_y text-anchor=anchor>
                {branch.label()}
            </text>
        </g>
    }
}

#[component]
fn TreeBox(
    b: PlacedBox,
    path: Memo<Vec<PathNode>>,
    lit: Memo<Lit>,
    severity: Memo<Option<Severity>>,
    shown: Memo<Option<Slot>>,
    picked: RwSignal<Option<Slot>>,
) -> impl IntoView {
    let slot = b.slot;
    let (x, y) = (b.x, b.y);
    let n = b.lines.len();
    let lines = b
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let class = if matches!(slot, Slot::Leaf(_)) && i == 0 {
                "line head"
            } else {
                "line"
            };
            view! { <tspan class=class x=x + 10.0 y=line_y(y, i, n)>{l.clone()}</tspan> }
        })
        .collect_view();
    let label = b.lines.join(" ");
    let title = {
        let b = b.clone();
        move || path.with(|p| lit.with(|l| box_title(&b, p, l, local_tz())))
    };
    let class = move || lit.with(|l| box_class(slot, l, severity.get(), shown.get() == Some(slot)));
    let is_lit = move || lit.with(|l| l.is_lit(slot)).to_string();
    let (testid, node_attr, verdict_attr) = match slot {
        Slot::Node(id) => ("tree-node", Some(wire_id(&id)), None),
        Slot::Leaf(v) => ("tree-leaf", None, Some(v.id())),
    };
    let answer = move || match slot {
        Slot::Node(id) => lit.with(|l| l.answer(id)).map(answer_attr),
        Slot::Leaf(_) => None,
    };
    // The answer as a small mark in the corner of a visited question.
    let mark = move || {
        answer().map(|a| {
            let text = match a {
                "yes" => "yes",
                "no" => "no",
                _ => "?",
            };
            view! { <text class="answer-mark" x=x + BOX_W - 8.0 y=y + 14.0 text-anchor="end">{text}</text> }
        })
    };
    let choose = move || picked.set(Some(slot));
    view! {
        <g
            class=class
            data-testid=testid
            data-node=node_attr
            data-verdict=verdict_attr
            data-answer=answer
            data-lit=is_lit
            tabindex="0"
            role="button"
            aria-label=label
            on:click=move |_| choose()
            on:keydown=move |ev| {
                if ev.key() == "Enter" || ev.key() == " " {
                    ev.prevent_default();
                    choose();
                }
            }
        >
            <title>{title}</title>
            <rect x=x y=y width=BOX_W height=BOX_H rx="8" ry="8"></rect>
            <text class="box-text">{lines}</text>
            {mark}
        </g>
    }
}

/// The details panel: the shown box's question, answer and evidence.
#[component]
fn NodeDetails(
    shown: Memo<Option<Slot>>,
    path: Memo<Vec<PathNode>>,
    lit: Memo<Lit>,
) -> impl IntoView {
    let body = move || match shown.get() {
        None => view! { <p class="empty">"Waiting for the diagnosis…"</p> }.into_any(),
        Some(Slot::Node(id)) => match path.with(|p| p.iter().find(|n| n.node == id).cloned()) {
            Some(p) => {
                let a = answer_attr(p.answer);
                let next = branch_of(p.answer).label();
                view! {
                    <h3 class="details-q">{p.question.clone()}</h3>
                    <p class="details-a">
                        "Answer: "
                        <span class=format!("answer-badge ans-{a}") data-testid="details-answer">{a}</span>
                        <span class="small">" (follows “" {next} "”)"</span>
                    </p>
                    <EvidenceList evidence=p.evidence />
                }
                .into_any()
            }
            None => view! {
                <h3 class="details-q">{id.question()}</h3>
                <p class="empty">"Not visited on this walk: an earlier question decided."</p>
            }
            .into_any(),
        },
        Some(Slot::Leaf(v)) => {
            let reached = lit.with(|l| l.leaf == Some(v));
            view! {
                <h3 class="details-q">{verdict_text(v)}</h3>
                <p>{shared::diagnosis::leaf_label(v)}</p>
                <p class="small">
                    {if reached {
                        "The walk ends here; the suggestions below say what to change."
                    } else {
                        "Not reached on this walk."
                    }}
                </p>
            }
            .into_any()
        }
    };
    let id = move || {
        shown.get().map(|s| match s {
            Slot::Node(n) => wire_id(&n),
            Slot::Leaf(v) => v.id().to_owned(),
        })
    };
    view! {
        <aside class="tree-details" data-testid="tree-details" data-shown=id aria-live="polite">
            {body}
            <p class="hint small">"Hover or click a box (Enter on a focused box) to see its evidence."</p>
        </aside>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::walk::lit;
    use crate::diag::walk::tests::path;
    use shared::diagnosis::{Answer, NodeId, Verdict};

    #[test]
    fn boxes_are_classed_by_answer_lit_and_dimmed() {
        let p = path(&[(NodeId::GpuMemory, Answer::Yes)]);
        let l = lit(&tree(), &p);
        let sev = Some(Severity::Critical);
        assert_eq!(
            box_class(Slot::Node(NodeId::GpuMemory), &l, sev, false),
            "tnode question ans-yes"
        );
        assert_eq!(
            box_class(Slot::Node(NodeId::DiskSpace), &l, sev, true),
            "tnode question dim selected"
        );
        assert_eq!(
            box_class(Slot::Leaf(Verdict::GpuMemoryPressure), &l, sev, false),
            "tnode leaf reached sev-critical"
        );
        assert_eq!(
            box_class(Slot::Leaf(Verdict::Healthy), &l, sev, false),
            "tnode leaf dim"
        );
    }

    #[test]
    fn titles_give_the_answer_or_say_not_visited() {
        let t = tree();
        let l = layout(&t);
        let p = path(&[(NodeId::GpuMemory, Answer::No)]);
        let lt = lit(&t, &p);
        let root = l.find(Slot::Node(NodeId::GpuMemory)).cloned();
        let starved = l.find(Slot::Node(NodeId::GpuStarved)).cloned();
        let leaf = l.find(Slot::Leaf(Verdict::GpuMemoryPressure)).cloned();
        let title = |b: Option<PlacedBox>| {
            b.map(|b| box_title(&b, &p, &lt, Tz::UTC))
                .unwrap_or_default()
        };
        assert_eq!(title(root), "GPU memory too high?\nAnswer: no");
        assert!(title(starved).ends_with("Not visited on this walk."));
        assert_eq!(
            title(leaf),
            "GPU memory pressure: Reduce batch size / gradient checkpointing\nNot reached."
        );
    }

    #[test]
    fn text_is_centred_in_its_box() {
        assert_eq!(line_y(0.0, 0, 1), BOX_H / 2.0 + 4.0);
        let top = line_y(0.0, 0, 3);
        let bottom = line_y(0.0, 2, 3);
        assert!((top + bottom) / 2.0 - (BOX_H / 2.0 + 4.0) < 1e-9);
        assert!(top > 0.0 && bottom < BOX_H);
    }
}
