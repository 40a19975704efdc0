//! Merging expositions that declare the same families in the same order (one per host) into one:
//! each family's HELP and TYPE once, then its samples from every part in turn.

use std::fmt;

/// One family of an exposition: its HELP and TYPE lines, then its sample lines.
struct Family<'a> {
    header: &'a str,
    samples: &'a str,
}

/// The families of `text`, in order. Every family starts with a `# HELP` line and a `# TYPE`
/// line; a sample line never starts with `#`.
fn split(text: &str) -> Result<Vec<Family<'_>>, fmt::Error> {
    let mut families = Vec::with_capacity(64);
    let mut rest = text;
    while !rest.is_empty() {
        if !rest.starts_with("# HELP ") {
            return Err(fmt::Error);
        }
        let help = rest.find('\n').ok_or(fmt::Error)? + 1;
        if !rest[help..].starts_with("# TYPE ") {
            return Err(fmt::Error);
        }
        let header = help + rest[help..].find('\n').ok_or(fmt::Error)? + 1;
        let end = rest[header..]
            .find("\n# HELP ")
            .map_or(rest.len(), |i| header + i + 1);
        let end = if rest[header..].starts_with("# HELP ") {
            header
        } else {
            end
        };
        families.push(Family {
            header: &rest[..header],
            samples: &rest[header..end],
        });
        rest = &rest[end..];
    }
    Ok(families)
}

/// `parts` merged family by family; an error if they do not declare the same families.
pub(super) fn families(parts: &[String]) -> Result<String, fmt::Error> {
    let split: Vec<Vec<Family>> = parts.iter().map(|p| split(p)).collect::<Result<_, _>>()?;
    let Some(first) = split.first() else {
        return Ok(String::new());
    };
    if split
        .iter()
        .any(|p| p.len() != first.len() || p.iter().zip(first).any(|(a, b)| a.header != b.header))
    {
        return Err(fmt::Error);
    }
    let mut out = String::with_capacity(parts.iter().map(String::len).sum());
    for (i, family) in first.iter().enumerate() {
        out.push_str(family.header);
        for part in &split {
            out.push_str(part[i].samples);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_merge_in_order_with_empty_ones_kept() {
        let a = "# HELP x X.\n# TYPE x gauge\nx{h=\"a\"} 1.0\n# HELP y Y.\n# TYPE y gauge\n# HELP z Z.\n# TYPE z counter\nz_total{h=\"a\"} 2\n";
        let b = "# HELP x X.\n# TYPE x gauge\nx{h=\"b\"} 3.0\n# HELP y Y.\n# TYPE y gauge\ny 4.0\n# HELP z Z.\n# TYPE z counter\n";
        let merged = families(&[a.into(), b.into()]).expect("merges");
        assert_eq!(
            merged,
            "# HELP x X.\n# TYPE x gauge\nx{h=\"a\"} 1.0\nx{h=\"b\"} 3.0\n# HELP y Y.\n# TYPE y gauge\ny 4.0\n# HELP z Z.\n# TYPE z counter\nz_total{h=\"a\"} 2\n"
        );
    }

    #[test]
    fn parts_that_differ_are_refused() {
        let a = "# HELP x X.\n# TYPE x gauge\nx 1.0\n";
        let b = "# HELP w W.\n# TYPE w gauge\nw 1.0\n";
        assert!(families(&[a.into(), b.into()]).is_err());
        assert!(families(&["x 1.0\n".into()]).is_err());
    }
}
