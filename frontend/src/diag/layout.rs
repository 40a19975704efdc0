//! The flowchart's geometry, computed from `shared::diagnosis::tree()`: "yes" goes right, "no" goes
//! down, so the spine (GPU memory -> starved -> disk space -> host RAM -> healthy) is the left
//! column and each branch opens to its right. Every edge is a straight line.
//!
//! Placement is the classic tidy layout for such trees: a node at (column, row) puts its yes
//! subtree at (column + 1, row) and its no subtree below the rows the yes subtree used.

use shared::diagnosis::words::verdict_text;
use shared::diagnosis::{NodeId, TreeEdge, TreeNode, Verdict};

/// Width of every box, in SVG user units (px at scale 1).
pub const BOX_W: f64 = 216.0;
/// Height of every box: room for three lines of text.
pub const BOX_H: f64 = 62.0;
/// Horizontal room between columns (holds the "yes" label and the arrow).
pub const COL_GAP: f64 = 52.0;
/// Vertical room between rows (holds the "no" label and the arrow).
pub const ROW_GAP: f64 = 24.0;
/// Margin around the drawing.
pub const PAD: f64 = 6.0;
/// Characters per text line in a box at the stylesheet's 12 px font.
pub const LINE_CHARS: usize = 32;
/// Text lines a box holds.
pub const MAX_LINES: usize = 3;

/// What a box stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    Node(NodeId),
    Leaf(Verdict),
}

/// Which answer an edge stands for (`unknown` follows `no`, as in the walk).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Branch {
    Yes,
    No,
}

impl Branch {
    pub fn label(self) -> &'static str {
        match self {
            Branch::Yes => "yes",
            Branch::No => "no",
        }
    }
}

/// One box: where it is and the lines it shows (for a leaf, the verdict then its advice).
#[derive(Clone, Debug, PartialEq)]
pub struct PlacedBox {
    pub slot: Slot,
    pub col: u32,
    pub row: u32,
    pub x: f64,
    pub y: f64,
    pub lines: Vec<String>,
    /// The flowchart's advice, for leaves.
    pub advice: Option<String>,
}

/// One arrow from a question to what its answer leads to, with where its label goes.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacedEdge {
    pub from: NodeId,
    pub branch: Branch,
    pub to: Slot,
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
    pub label_x: f64,
    pub label_y: f64,
}

/// The whole drawing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    pub boxes: Vec<PlacedBox>,
    pub edges: Vec<PlacedEdge>,
    pub width: f64,
    pub height: f64,
}

impl Layout {
    pub fn find(&self, slot: Slot) -> Option<&PlacedBox> {
        self.boxes.iter().find(|b| b.slot == slot)
    }
}

/// Splits `text` into lines of at most `width` characters at spaces (a longer word gets a line
/// of its own), keeping at most `max_lines` and ending a cut text with "…".
pub fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let needed = if line.is_empty() {
            word.chars().count()
        } else {
            line.chars().count() + 1 + word.chars().count()
        };
        if needed > width && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    if lines.len() > max_lines && max_lines > 0 {
        lines.truncate(max_lines);
        if let Some(last) = lines.last_mut() {
            let keep = width.saturating_sub(1);
            if last.chars().count() > keep {
                *last = last.chars().take(keep).collect();
            }
            last.push('…');
        }
    }
    lines
}

fn x_of(col: u32) -> f64 {
    PAD + f64::from(col) * (BOX_W + COL_GAP)
}

fn y_of(row: u32) -> f64 {
    PAD + f64::from(row) * (BOX_H + ROW_GAP)
}

struct Placer<'a> {
    tree: &'a [TreeNode],
    out: Layout,
}

