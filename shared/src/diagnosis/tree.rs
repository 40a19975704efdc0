//! The decision tree as data: questions, yes/no edges and leaves. `diagnose` walks these edges and
//! the page draws [`tree`] as a flowchart, so both read the same table.

use super::model::{NodeId, Verdict};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One question of the tree with where each answer leads. `unknown` follows `no`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TreeNode {
    pub id: NodeId,
    pub question: String,
    pub yes: TreeEdge,
    pub no: TreeEdge,
}

/// Where an answer leads: another question, or a verdict with the classic flowchart's advice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum TreeEdge {
    Node { node: NodeId },
    Leaf { verdict: Verdict, label: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    Node(NodeId),
    Leaf(Verdict),
}

/// Where the walk starts.
pub const ROOT: NodeId = NodeId::GpuMemory;

/// Every node, spine first, then the starved branch in visit order.
pub const NODES: [NodeId; 7] = [
    NodeId::GpuMemory,
    NodeId::GpuStarved,
    NodeId::DiskSpace,
    NodeId::HostMemory,
    NodeId::DiskIo,
    NodeId::CpuBound,
    NodeId::CheckpointStall,
];

impl NodeId {
    pub fn question(self) -> &'static str {
        match self {
            NodeId::GpuMemory => "GPU memory too high?",
            NodeId::GpuStarved => {
                "GPU starved? (a job holds GPU memory but utilization is low or saw-toothed)"
            }
            NodeId::DiskIo => "Disk I/O slow?",
            NodeId::CpuBound => "CPU-bound input pipeline?",
            NodeId::CheckpointStall => "Stalls aligned with checkpoint writes?",
            NodeId::DiskSpace => "Disk space at risk?",
            NodeId::HostMemory => "Host RAM pressure?",
        }
    }

    /// `(yes, no)` edges.
    pub(crate) fn edges(self) -> (Edge, Edge) {
        use Edge::{Leaf, Node};
        match self {
            NodeId::GpuMemory => (Leaf(Verdict::GpuMemoryPressure), Node(NodeId::GpuStarved)),
            NodeId::GpuStarved => (Node(NodeId::DiskIo), Node(NodeId::DiskSpace)),
            NodeId::DiskIo => (Leaf(Verdict::InputBoundDisk), Node(NodeId::CpuBound)),
            NodeId::CpuBound => (Leaf(Verdict::InputBoundCpu), Node(NodeId::CheckpointStall)),
            NodeId::CheckpointStall => (
                Leaf(Verdict::CheckpointStall),
                Leaf(Verdict::GpuUnderutilized),
            ),
            NodeId::DiskSpace => (Leaf(Verdict::DiskSpaceRisk), Node(NodeId::HostMemory)),
            NodeId::HostMemory => (Leaf(Verdict::HostMemoryPressure), Leaf(Verdict::Healthy)),
        }
    }
}

/// The flowchart's advice at a leaf.
pub fn leaf_label(v: Verdict) -> &'static str {
    match v {
        Verdict::GpuMemoryPressure => "Reduce batch size / gradient checkpointing",
        Verdict::InputBoundDisk => "Optimize data loading / faster storage",
        Verdict::InputBoundCpu => "More loader workers / GPU-side decoding",
        Verdict::CheckpointStall => "Asynchronous checkpointing",
        Verdict::GpuUnderutilized => "Larger batches, fewer sync points",
        Verdict::DiskSpaceRisk => "Free space: keep-last-k checkpoints, move outputs",
        Verdict::HostMemoryPressure => "Use less host memory in data loading",
        Verdict::Healthy => "Continue training",
        Verdict::NoData => "Not enough data",
    }
}

fn edge(e: Edge) -> TreeEdge {
    match e {
        Edge::Node(node) => TreeEdge::Node { node },
        Edge::Leaf(verdict) => TreeEdge::Leaf {
            verdict,
            label: leaf_label(verdict).to_owned(),
        },
    }
}

/// The whole tree, root first.
pub fn tree() -> Vec<TreeNode> {
    NODES
        .iter()
        .map(|&id| {
            let (yes, no) = id.edges();
            TreeNode {
                id,
                question: id.question().to_owned(),
                yes: edge(yes),
                no: edge(no),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verdict_but_no_data_is_a_leaf_and_every_node_is_reachable() {
        let t = tree();
        assert_eq!(t[0].id, ROOT);
        let mut leaves = Vec::new();
        let mut targets = vec![ROOT];
        for n in &t {
            for e in [&n.yes, &n.no] {
                match e {
                    TreeEdge::Leaf { verdict, .. } => leaves.push(*verdict),
                    TreeEdge::Node { node } => targets.push(*node),
                }
            }
        }
        for v in Verdict::ALL {
            assert_eq!(leaves.contains(&v), v != Verdict::NoData, "{v:?}");
        }
        for id in NODES {
            assert!(targets.contains(&id), "{id:?} unreachable");
        }
    }

    #[test]
    fn tree_serializes_with_tagged_edges() {
        let json = serde_json::to_value(tree()).expect("serializes");
        assert_eq!(json[0]["id"], "gpu_memory");
        assert_eq!(json[0]["yes"]["to"], "leaf");
        assert_eq!(json[0]["yes"]["verdict"], "gpu_memory_pressure");
        assert_eq!(json[0]["no"]["node"], "gpu_starved");
    }
}
