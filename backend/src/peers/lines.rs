//! Reading a peer's byte stream as lines with bounded memory: [`Lines`] hands out one line at a
//! time and refuses one longer than its limit as soon as the limit is passed (it never holds more
//! than the limit), and [`Tail`] keeps the last few lines of a stream (a child's stderr), each
//! cut to a readable length, whatever the stream sends.

use std::collections::VecDeque;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Why no line came.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The line grew past the limit before its newline; the bytes read so far are dropped.
    #[error("line too long (over {limit} bytes)")]
    TooLong { limit: usize },
    #[error("a line is not UTF-8")]
    NotUtf8,
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
}

/// Newline-delimited lines from `inner`, each at most `limit` bytes (without the newline).
pub struct Lines<R> {
    inner: R,
    limit: usize,
    line: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    pub fn new(inner: R, limit: usize) -> Self {
        Lines {
            inner,
            limit,
            line: Vec::new(),
        }
    }

    /// The next line without its `\n` (and a `\r` before it); `None` at the end of the stream. A
    /// last line without a newline still counts. After an error the reader is spent.
    ///
    /// Cancel-safe: bytes are taken from the reader only once they are in the line being built,
    /// and a dropped call's partial line is continued by the next one.
    pub async fn next_line(&mut self) -> Result<Option<String>, LineError> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                if self.line.is_empty() {
                    return Ok(None);
                }
                break;
            }
            let (chunk, found) = match memchr(available) {
                Some(i) => (&available[..i], Some(i)),
                None => (available, None),
            };
            if self.line.len() + chunk.len() > self.limit {
                self.line = Vec::new();
                return Err(LineError::TooLong { limit: self.limit });
            }
            self.line.extend_from_slice(chunk);
            let used = found.map_or(chunk.len(), |i| i + 1);
            self.inner.consume(used);
            if found.is_some() {
                break;
            }
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        let line = std::mem::take(&mut self.line);
        String::from_utf8(line)
            .map(Some)
            .map_err(|_| LineError::NotUtf8)
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// The last `keep` lines of a byte stream, each cut to `width` characters, with colour escapes
/// and control characters (a logger's) taken out. Memory: `keep` lines of `width`, and one line
/// being read of at most [`RAW_PER_CHAR`] x `width` bytes.
#[derive(Debug)]
pub struct Tail {
    keep: usize,
    width: usize,
    lines: VecDeque<String>,
    /// The bytes of the line being read, up to the cap (the rest of a longer line is dropped).
    partial: Vec<u8>,
}

/// Raw bytes kept per character of width: room for colour escapes and multi-byte characters.
pub const RAW_PER_CHAR: usize = 4;

impl Tail {
    pub fn new(keep: usize, width: usize) -> Self {
        Tail {
            keep,
            width,
            lines: VecDeque::with_capacity(keep),
            partial: Vec::new(),
        }
    }

    /// Adds bytes as they come (lines may be split anywhere).
    pub fn push(&mut self, bytes: &[u8]) {
        let cap = self.width.saturating_mul(RAW_PER_CHAR);
        let mut rest = bytes;
        while !rest.is_empty() {
            let (chunk, ended) = match memchr(rest) {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            rest = &rest[chunk.len() + usize::from(ended)..];
            let room = cap.saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(&chunk[..chunk.len().min(room)]);
            if ended {
                let raw = std::mem::take(&mut self.partial);
                if let Some(line) = self.clean(&raw) {
                    if self.lines.len() == self.keep {
                        self.lines.pop_front();
                    }
                    self.lines.push_back(line);
                }
            }
        }
    }

    /// A raw line as people read it, or `None` for a blank one.
    fn clean(&self, raw: &[u8]) -> Option<String> {
        let text = strip_escapes(&String::from_utf8_lossy(raw));
        let text: String = text
            .chars()
            .filter(|c| !c.is_control() || *c == '\t')
            .collect();
        let text = text.trim();
        (!text.is_empty()).then(|| text.chars().take(self.width).collect())
    }

    /// The last non-empty line (a trailing one without newline included).
    pub fn last(&self) -> Option<String> {
        self.clean(&self.partial)
            .or_else(|| self.lines.back().cloned())
    }

    /// Every kept line, oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(String::as_str)
    }
}

/// Removes ANSI CSI sequences (`ESC [ params letter`: colours, cursor moves).
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for p in chars.by_ref() {
                if ('@'..='~').contains(&p) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, BufReader};

    #[tokio::test]
    async fn lines_come_one_by_one_with_or_without_a_last_newline() {
        let data: &[u8] = b"one\r\ntwo\n\nthree";
        let mut lines = Lines::new(BufReader::with_capacity(2, data), 10);
        let mut got = Vec::new();
        while let Some(l) = lines.next_line().await.expect("line") {
            got.push(l);
        }
        assert_eq!(got, ["one", "two", "", "three"]);
    }

    #[tokio::test]
    async fn a_line_at_the_limit_passes_and_one_past_it_fails() {
        let data: &[u8] = b"12345\n123456\nafter\n";
        let mut lines = Lines::new(BufReader::with_capacity(4, data), 5);
        assert_eq!(
            lines.next_line().await.expect("ok").as_deref(),
            Some("12345")
        );
        let e = lines.next_line().await.expect_err("too long");
        assert!(matches!(e, LineError::TooLong { limit: 5 }), "{e}");
        assert_eq!(e.to_string(), "line too long (over 5 bytes)");
    }

    #[tokio::test]
    async fn an_endless_line_fails_with_memory_bounded_by_the_limit() {
        // 1 GiB of 'a' without a newline, read through an 8 KiB buffer, limit 1 MiB.
        let endless = tokio::io::repeat(b'a').take(1 << 30);
        let mut lines = Lines::new(BufReader::with_capacity(8192, endless), 1 << 20);
        let e = lines.next_line().await.expect_err("too long");
        assert!(matches!(e, LineError::TooLong { .. }));
        assert!(
            lines.line.capacity() <= 1 << 20,
            "held {}",
            lines.line.capacity()
        );
        let mut rest = Vec::new();
        let left = lines.inner.read_to_end(&mut rest).await.expect("rest");
        assert!(left > (1 << 29), "stopped early, {left} bytes never read");
    }

    #[tokio::test]
    async fn bad_utf8_is_an_error() {
        let data: &[u8] = b"\xff\xfe\n";
        let mut lines = Lines::new(data, 100);
        assert!(matches!(lines.next_line().await, Err(LineError::NotUtf8)));
    }

    #[test]
    fn tail_keeps_the_last_lines_cut_and_cleaned() {
        let mut t = Tail::new(2, 12);
        t.push(b"first\nsec");
        t.push(b"ond\n\n   \nthird line that is long\n");
        t.push(b"\x1b[2m2024\x1b[0m \x1b[32m INFO\x1b[0m x");
        assert_eq!(t.lines().collect::<Vec<_>>(), ["second", "third line t"]);
        assert_eq!(t.last().as_deref(), Some("2024  INFO x"));
        t.push(b"\n");
        assert_eq!(t.last().as_deref(), Some("2024  INFO x"));
        assert_eq!(t.lines().count(), 2);
        let mut huge = Tail::new(3, 80);
        huge.push(&vec![b'x'; 10 << 20]);
        assert_eq!(huge.last().map(|l| l.len()), Some(80));
    }

    #[test]
    fn escapes_go_but_brackets_stay() {
        assert_eq!(
            strip_escapes("\u{1b}[1;31merror\u{1b}[0m: [x] a[b"),
            "error: [x] a[b"
        );
    }
}
