//! [`Encoded`]: a message encoded once as JSON text and shared, without a copy, by every session
//! that sends it. The hub's own type, so `host_feed/` knows nothing of the web framework that carries it.

use std::sync::Arc;

/// JSON text encoded once; cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded(Arc<str>);

impl Encoded {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The text as shared bytes, for a socket: no copy, the bytes keep the text alive.
    pub fn to_bytes(&self) -> bytes::Bytes {
        bytes::Bytes::from_owner(Text(self.0.clone()))
    }
}

impl From<String> for Encoded {
    fn from(text: String) -> Self {
        Encoded(Arc::from(text))
    }
}

impl std::fmt::Display for Encoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The owner [`bytes::Bytes`] keeps for [`Encoded::to_bytes`].
struct Text(Arc<str>);

impl AsRef<[u8]> for Text {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_are_the_text_without_a_copy() {
        let e = Encoded::from(r#"{"type":"pong"}"#.to_owned());
        let b = e.to_bytes();
        assert_eq!(&b[..], e.as_str().as_bytes());
        assert_eq!(b.as_ptr(), e.as_str().as_ptr(), "shared, not copied");
        drop(e);
        assert_eq!(
            &b[..],
            br#"{"type":"pong"}"#,
            "the bytes keep the text alive"
        );
    }
}