impl Placer<'_> {
    /// Places `edge`'s target at (col, row); returns the rows it used. A question already placed
    /// is not placed again, so a cyclic table (the tree is acyclic; a bad edit must not hang the
    /// page) still ends.
    fn place(&mut self, edge: &TreeEdge, col: u32, row: u32) -> u32 {
        match edge {
            TreeEdge::Leaf { verdict, label } => {
                let mut lines = vec![verdict_text(*verdict).to_owned()];
                lines.extend(wrap(label, LINE_CHARS, MAX_LINES - 1));
                self.out.boxes.push(PlacedBox {
                    slot: Slot::Leaf(*verdict),
                    col,
                    row,
                    x: x_of(col),
                    y: y_of(row),
                    lines,
                    advice: Some(label.clone()),
                });
                1
            }
            TreeEdge::Node { node } => {
                let Some(n) = self.tree.iter().find(|n| n.id == *node) else {
                    return 0;
                };
                if self.out.find(Slot::Node(n.id)).is_some() {
                    return 0;
                }
                self.out.boxes.push(PlacedBox {
                    slot: Slot::Node(n.id),
                    col,
                    row,
                    x: x_of(col),
                    y: y_of(row),
                    lines: wrap(&n.question, LINE_CHARS, MAX_LINES),
                    advice: None,
                });
                let yes_rows = self.place(&n.yes, col + 1, row).max(1);
                let no_rows = self.place(&n.no, col, row + yes_rows);
                self.edge(n.id, Branch::Yes, &n.yes);
                self.edge(n.id, Branch::No, &n.no);
                yes_rows + no_rows
            }
        }
    }

    fn edge(&mut self, from: NodeId, branch: Branch, to: &TreeEdge) {
        let to = match to {
            TreeEdge::Node { node } => Slot::Node(*node),
            TreeEdge::Leaf { verdict, .. } => Slot::Leaf(*verdict),
        };
        let (Some(a), Some(b)) = (self.out.find(Slot::Node(from)), self.out.find(to)) else {
            return;
        };
        let edge = match branch {
            Branch::Yes => PlacedEdge {
                from,
                branch,
                to,
                x1: a.x + BOX_W,
                y1: a.y + BOX_H / 2.0,
                x2: b.x,
                y2: b.y + BOX_H / 2.0,
                label_x: a.x + BOX_W + COL_GAP / 2.0,
                label_y: a.y + BOX_H / 2.0 - 7.0,
            },
            Branch::No => PlacedEdge {
                from,
                branch,
                to,
                x1: a.x + BOX_W / 2.0,
                y1: a.y + BOX_H,
                x2: b.x + BOX_W / 2.0,
                y2: b.y,
                label_x: a.x + BOX_W / 2.0 + 6.0,
                label_y: a.y + BOX_H + ROW_GAP / 2.0 + 4.0,
            },
        };
        self.out.edges.push(edge);
    }
}

