//! The page's files as the server sends them: content-hashed names, and each file compressed
//! once, here, at brotli 11 and gzip 9 (docs/performance.md#first-load).
//!
//! Every file but `index.html` gets its content's hash in its name (`vramio_bg.HASH.wasm`; a file
//! this does not know stops the build), and the quoted paths that name it are rewritten to match, so the server can let browsers keep them for a
//! year (`immutable`) while `index.html` is revalidated on each load. Beside each file go
//! `NAME.br` and `NAME.gz` when they are smaller: the server picks one by `Accept-Encoding` and
//! compresses nothing at run time.

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::Path;

/// Renames, in this order: a file is hashed after the names inside it are final (boot.js names
/// the glue and the wasm; index.html, not hashed, names the rest). Keep the order when adding one.
const HASHED: [&str; 5] = [
    "vramio_bg.wasm",
    "vramio.js",
    "boot.js",
    "style.css",
    "overview.css",
];

/// Hex digits of the SHA-256 kept in a name: 64 bits, ample for one release's few files.
const HASH_LEN: usize = 16;

/// What one file weighs, for the bundle's report.
pub struct Sizes {
    pub name: String,
    pub raw: u64,
    pub br: u64,
    pub gz: u64,
}

/// Hashes the names in `dir` and writes the compressed copies; returns each served file's sizes.
pub fn finish(dir: &Path) -> Result<Vec<Sizes>> {
    // Only the files this knows: one added to static/ must be named here, or it would be served
    // under its plain name with no cache rule of its own.
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !entry.file_type()?.is_file()
            || !(HASHED.contains(&name.as_str()) || name == "index.html")
        {
            bail!("the bundle holds {name}, which xtask/src/page.rs does not name");
        }
    }
    let mut renames: Vec<(String, String)> = Vec::new();
    for file in HASHED {
        let path = dir.join(file);
        let mut data = std::fs::read(&path).with_context(|| format!("reading {file}"))?;
        if file.ends_with(".js") || file.ends_with(".css") {
            let text = rewrite(
                String::from_utf8(data).context("a text asset in UTF-8")?,
                &renames,
            );
            data = text.into_bytes();
        }
        let new = hashed_name(file, &data);
        std::fs::write(dir.join(&new), &data)?;
        std::fs::remove_file(&path)?;
        renames.push((file.to_owned(), new));
    }
    let index = dir.join("index.html");
    let html = rewrite(
        std::fs::read_to_string(&index).context("reading index.html")?,
        &renames,
    );
    std::fs::write(&index, &html)?;
    // Every new name is loaded by index.html or boot.js, and no old name is left in either: a
    // rename that matched nothing is a page that asks for a file the server no longer has.
    let boot = renames
        .iter()
        .find(|(old, _)| old == "boot.js")
        .map(|(_, new)| new.clone())
        .context("boot.js is hashed")?;
    let boot_text = std::fs::read_to_string(dir.join(&boot))?;
    for (old, new) in &renames {
        let quoted = |t: &str, q: char| t.contains(&format!("/{new}{q}"));
        let loaded = quoted(&html, '"') || quoted(&boot_text, '\'');
        if !loaded {
            bail!("nothing in index.html or boot.js loads {old} (now {new})");
        }
        for (text, what) in [(&html, "index.html"), (&boot_text, "boot.js")] {
            if text.contains(&format!("/{old}\"")) || text.contains(&format!("/{old}'")) {
                bail!("{what} still names /{old}");
            }
        }
    }
    let mut sizes = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        let data = std::fs::read(dir.join(&name))?;
        let br = brotli(&data)?;
        let gz = gzip(&data)?;
        if br.len() < data.len() {
            std::fs::write(dir.join(format!("{name}.br")), &br)?;
        }
        if gz.len() < data.len() {
            std::fs::write(dir.join(format!("{name}.gz")), &gz)?;
        }
        sizes.push(Sizes {
            name,
            raw: data.len() as u64,
            br: br.len().min(data.len()) as u64,
            gz: gz.len().min(data.len()) as u64,
        });
    }
    Ok(sizes)
}

/// `text` with each quoted `/old` path (`"/old"` or `'/old'`) turned into `/new`.
fn rewrite(mut text: String, renames: &[(String, String)]) -> String {
    for (old, new) in renames {
        for q in ['"', '\''] {
            text = text.replace(&format!("{q}/{old}{q}"), &format!("{q}/{new}{q}"));
        }
    }
    text
}

/// `stem.HASH.ext` (the extension is everything after the first dot, as in `vramio_bg.wasm`).
fn hashed_name(file: &str, data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let (stem, ext) = file.split_once('.').unwrap_or((file, ""));
    format!("{stem}.{}.{ext}", &hex[..HASH_LEN])
}

fn brotli(data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        lgwin: 24,
        ..Default::default()
    };
    brotli::BrotliCompress(&mut &data[..], &mut out, &params).context("brotli")?;
    Ok(out)
}

fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data)?;
    Ok(enc.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hashed_name_keeps_stem_and_extension_and_follows_the_content() {
        let a = hashed_name("vramio_bg.wasm", b"one");
        let b = hashed_name("vramio_bg.wasm", b"two");
        assert!(a.starts_with("vramio_bg.") && a.ends_with(".wasm"), "{a}");
        assert_eq!(a.len(), "vramio_bg..wasm".len() + HASH_LEN);
        assert_ne!(a, b);
        assert_eq!(a, hashed_name("vramio_bg.wasm", b"one"));
    }

    #[test]
    fn only_whole_quoted_paths_are_renamed() {
        let renames = [(
            "style.css".to_owned(),
            "style.0123456789abcdef.css".to_owned(),
        )];
        let text = r#"<link href="/style.css"> '/style.css' "/style.css.map" "/x/style.css""#;
        assert_eq!(
            rewrite(text.to_owned(), &renames),
            r#"<link href="/style.0123456789abcdef.css"> '/style.0123456789abcdef.css' "/style.css.map" "/x/style.css""#
        );
    }

    #[test]
    fn both_compressions_round_trip() {
        let data = b"vramio ".repeat(500);
        let br = brotli(&data).expect("brotli");
        let mut back = Vec::new();
        brotli::BrotliDecompress(&mut &br[..], &mut back).expect("unbrotli");
        assert_eq!(back, data);
        let gz = gzip(&data).expect("gzip");
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut back)
            .expect("gunzip");
        assert_eq!(back, data);
        assert!(br.len() < data.len() / 10 && gz.len() < data.len() / 10);
    }
}
