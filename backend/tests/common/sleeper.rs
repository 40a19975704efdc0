//! A sleeping stand-in for a job's process, for the fake NVML's scripts to list.

use std::process::{Child, Command};
use std::time::Duration;

/// A process that holds "GPU memory" in the script: `sleep` under `sh` (a launcher), so each is
/// a process-tree job of its own.
pub struct Sleeper(pub Child, pub u32);

impl Sleeper {
    pub fn start() -> Self {
        let child = Command::new("sh")
            .args(["-c", "sleep 600; true"])
            .spawn()
            .expect("sh");
        let sh = child.id();
        // Owned (and so killed) from here on, whatever happens next.
        let mut me = Sleeper(child, 0);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let children = std::fs::read_to_string(format!("/proc/{sh}/task/{sh}/children"))
                .unwrap_or_default();
            if let Some(pid) = children.split_whitespace().find_map(|p| p.parse().ok()) {
                me.1 = pid;
                return me;
            }
            assert!(std::time::Instant::now() < deadline, "sleep did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        if self.1 != 0 {
            let _ = Command::new("kill").arg(self.1.to_string()).status();
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
