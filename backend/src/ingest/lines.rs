//! Reading a log line by line with bounded memory: lossy UTF-8, `\r\n` or `\n`, and lines
//! longer than [`MAX_LINE_BYTES`] skipped with a note rather than held (a 10 MB line of garbage,
//! a binary file).

use super::model::{Emit, Importer, Note};
use std::io::BufRead;

/// Longest line an importer sees; no log format vramio reads has lines near this.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Lines of a reader, one at a time, each at most [`MAX_LINE_BYTES`].
pub struct LineReader<R> {
    input: R,
    buf: Vec<u8>,
    no: usize,
    done: bool,
}

/// What [`LineReader::next_line`] found.
pub enum Line<'a> {
    /// Line `no` (1-based), without its ending, decoded lossily.
    Text(usize, std::borrow::Cow<'a, str>),
    /// Line `no` was longer than [`MAX_LINE_BYTES`] and was skipped.
    TooLong(usize),
}

impl<R: BufRead> LineReader<R> {
    pub fn new(input: R) -> Self {
        LineReader {
            input,
            buf: Vec::with_capacity(4096),
            no: 0,
            done: false,
        }
    }

    /// The next line, or `None` at the end of the input.
    pub fn next_line(&mut self) -> std::io::Result<Option<Line<'_>>> {
        if self.done {
            return Ok(None);
        }
        self.buf.clear();
        let (complete, too_long) = read_bounded(&mut self.input, &mut self.buf)?;
        if !complete {
            self.done = true;
            if self.buf.is_empty() && !too_long {
                return Ok(None);
            }
        }
        self.no += 1;
        if too_long {
            return Ok(Some(Line::TooLong(self.no)));
        }
        while self.buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            self.buf.pop();
        }
        Ok(Some(Line::Text(
            self.no,
            String::from_utf8_lossy(&self.buf),
        )))
    }
}

/// The note for a line that was too long.
pub fn too_long(no: usize) -> Note {
    Note::at(
        no,
        format!("a line longer than {MAX_LINE_BYTES} bytes, skipped"),
    )
}

/// Feeds every line of `input` to `importer`, calling `drain` after each line so the caller can
/// take the samples out as they come. Returns the number of lines read.
pub fn feed(
    input: &mut dyn BufRead,
    importer: &mut dyn Importer,
    out: &mut Emit,
    drain: &mut dyn FnMut(&mut Emit),
) -> std::io::Result<usize> {
    let mut lines = LineReader::new(input);
    let mut count = 0;
    while let Some(line) = lines.next_line()? {
        match line {
            Line::Text(no, text) => {
                count = no;
                importer.line(no, &text, out);
            }
            Line::TooLong(no) => {
                count = no;
                out.notes.push(too_long(no));
            }
        }
        drain(out);
    }
    importer.finish(out);
    drain(out);
    Ok(count)
}

/// Reads up to and including the next `\n` into `buf`, keeping at most `MAX_LINE_BYTES`.
/// Returns (ended with a newline, was too long).
fn read_bounded(input: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<(bool, bool)> {
    let mut too_long = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((false, too_long));
        }
        let (take, found) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if buf.len() + take > MAX_LINE_BYTES {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        input.consume(take);
        if found {
            return Ok((true, too_long));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Lines(Vec<(usize, String)>);
    impl Importer for Lines {
        fn line(&mut self, no: usize, line: &str, _: &mut Emit) {
            self.0.push((no, line.to_owned()));
        }
        fn finish(&mut self, _: &mut Emit) {}
    }

    fn run(input: &[u8]) -> (Vec<(usize, String)>, Vec<Note>) {
        let mut lines = Lines::default();
        let mut out = Emit::default();
        let mut notes = Vec::new();
        feed(&mut &input[..], &mut lines, &mut out, &mut |e| {
            notes.append(&mut e.notes)
        })
        .expect("reads");
        (lines.0, notes)
    }

    #[test]
    fn endings_a_cut_last_line_and_bad_utf8() {
        let (lines, notes) = run(b"a\r\nb\n\xff\xfec\nlast");
        assert_eq!(
            lines,
            [
                (1, "a".to_owned()),
                (2, "b".to_owned()),
                (3, "\u{fffd}\u{fffd}c".to_owned()),
                (4, "last".to_owned())
            ]
        );
        assert!(notes.is_empty());
        assert!(run(b"").0.is_empty());
    }

    #[test]
    fn a_huge_line_is_skipped_and_named() {
        let mut input = b"first\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 10 << 20));
        input.extend_from_slice(b"\nthird\n");
        let (lines, notes) = run(&input);
        assert_eq!(lines, [(1, "first".to_owned()), (3, "third".to_owned())]);
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].line, Some(2));
    }
}

/// One line held back until the next arrives, so an importer knows which line is the last: only
/// there is a short line known to be cut off (an unflushed buffer) rather than bad.
#[derive(Debug, Default)]
pub struct HeldLine(Option<(usize, String)>);

impl HeldLine {
    /// Holds line `no` (unless blank) and hands back the one held before it.
    pub fn swap(&mut self, no: usize, line: &str) -> Option<(usize, String)> {
        let before = self.0.take();
        if !line.trim().is_empty() {
            self.0 = Some((no, line.to_owned()));
        }
        before
    }

    /// The line held, at the end.
    pub fn take(&mut self) -> Option<(usize, String)> {
        self.0.take()
    }
}
