//! The admin token: 256 random bits as 64 hex digits, kept in the state directory (`token`,
//! 0600) so restarts keep open tabs and bookmarks working, or read from `--token-file`.
//! Comparisons take constant time; `Debug` never shows it.

use super::state_dir::{StateDir, StateDirError, read_private};
use std::path::Path;
use subtle::ConstantTimeEq;

/// The file in the state directory.
pub const TOKEN_FILE: &str = "token";
/// Shortest token accepted from `--token-file` (128 bits as hex).
pub const MIN_TOKEN_CHARS: usize = 32;
/// Longest token accepted (a bound on what a request can make the server compare).
pub const MAX_TOKEN_CHARS: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(transparent)]
    State(#[from] StateDirError),
    #[error(
        "{}: a token must be {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} characters of A-Z, a-z, 0-9, `-`, `_` or `.` ({problem})",
        path.display()
    )]
    Malformed {
        path: std::path::PathBuf,
        problem: String,
    },
    #[error("no randomness from the OS for a new token: {0}")]
    Random(String),
}

#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Whether `s` could be a token: the length bounds and URL- and cookie-safe characters.
pub fn well_formed(s: &str) -> Result<(), String> {
    if s.len() < MIN_TOKEN_CHARS {
        return Err(format!("{} characters", s.len()));
    }
    if s.len() > MAX_TOKEN_CHARS {
        return Err(format!("{} characters", s.len()));
    }
    match s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        Some(c) => Err(format!("holds {c:?}")),
        None => Ok(()),
    }
}

impl Token {
    /// 32 bytes from the OS, as hex.
    pub fn generate() -> Result<Token, TokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        Ok(Token(hex(&bytes)))
    }

    /// A token for tests and benches.
    pub fn from_trusted(s: &str) -> Token {
        Token(s.to_owned())
    }

    /// The token's text: for the startup URL, cookies and the CLI, never for logs.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `candidate` is this token, in time independent of where they differ.
    pub fn matches(&self, candidate: &[u8]) -> bool {
        self.0.as_bytes().ct_eq(candidate).into()
    }

    /// The token in the state directory, created on first use.
    pub fn load_or_create(dir: &StateDir) -> Result<Token, TokenError> {
        let path = dir.file(TOKEN_FILE);
        if let Some(bytes) = dir.read(TOKEN_FILE)? {
            return parse(&path, &bytes);
        }
        let token = Token::generate()?;
        if dir.create_exclusive(TOKEN_FILE, token.0.as_bytes())? {
            return Ok(token);
        }
        // Another process made one first: that one is the token.
        match dir.read(TOKEN_FILE)? {
            Some(bytes) => parse(&path, &bytes),
            None => Err(TokenError::State(StateDirError::Read {
                path,
                source: std::io::ErrorKind::NotFound.into(),
            })),
        }
    }

    /// The token from `--token-file` (which must be private to this user, like an ssh key).
    pub fn from_file(path: &Path) -> Result<Token, TokenError> {
        match read_private(path)? {
            Some(bytes) => parse(path, &bytes),
            None => Err(TokenError::State(StateDirError::Read {
                path: path.to_owned(),
                source: std::io::ErrorKind::NotFound.into(),
            })),
        }
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Token, TokenError> {
    let malformed = |problem: String| TokenError::Malformed {
        path: path.to_owned(),
        problem,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| malformed("not UTF-8".into()))?;
    let text = text.trim();
    well_formed(text).map_err(malformed)?;
    Ok(Token(text.to_owned()))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_256_bits_of_hex_and_differ() {
        let a = Token::generate().expect("random");
        let b = Token::generate().expect("random");
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.expose(), b.expose());
        assert_eq!(format!("{a:?}"), "Token(..)", "Debug never shows it");
    }

    #[test]
    fn matching_is_exact() {
        let t = Token::from_trusted("0123456789abcdef0123456789abcdef");
        assert!(t.matches(b"0123456789abcdef0123456789abcdef"));
        assert!(!t.matches(b"0123456789abcdef0123456789abcdeF"));
        assert!(!t.matches(b"0123456789abcdef0123456789abcde"));
        assert!(!t.matches(b""));
    }

    /// Several first starts at once on one new directory end with one token between them (each
    /// wrote its own, and the last rename won while the others served theirs).
    #[test]
    fn racing_first_starts_agree_on_one_token() {
        for _ in 0..20 {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b).expect("random");
            let root =
                std::env::temp_dir().join(format!("vramio-token-race-{}", u64::from_le_bytes(b)));
            let dir = StateDir::open(Some(&root)).expect("dir");
            let start = std::sync::Arc::new(std::sync::Barrier::new(4));
            let tokens: Vec<String> = (0..4)
                .map(|_| {
                    let (dir, start) = (dir.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        Token::load_or_create(&dir).expect("token").0
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| t.join().expect("thread"))
                .collect();
            let on_disk = Token::load_or_create(&dir).expect("token").0;
            assert!(
                tokens.iter().all(|t| *t == on_disk),
                "{tokens:?} vs {on_disk}"
            );
            let _ = std::fs::remove_dir_all(root);
        }
    }

    #[test]
    fn token_files_are_checked() {
        assert!(well_formed("short").is_err());
        assert!(well_formed(&"a".repeat(32)).is_ok());
        assert!(well_formed(&format!("{} ", "a".repeat(32))).is_err());
        assert!(well_formed(&"a".repeat(257)).is_err());
    }
}
