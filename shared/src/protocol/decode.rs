//! [`ServerMsg::from_json`]: the server's messages decoded in two passes, the `type` first, then
//! the message's own fields straight from the text into that variant's struct.
//!
//! `#[derive(Deserialize)]` on an internally tagged enum buffers every message into serde's
//! `Content` tree before it knows the variant, then decodes each field again from that tree, so
//! every type a message holds is compiled twice in the browser's wasm and every frame a hub reads is
//! copied once more. (Tagged enums inside a message, such as a GPU's `nvml_status`, still go
//! through that buffer; they are small.) The derived decoder stays: the schema and the tests
//! compare against it, and every message a vramio writes decodes the same through both
//! (docs/performance.md#first-load). On other texts the two differ in three ways, none of which a
//! vramio writes:
//! - a message must be a JSON object (the derive also takes an array: the tag, then the fields);
//! - a unit variant must be a string (the derive also takes `{"up":{}}` for `"up"`);
//! - fields this decoder does not read (unknown ones, and all of `pong`'s) are skipped without
//!   checking their numbers' range, their escapes or their depth, as a derived struct skips its
//!   unknown fields (the derive's buffer reads them whole and refuses, say, `1e400`).

use super::{ErrorCode, HostState, ServerMsg};
use crate::diagnosis::Diagnosis;
use crate::frame::Frame;
use crate::history::Sample;
use crate::summary::HostSummary;
use serde::Deserialize;
use serde::de::Error as _;

/// The variants' names on the wire, for the error an unknown `type` gets.
const VARIANTS: &[&str] = &[
    "hello",
    "backfill",
    "frame",
    "summary",
    "diagnosis",
    "host_status",
    "reset",
    "history",
    "lagged",
    "history_answer",
    "moment_answer",
    "query_failed",
    "error",
    "pong",
];

/// The first pass: only `type` (every other field is skipped, not kept).
#[derive(Deserialize)]
struct Tag<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
}

#[derive(Deserialize)]
struct Hello {
    protocol: u32,
    version: String,
    hosts: Vec<String>,
    interval_ms: u64,
    #[serde(default)]
    instance: Option<String>,
}

#[derive(Deserialize)]
struct Backfill {
    host: String,
    frames: Vec<Frame>,
}

#[derive(Deserialize)]
struct FrameMsg {
    host: String,
    frame: Box<Frame>,
}

#[derive(Deserialize)]
struct Summary {
    host: String,
    summary: Box<HostSummary>,
}

#[derive(Deserialize)]
struct DiagnosisMsg {
    host: String,
    diagnosis: Box<Diagnosis>,
}

#[derive(Deserialize)]
struct HostStatus {
    host: String,
    state: HostState,
    #[serde(default)]
    last_seen_ms: Option<u64>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Reset {
    host: String,
    frames: u64,
}

#[derive(Deserialize)]
struct History {
    host: String,
    samples: Vec<Sample>,
}

#[derive(Deserialize)]
struct Lagged {
    skipped: u64,
}

#[derive(Deserialize)]
struct HistoryAnswer {
    id: u64,
    answer: Box<crate::stored::Answer>,
}

#[derive(Deserialize)]
struct MomentAnswer {
    id: u64,
    moment: Box<crate::stored::Moment>,
}

#[derive(Deserialize)]
struct QueryFailed {
    id: u64,
    message: String,
}

#[derive(Deserialize)]
struct ErrorMsg {
    code: ErrorCode,
    message: String,
}

impl ServerMsg {
    /// Decodes one server message from its JSON text (docs/api.md). Unknown fields are ignored,
    /// as the derived decoder does; an unknown `type` names the known ones.
    pub fn from_json(text: &str) -> serde_json::Result<ServerMsg> {
        // Objects only: a derived struct also takes a JSON array, field by field, and the second
        // pass would then read the tag as the first field.
        if !text
            .trim_start_matches([' ', '\t', '\n', '\r'])
            .starts_with('{')
        {
            return Err(serde_json::Error::custom(
                "a server message is a JSON object",
            ));
        }
        let tag: Tag = serde_json::from_str(text)?;
        Ok(match tag.kind.as_ref() {
            "hello" => {
                let m: Hello = read(text)?;
                ServerMsg::Hello {
                    protocol: m.protocol,
                    version: m.version,
                    hosts: m.hosts,
                    interval_ms: m.interval_ms,
                    instance: m.instance,
                }
            }
            "backfill" => {
                let m: Backfill = read(text)?;
                ServerMsg::Backfill {
                    host: m.host,
                    frames: m.frames,
                }
            }
            "frame" => {
                let m: FrameMsg = read(text)?;
                ServerMsg::Frame {
                    host: m.host,
                    frame: m.frame,
                }
            }
            "summary" => {
                let m: Summary = read(text)?;
                ServerMsg::Summary {
                    host: m.host,
                    summary: m.summary,
                }
            }
            "diagnosis" => {
                let m: DiagnosisMsg = read(text)?;
                ServerMsg::Diagnosis {
                    host: m.host,
                    diagnosis: m.diagnosis,
                }
            }
            "host_status" => {
                let m: HostStatus = read(text)?;
                ServerMsg::HostStatus {
                    host: m.host,
                    state: m.state,
                    last_seen_ms: m.last_seen_ms,
                    error: m.error,
                }
            }
            "reset" => {
                let m: Reset = read(text)?;
                ServerMsg::Reset {
                    host: m.host,
                    frames: m.frames,
                }
            }
            "history" => {
                let m: History = read(text)?;
                ServerMsg::History {
                    host: m.host,
                    samples: m.samples,
                }
            }
            "history_answer" => {
                let m: HistoryAnswer = read(text)?;
                ServerMsg::HistoryAnswer {
                    id: m.id,
                    answer: m.answer,
                }
            }
            "moment_answer" => {
                let m: MomentAnswer = read(text)?;
                ServerMsg::MomentAnswer {
                    id: m.id,
                    moment: m.moment,
                }
            }
            "query_failed" => {
                let m: QueryFailed = read(text)?;
                ServerMsg::QueryFailed {
                    id: m.id,
                    message: m.message,
                }
            }
            "lagged" => {
                let m: Lagged = read(text)?;
                ServerMsg::Lagged { skipped: m.skipped }
            }
            "error" => {
                let m: ErrorMsg = read(text)?;
                ServerMsg::Error {
                    code: m.code,
                    message: m.message,
                }
            }
            // A unit variant: whatever else the object holds is ignored, as the derive does.
            "pong" => ServerMsg::Pong,
            other => return Err(serde_json::Error::unknown_variant(other, VARIANTS)),
        })
    }
}

/// The second pass: the variant's fields.
fn read<'a, T: Deserialize<'a>>(text: &'a str) -> serde_json::Result<T> {
    serde_json::from_str(text)
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
