//! Recordings: frames as NDJSON (one `Frame` JSON object per line), written by `vramio record`
//! and read by `vramio check --from`.
//!
//! Reading is forgiving where recordings really break (a run killed mid-line leaves a truncated
//! last line; blank lines) and precise about everything else: each malformed line is reported with
//! its number and the reason, and the frames that did parse are still used.

use shared::Frame;
use std::io::Write;

/// A line that could not be read as a frame, or (without a line) a note about the whole file.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    /// 1-based; `None` for a note about the file as a whole (frames of other hosts skipped).
    pub line: Option<usize>,
    pub reason: String,
}

impl std::fmt::Display for BadLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(n) => write!(f, "line {n}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// The frames of a recording, oldest first, and the lines that were skipped.
#[derive(Debug, Default)]
pub struct Parsed {
    pub frames: Vec<Frame>,
    pub bad_lines: Vec<BadLine>,
}

/// Parses NDJSON text. Frames are sorted by time (several hosts: only the first host's frames are
/// kept, and the others are reported, since a diagnosis is per host).
pub fn parse(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    for (i, line) in text.split('\n').enumerate() {
        parsed.line(i + 1, Ok(line));
    }
    parsed.finish()
}

/// Reads a recording line by line: a line that is not UTF-8 (a kill in the middle of a
/// character) is one bad line, not a bad file. Fails only when the reader does.
pub fn read(mut input: impl std::io::BufRead) -> std::io::Result<Parsed> {
    let mut parsed = Parsed::default();
    let mut buf = Vec::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        line_no += 1;
        parsed.line(line_no, std::str::from_utf8(&buf));
    }
    Ok(parsed.finish())
}

impl Parsed {
    fn line(&mut self, line_no: usize, line: Result<&str, std::str::Utf8Error>) {
        let trimmed = match line {
            Ok(l) => l.trim(),
            Err(e) => {
                self.bad_lines.push(BadLine {
                    line: Some(line_no),
                    reason: format!("not UTF-8 text ({e})"),
                });
                return;
            }
        };
        if trimmed.is_empty() {
            return;
        }
        match serde_json::from_str::<Frame>(trimmed) {
            Ok(frame) => self.frames.push(frame),
            Err(e) => self.bad_lines.push(BadLine {
                line: Some(line_no),
                reason: e.to_string(),
            }),
        }
    }

    fn finish(mut self) -> Parsed {
        if let Some(host) = self.frames.first().map(|f| f.host.clone()) {
            let others = self.frames.iter().filter(|f| f.host != host).count();
            if others > 0 {
                self.frames.retain(|f| f.host == host);
                self.bad_lines.push(BadLine {
                    line: None,
                    reason: format!("{others} frames of other hosts skipped (diagnosing {host})"),
                });
            }
        }
        self.frames.sort_by_key(|f| (f.t_ms, f.seq));
        self
    }
}

/// Keeps the frames within `window` of the newest one.
pub fn last_window(frames: Vec<Frame>, window: std::time::Duration) -> Vec<Frame> {
    let Some(newest) = frames.last().map(|f| f.t_ms) else {
        return frames;
    };
    let span = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    frames
        .into_iter()
        .filter(|f| newest.saturating_sub(f.t_ms) <= span)
        .collect()
}

/// Writes one frame as one line, without flushing (an import flushes once at the end).
pub fn write_frame_unflushed(out: &mut impl Write, frame: &Frame) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, frame).map_err(std::io::Error::other)?;
    out.write_all(b"\n")
}

