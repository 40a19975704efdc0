//! Which parts of the flowchart the diagnosis' path lights: the visited questions with their
//! answers, the edges taken and the leaf reached. Read from `Diagnosis::path` and `tree()`; the
//! walk itself was done by `shared::diagnosis::diagnose`.

use super::layout::{Branch, Slot};
use shared::diagnosis::{Answer, NodeId, PathNode, TreeEdge, TreeNode, Verdict};

/// The lit part of the flowchart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lit {
    /// Visited questions and their answers, in walk order.
    pub answers: Vec<(NodeId, Answer)>,
    /// Edges taken, as (question, branch).
    pub edges: Vec<(NodeId, Branch)>,
    /// The leaf the walk reached, if the path reaches one.
    pub leaf: Option<Verdict>,
}

impl Lit {
    pub fn answer(&self, node: NodeId) -> Option<Answer> {
        self.answers
            .iter()
            .find(|(n, _)| *n == node)
            .map(|(_, a)| *a)
    }

    pub fn took(&self, node: NodeId, branch: Branch) -> bool {
        self.edges.contains(&(node, branch))
    }

    pub fn is_lit(&self, slot: Slot) -> bool {
        match slot {
            Slot::Node(n) => self.answer(n).is_some(),
            Slot::Leaf(v) => self.leaf == Some(v),
        }
    }
}

/// The branch an answer follows: yes goes yes, no and unknown go no (as in the walk).
pub fn branch_of(a: Answer) -> Branch {
    if a == Answer::Yes {
        Branch::Yes
    } else {
        Branch::No
    }
}

/// Lights `path` on `tree`: an edge is lit when it joins two consecutive path nodes, or leads from
/// the last one to a leaf.
pub fn lit(tree: &[TreeNode], path: &[PathNode]) -> Lit {
    let mut out = Lit::default();
    for (i, p) in path.iter().enumerate() {
        out.answers.push((p.node, p.answer));
        let Some(node) = tree.iter().find(|n| n.id == p.node) else {
            continue;
        };
        let branch = branch_of(p.answer);
        let target = match branch {
            Branch::Yes => &node.yes,
            Branch::No => &node.no,
        };
        match (target, path.get(i + 1)) {
            (TreeEdge::Node { node: next }, Some(n)) if *next == n.node => {
                out.edges.push((p.node, branch));
            }
            (TreeEdge::Leaf { verdict, .. }, None) => {
                out.edges.push((p.node, branch));
                out.leaf = Some(*verdict);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use shared::diagnosis::tree;

    /// A path answering `steps`, with no evidence (shared with the tree view's tests).
    pub(crate) fn path(steps: &[(NodeId, Answer)]) -> Vec<PathNode> {
        steps
            .iter()
            .map(|&(node, answer)| PathNode {
                node,
                question: node.question().to_owned(),
                answer,
                evidence: vec![],
            })
            .collect()
    }

    #[test]
    fn a_yes_at_the_root_lights_the_memory_leaf() {
        let l = lit(&tree(), &path(&[(NodeId::GpuMemory, Answer::Yes)]));
        assert_eq!(l.leaf, Some(Verdict::GpuMemoryPressure));
        assert!(l.took(NodeId::GpuMemory, Branch::Yes));
        assert!(!l.took(NodeId::GpuMemory, Branch::No));
        assert!(l.is_lit(Slot::Node(NodeId::GpuMemory)));
        assert!(!l.is_lit(Slot::Node(NodeId::GpuStarved)));
        assert!(l.is_lit(Slot::Leaf(Verdict::GpuMemoryPressure)));
    }

    #[test]
    fn the_starved_branch_lights_each_step() {
        let p = path(&[
            (NodeId::GpuMemory, Answer::No),
            (NodeId::GpuStarved, Answer::Yes),
            (NodeId::DiskIo, Answer::Yes),
        ]);
        let l = lit(&tree(), &p);
        assert_eq!(
            l.edges,
            vec![
                (NodeId::GpuMemory, Branch::No),
                (NodeId::GpuStarved, Branch::Yes),
                (NodeId::DiskIo, Branch::Yes)
            ]
        );
        assert_eq!(l.leaf, Some(Verdict::InputBoundDisk));
        assert_eq!(l.answer(NodeId::GpuStarved), Some(Answer::Yes));
        assert_eq!(l.answer(NodeId::DiskSpace), None);
    }

    #[test]
    fn unknown_follows_no_and_a_short_path_reaches_no_leaf() {
        let p = path(&[
            (NodeId::GpuMemory, Answer::Unknown),
            (NodeId::GpuStarved, Answer::No),
            (NodeId::DiskSpace, Answer::No),
            (NodeId::HostMemory, Answer::No),
        ]);
        let l = lit(&tree(), &p);
        assert!(l.took(NodeId::GpuMemory, Branch::No));
        assert_eq!(l.leaf, Some(Verdict::Healthy));
        assert_eq!(l.answer(NodeId::GpuMemory), Some(Answer::Unknown));
        // No frames: only the root, unknown; its "no" edge leads to a question not on the path.
        let l = lit(&tree(), &path(&[(NodeId::GpuMemory, Answer::Unknown)]));
        assert!(l.edges.is_empty());
        assert_eq!(l.leaf, None);
        assert_eq!(lit(&tree(), &[]), Lit::default());
    }
}
