//! A GPU in MIG mode through `NvmlSource`: its instances with ids, uuid and memory, each
//! process's instance, no error while NVML answers, and a lost GPU losing its instances too.

use super::{MIB, fake_nvml, fake_source, gpu_errors};
use shared::{GpuState, MigSlot};
use std::time::{Duration, Instant};
use vramio::collect::sources::GpuSource;

fn script(lost_at_s: Option<f64>) -> String {
    serde_json::json!({
        "driver_version": "580.00",
        "devices": [{
            "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-a1000000-0000-0000-0000-000000000000",
            "memory_total_mib": 81920, "lost_at_s": lost_at_s,
            "mig": [
                {"gpu_instance_id": 1, "compute_instance_id": 0, "uuid": "MIG-1", "memory_total_mib": 10000},
                {"gpu_instance_id": 2, "compute_instance_id": 0, "uuid": "MIG-2", "memory_total_mib": 20000}
            ],
            "timeline": [{"at_s": 0, "memory_used_mib": 3000,
                "processes": [
                    {"pid": std::process::id(), "used_mib": 1000, "gpu_instance_id": 1, "compute_instance_id": 0},
                    {"pid": super::ORPHAN_PID, "used_mib": 2000, "gpu_instance_id": 2, "compute_instance_id": 0}
                ]}]
        }]
    })
    .to_string()
}

#[test]
fn a_mig_gpu_reports_its_instances_until_it_is_lost() {
    let Some(file) =
        fake_nvml::in_child_process("mig::a_mig_gpu_reports_its_instances_until_it_is_lost")
    else {
        return;
    };
    file.write(&script(Some(1.0)));
    let mut source = fake_source();
    let reading = source.sample();
    let after_first = Instant::now();
    assert!(reading.errors.is_empty(), "{:?}", reading.errors);
    let g = &reading.gpus[0];
    assert_eq!(g.state, GpuState::Ok);
    let slots: Vec<_> = g
        .mig
        .iter()
        .map(|i| (i.index, i.slot, i.uuid.as_deref()))
        .collect();
    let slot = |gi| {
        Some(MigSlot {
            gpu_instance_id: gi,
            compute_instance_id: 0,
        })
    };
    assert_eq!(
        slots,
        [(0, slot(1), Some("MIG-1")), (1, slot(2), Some("MIG-2"))]
    );
    let memory: Vec<_> = g
        .mig
        .iter()
        .map(|i| i.memory.map(|m| (m.total_bytes.0, m.used_bytes.0)))
        .collect();
    assert_eq!(
        memory,
        [
            Some((10_000 * MIB, 1000 * MIB)),
            Some((20_000 * MIB, 2000 * MIB))
        ]
    );
    assert!(g.mig.iter().all(|i| i.utilization_gpu_pct.is_none()));
    let procs = g.processes.as_ref().expect("processes");
    let of = |pid: u32| procs.iter().find(|p| p.pid == pid).and_then(|p| p.mig);
    assert_eq!(of(std::process::id()), slot(1));
    assert_eq!(of(super::ORPHAN_PID), slot(2));

    std::thread::sleep((after_first + Duration::from_millis(1100)) - Instant::now());
    let lost = source.sample();
    let g = &lost.gpus[0];
    assert_eq!(g.state, GpuState::Lost);
    assert!(g.mig.is_empty(), "{:?}", g.mig);
    assert!(
        gpu_errors(&lost, 0)
            .iter()
            .any(|e| e.contains("GPU_IS_LOST"))
    );
}
