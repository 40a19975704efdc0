//! The published JSON schema of the wire contract (`vramio schema` prints it).

use crate::{ClientMsg, Frame, PROTOCOL_VERSION, ServerMsg};
use schemars::schema_for;
use serde_json::{Value, json};

/// One JSON document with the schema of every server message, client message and the frame.
pub fn wire_schema() -> Value {
    json!({
        "$id": format!("https://vramio.invalid/schema/protocol-v{PROTOCOL_VERSION}.json"),
        "title": "vramio wire protocol",
        "protocol": PROTOCOL_VERSION,
        "server_message": schema_for!(ServerMsg),
        "client_message": schema_for!(ClientMsg),
        "frame": schema_for!(Frame),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_the_minimum_fields() {
        let s = wire_schema().to_string();
        for field in [
            "seq",
            "t_ms",
            "gpus",
            "mounts",
            "block_devices",
            "errors",
            "total_bytes",
            "used_bytes",
            "utilization_gpu_pct",
            "mount_point",
            "available_bytes",
            "read_bytes_per_sec",
            "write_bytes_per_sec",
            "util_pct",
            "since_seq",
            "lagged",
        ] {
            assert!(s.contains(&format!("\"{field}\"")), "schema lacks {field}");
        }
    }
}