/// Writes one frame as one line and flushes, so a killed recorder loses at most that line.
pub fn write_frame(out: &mut impl Write, frame: &Frame) -> std::io::Result<()> {
    let line = serde_json::to_string(frame).map_err(std::io::Error::other)?;
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, t: u64, host: &str) -> String {
        serde_json::to_string(&Frame::empty(host, seq, t, 1000)).expect("encodes")
    }

    #[test]
    fn round_trips_and_reports_bad_lines_by_number() {
        let mut buf = Vec::new();
        for (seq, t) in [(1, 1000), (2, 2000)] {
            write_frame(&mut buf, &Frame::empty("h", seq, t, 1000)).expect("write");
        }
        let mut text = String::from_utf8(buf).expect("utf8");
        text.push_str("{\"seq\": \"three\"}\n\n");
        text.push_str(&line(4, 4000, "h"));
        text.push('\n');
        text.push_str(&line(5, 5000, "h")[..20]); // truncated by a kill
        let p = parse(&text);
        assert_eq!(
            p.frames.iter().map(|f| f.seq).collect::<Vec<_>>(),
            vec![1, 2, 4]
        );
        assert_eq!(p.bad_lines.len(), 2);
        assert_eq!(p.bad_lines[0].line, Some(3));
        assert_eq!(p.bad_lines[1].line, Some(6));
        assert!(p.bad_lines[0].to_string().starts_with("line 3: "));
    }

    /// One byte that is not UTF-8 (a kill in the middle of a character) costs its line, not the
    /// file: the reader goes on past it.
    #[test]
    fn a_line_that_is_not_utf8_is_one_bad_line() {
        let mut bytes = Vec::new();
        write_frame(&mut bytes, &Frame::empty("h", 1, 1000, 1000)).expect("write");
        let mut broken = line(2, 2000, "h").into_bytes();
        broken.truncate(10);
        broken.extend_from_slice(&[0xe2, 0x82, b'\n']);
        bytes.extend_from_slice(&broken);
        write_frame(&mut bytes, &Frame::empty("h", 3, 3000, 1000)).expect("write");
        let p = read(&bytes[..]).expect("reads");
        assert_eq!(
            p.frames.iter().map(|f| f.seq).collect::<Vec<_>>(),
            vec![1, 3]
        );
        assert_eq!(p.bad_lines.len(), 1, "{:?}", p.bad_lines);
        assert_eq!(p.bad_lines[0].line, Some(2));
        assert!(p.bad_lines[0].reason.contains("UTF-8"), "{:?}", p.bad_lines);
    }

    /// Found by the `recording` fuzz target: serde_json's default float parser reads some
    /// numbers back one unit in the last place off (`2e-30`, and 7% of byte rates like
    /// 23 * 4096 / 1.003 B/s), so a frame written and read again was not the frame written.
    #[test]
    fn a_frame_written_and_read_again_keeps_every_float_bit() {
        for text in [
            r#"{"seq":4,"t_ms":7,"host":"","interval_ms":1,"nvml":{"state":"ok"},"gpus":[],"mounts":[],"block_devices":[{"name":"","w_await_ms":2e-30}],"errors":[],"cost":[]}"#,
            r#"{"seq":4,"t_ms":7,"host":"","interval_ms":1,"nvml":{"state":"ok"},"gpus":[],"mounts":[],"block_devices":[{"name":"","read_bytes_per_sec":93926.22133599203}],"errors":[],"cost":[]}"#,
        ] {
            let frame = parse(text).frames.pop().expect("a frame");
            let mut line = Vec::new();
            write_frame(&mut line, &frame).expect("write");
            let again = parse(std::str::from_utf8(&line).expect("utf8"));
            assert_eq!(again.frames, vec![frame], "{text}");
        }
    }

    #[test]
    fn other_hosts_are_skipped_and_said() {
        let text = [line(1, 1000, "a"), line(1, 1500, "b"), line(2, 2000, "a")].join("\n");
        let p = parse(&text);
        assert_eq!(p.frames.len(), 2);
        assert!(p.bad_lines[0].reason.contains("other hosts"));
        assert_eq!(p.bad_lines[0].line, None);
        assert!(
            !p.bad_lines[0].to_string().contains("line"),
            "a note about the file names no line: {}",
            p.bad_lines[0]
        );
    }

    #[test]
    fn window_keeps_the_newest_span() {
        let frames: Vec<Frame> = (0..10)
            .map(|s| Frame::empty("h", s, s * 1000, 1000))
            .collect();
        let kept = last_window(frames, std::time::Duration::from_secs(3));
        assert_eq!(
            kept.iter().map(|f| f.seq).collect::<Vec<_>>(),
            vec![6, 7, 8, 9]
        );
    }
}