/// Lays out `tree` (root first) as described in the module docs.
pub fn layout(tree: &[TreeNode]) -> Layout {
    let Some(root) = tree.first() else {
        return Layout::default();
    };
    let mut p = Placer {
        tree,
        out: Layout::default(),
    };
    p.place(&TreeEdge::Node { node: root.id }, 0, 0);
    let cols = p.out.boxes.iter().map(|b| b.col + 1).max().unwrap_or(0);
    let rows = p.out.boxes.iter().map(|b| b.row + 1).max().unwrap_or(0);
    p.out.width = 2.0 * PAD + f64::from(cols) * BOX_W + f64::from(cols.saturating_sub(1)) * COL_GAP;
    p.out.height =
        2.0 * PAD + f64::from(rows) * BOX_H + f64::from(rows.saturating_sub(1)) * ROW_GAP;
    p.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::diagnosis::tree;

    fn at(l: &Layout, slot: Slot) -> (u32, u32) {
        l.find(slot).map(|b| (b.col, b.row)).unwrap_or((99, 99))
    }

    #[test]
    fn the_spine_is_the_left_column_and_yes_opens_to_the_right() {
        let l = layout(&tree());
        assert_eq!(at(&l, Slot::Node(NodeId::GpuMemory)), (0, 0));
        assert_eq!(at(&l, Slot::Leaf(Verdict::GpuMemoryPressure)), (1, 0));
        assert_eq!(at(&l, Slot::Node(NodeId::GpuStarved)), (0, 1));
        assert_eq!(at(&l, Slot::Node(NodeId::DiskIo)), (1, 1));
        assert_eq!(at(&l, Slot::Leaf(Verdict::InputBoundDisk)), (2, 1));
        assert_eq!(at(&l, Slot::Node(NodeId::CpuBound)), (1, 2));
        assert_eq!(at(&l, Slot::Node(NodeId::CheckpointStall)), (1, 3));
        assert_eq!(at(&l, Slot::Leaf(Verdict::GpuUnderutilized)), (1, 4));
        assert_eq!(at(&l, Slot::Node(NodeId::DiskSpace)), (0, 5));
        assert_eq!(at(&l, Slot::Node(NodeId::HostMemory)), (0, 6));
        assert_eq!(at(&l, Slot::Leaf(Verdict::Healthy)), (0, 7));
        // 7 questions, 8 leaves, two edges per question.
        assert_eq!(l.boxes.len(), 15);
        assert_eq!(l.edges.len(), 14);
    }

    #[test]
    fn boxes_never_overlap_and_fit_a_laptop() {
        let l = layout(&tree());
        for (i, a) in l.boxes.iter().enumerate() {
            for b in &l.boxes[i + 1..] {
                assert_ne!(
                    (a.col, a.row),
                    (b.col, b.row),
                    "{:?} on {:?}",
                    a.slot,
                    b.slot
                );
            }
            assert!(a.x + BOX_W <= l.width && a.y + BOX_H <= l.height);
        }
        assert!(l.width <= 900.0, "{}", l.width);
    }

    #[test]
    fn edges_are_straight_and_point_forward() {
        let l = layout(&tree());
        for e in &l.edges {
            match e.branch {
                Branch::Yes => assert!(e.y1 == e.y2 && e.x2 > e.x1, "{e:?}"),
                Branch::No => assert!(e.x1 == e.x2 && e.y2 > e.y1, "{e:?}"),
            }
        }
        // The long "no" from "GPU starved?" runs down the empty left column to "disk space".
        let starved_no = l
            .edges
            .iter()
            .find(|e| e.from == NodeId::GpuStarved && e.branch == Branch::No);
        assert_eq!(
            starved_no.map(|e| e.to),
            Some(Slot::Node(NodeId::DiskSpace))
        );
    }

    #[test]
    fn text_wraps_into_the_box() {
        assert_eq!(
            wrap("GPU memory too high?", 32, 3),
            vec!["GPU memory too high?"]
        );
        let long = wrap(NodeId::GpuStarved.question(), 32, 3);
        assert!(
            long.len() <= 3 && long.iter().all(|l| l.chars().count() <= 32),
            "{long:?}"
        );
        assert_eq!(wrap("a b c d e f", 3, 2), vec!["a b", "c …"]);
        assert_eq!(
            wrap("averyveryverylongword x", 5, 3),
            vec!["averyveryverylongword", "x"]
        );
        assert!(wrap("", 10, 3).is_empty());
        let l = layout(&tree());
        let leaf = l
            .find(Slot::Leaf(Verdict::GpuMemoryPressure))
            .map(|b| b.lines.clone());
        assert_eq!(
            leaf,
            Some(vec![
                "GPU memory pressure".to_owned(),
                "Reduce batch size / gradient".to_owned(),
                "checkpointing".to_owned()
            ])
        );
    }

    #[test]
    fn an_empty_or_cyclic_table_does_not_hang() {
        assert_eq!(layout(&[]), Layout::default());
        let cyclic = vec![TreeNode {
            id: NodeId::GpuMemory,
            question: "loop?".into(),
            yes: TreeEdge::Node {
                node: NodeId::GpuMemory,
            },
            no: TreeEdge::Node {
                node: NodeId::GpuMemory,
            },
        }];
        let l = layout(&cyclic);
        assert_eq!(l.boxes.len(), 1);
    }
}
