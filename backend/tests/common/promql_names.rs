//! The metric names a PromQL expression (or a Grafana variable query) selects, for the `deploy/`
//! checks: a small scanner, not a parser. It skips string literals, `{...}` matchers, `[...]`
//! ranges and subqueries, numbers and durations, `#` comments, Grafana variables (`$x`, `${x}`,
//! `$__rate_interval`), keywords with their label lists (`by (..)`, `on (..)`, ...) and function
//! names; what is left are the metric names. Anything it cannot vouch for (an unknown function, a
//! selector by `__name__`, an unclosed bracket) is an error, so a check never passes by skipping.

/// One vector selector: the metric name and the text between its braces, if it has any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub name: String,
    pub matchers: Option<String>,
}

/// Binary operators, modifiers and literals that read like identifiers.
const KEYWORDS: &[&str] = &["and", "or", "unless", "bool", "offset", "inf", "nan"];

/// Keywords that may be followed by a label list in parentheses (label names, not metrics).
const LABEL_LIST_KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// PromQL's functions and aggregations (Prometheus 2.42), `start`/`end` of the `@` modifier, and
/// the two Grafana variable-query functions, `label_values` and `query_result`.
const FUNCTIONS: &str = "\
    abs absent absent_over_time acos acosh asin asinh atan atanh avg avg_over_time bottomk \
    ceil changes clamp clamp_max clamp_min cos cosh count count_over_time count_values \
    day_of_month day_of_week day_of_year days_in_month deg delta deriv end exp floor group \
    histogram_quantile holt_winters hour idelta increase irate label_join label_replace \
    label_values last_over_time ln log10 log2 max max_over_time min min_over_time minute month \
    pi predict_linear present_over_time quantile quantile_over_time query_result rad rate \
    resets round scalar sgn sin sinh sort sort_desc sqrt start stddev stddev_over_time stdvar \
    stdvar_over_time sum sum_over_time tan tanh time timestamp topk vector year";

/// The metric names `expr` selects, each once, in order of appearance.
pub fn metric_names(expr: &str) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = Vec::new();
    for s in selectors(expr)? {
        if !names.contains(&s.name) {
            names.push(s.name);
        }
    }
    Ok(names)
}

/// Every vector selector in `expr`, in order of appearance.
pub fn selectors(expr: &str) -> Result<Vec<Selector>, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    scan(&chars, &mut out).map_err(|e| format!("{e} in `{expr}`"))?;
    Ok(out)
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_ident(c: char) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

fn scan(s: &[char], out: &mut Vec<Selector>) -> Result<(), String> {
    let (mut i, mut depth) = (0, 0usize);
    while let Some(&c) = s.get(i) {
        i = match c {
            '(' => {
                depth += 1;
                i + 1
            }
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or(format!("an unopened `)` at {i}"))?;
                i + 1
            }
            '"' | '\'' | '`' => skip_string(s, i)?,
            '#' => s[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(s.len(), |p| i + p),
            '[' => close(s, i, '[', ']')? + 1,
            '$' => skip_variable(s, i)?,
            '{' => {
                let end = close(s, i, '{', '}')?;
                let inner: String = s[i + 1..end].iter().collect();
                return Err(if inner.contains("__name__") {
                    format!("a selector by __name__ (`{{{inner}}}`) is not checked")
                } else {
                    format!("a selector without a metric name (`{{{inner}}}`)")
                });
            }
            c if c.is_ascii_digit()
                || (c == '.' && s.get(i + 1).is_some_and(char::is_ascii_digit)) =>
            {
                skip_number(s, i)
            }
            c if is_ident_start(c) => identifier(s, i, out)?,
            _ => i + 1,
        };
    }
    if depth == 0 {
        Ok(())
    } else {
        Err(format!("{depth} unclosed `(`"))
    }
}

/// Handles the identifier at `i` (keyword, function or metric name); returns where to go on.
fn identifier(s: &[char], i: usize, out: &mut Vec<Selector>) -> Result<usize, String> {
    let end = i + s[i..]
        .iter()
        .position(|&c| !is_ident(c))
        .unwrap_or(s.len() - i);
    let word: String = s[i..end].iter().collect();
    let next = skip_space(s, end);
    let lower = word.to_ascii_lowercase();
    if LABEL_LIST_KEYWORDS.contains(&lower.as_str()) {
        return Ok(if s.get(next) == Some(&'(') {
            close(s, next, '(', ')')? + 1
        } else {
            end
        });
    }
    if KEYWORDS.contains(&lower.as_str()) {
        return Ok(end);
    }
    match s.get(next) {
        Some('(') if word == "label_values" => {
            // `label_values(label)` or `label_values(selector, label)`: the last is a label name.
            let close_at = close(s, next, '(', ')')?;
            let args = split_args(&s[next + 1..close_at])?;
            if let Some((_, selector)) = args.split_last() {
                for a in selector {
                    scan(a, out)?;
                }
            }
            Ok(close_at + 1)
        }
        Some('(') if is_function(&word) => Ok(end),
        // An aggregation with its grouping first: `sum by (host) (...)`.
        Some(_) if is_function(&word) && starts_grouping(&s[next..]) => Ok(end),
        Some('(') => Err(format!("unknown function `{word}`")),
        Some('{') => {
            let close_at = close(s, next, '{', '}')?;
            let matchers = s[next + 1..close_at].iter().collect();
            out.push(Selector {
                name: word,
                matchers: Some(matchers),
            });
            Ok(close_at + 1)
        }
        _ => {
            out.push(Selector {
                name: word,
                matchers: None,
            });
            Ok(end)
        }
    }
}

fn is_function(word: &str) -> bool {
    FUNCTIONS.split_whitespace().any(|f| f == word)
}

/// Whether `s` opens with `by` or `without` (any case) as a whole word.
fn starts_grouping(s: &[char]) -> bool {
    let len = s.iter().position(|&c| !is_ident(c)).unwrap_or(s.len());
    let word: String = s[..len].iter().collect();
    ["by", "without"].contains(&word.to_ascii_lowercase().as_str())
}

fn skip_space(s: &[char], mut i: usize) -> usize {
    while s.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

/// Past the string literal that opens at `i` (backslash escapes, except in a raw `` ` `` string).
fn skip_string(s: &[char], i: usize) -> Result<usize, String> {
    let quote = s[i];
    let mut j = i + 1;
    while let Some(&c) = s.get(j) {
        if c == quote {
            return Ok(j + 1);
        }
        j += if c == '\\' && quote != '`' { 2 } else { 1 };
    }
    Err(format!("an unclosed string at {i}"))
}

/// The index of the bracket that closes the one at `i`, skipping strings and nested pairs.
fn close(s: &[char], i: usize, open: char, shut: char) -> Result<usize, String> {
    let mut depth = 0usize;
    let mut j = i;
    while let Some(&c) = s.get(j) {
        if c == '"' || c == '\'' || c == '`' {
            j = skip_string(s, j)?;
            continue;
        }
        if c == open {
            depth += 1;
        } else if c == shut {
            depth -= 1;
            if depth == 0 {
                return Ok(j);
            }
        }
        j += 1;
    }
    Err(format!("an unclosed `{open}` at {i}"))
}

/// Past a Grafana variable: `${name}`, `${name:format}` or `$name` (also `$__rate_interval`).
fn skip_variable(s: &[char], i: usize) -> Result<usize, String> {
    if s.get(i + 1) == Some(&'{') {
        return Ok(close(s, i + 1, '{', '}')? + 1);
    }
    let len = s[i + 1..].iter().position(|&c| !is_ident(c) || c == ':');
    Ok(i + 1 + len.unwrap_or(s.len() - i - 1))
}

/// Past a number or duration: `15`, `0.5`, `1e-3`, `0x1F`, `5m`, `1h30m`.
fn skip_number(s: &[char], i: usize) -> usize {
    let mut j = i;
    while let Some(&c) = s.get(j) {
        let exponent_sign = (c == '-' || c == '+')
            && matches!(s.get(j - 1), Some('e' | 'E'))
            && !matches!(s.get(i + 1), Some('x' | 'X'));
        if !(c.is_ascii_alphanumeric() || c == '.' || c == '_' || exponent_sign) {
            break;
        }
        j += 1;
    }
    j
}

/// The arguments of a call, split at its top-level commas.
fn split_args(s: &[char]) -> Result<Vec<&[char]>, String> {
    let mut args = Vec::new();
    let (mut start, mut j) = (0, 0);
    while let Some(&c) = s.get(j) {
        j = match c {
            '"' | '\'' | '`' => skip_string(s, j)?,
            '(' => close(s, j, '(', ')')? + 1,
            '{' => close(s, j, '{', '}')? + 1,
            '[' => close(s, j, '[', ']')? + 1,
            ',' => {
                args.push(&s[start..j]);
                start = j + 1;
                j + 1
            }
            _ => j + 1,
        };
    }
    args.push(&s[start..]);
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::{metric_names, selectors};

    fn names(expr: &str) -> Vec<String> {
        metric_names(expr).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn skips_matchers_ranges_variables_and_grouping() {
        let e = r#"sum by (instance, host) (rate(vramio_block_read_bytes_total{device=~"nvme.*",instance=~"$instance"}[$__rate_interval]))"#;
        assert_eq!(names(e), ["vramio_block_read_bytes_total"]);
        let s = selectors(e).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            s[0].matchers.as_deref(),
            Some(r#"device=~"nvme.*",instance=~"$instance""#)
        );
    }

    #[test]
    fn skips_vector_matching_offset_and_bool() {
        let e = "vramio_mount_used_bytes / ignoring(fstype) group_left(device) \
                 (vramio_mount_used_bytes + vramio_mount_avail_bytes offset 5m) > bool 0.9";
        assert_eq!(
            names(e),
            ["vramio_mount_used_bytes", "vramio_mount_avail_bytes"]
        );
        let e =
            r#"up{job=~"vramio.*"} == 0 or vramio_host_up == 0 unless on (host) vramio_viewers"#;
        assert_eq!(names(e), ["up", "vramio_host_up", "vramio_viewers"]);
        // Keywords are case-insensitive in PromQL; the aggregation may take `by` after its args.
        assert_eq!(
            names("sum(vramio_viewers) BY (host) AND vramio_severity"),
            ["vramio_viewers", "vramio_severity"]
        );
    }

    #[test]
    fn strings_may_hold_braces_brackets_and_keywords() {
        let e = r#"label_replace(vramio_verdict{verdict="a}b[c"}, "x", "by (y) $1", 'verdict', "(.*)")"#;
        assert_eq!(names(e), ["vramio_verdict"]);
        let e = r#"count_values(`raw \ string`, vramio_severity{host="q\"uote"})"#;
        assert_eq!(names(e), ["vramio_severity"]);
    }

    #[test]
    fn numbers_durations_subqueries_and_comments() {
        let e = "topk(10, max without (pid) (vramio_gpu_process_memory_used_bytes)) > 1e-3 * 0x1F # not_a_metric\n\
                 + max_over_time(vramio_gpu_power_watts[1h30m:1m] @ end()) + inf";
        assert_eq!(
            names(e),
            [
                "vramio_gpu_process_memory_used_bytes",
                "vramio_gpu_power_watts"
            ]
        );
        assert_eq!(
            names("${x:regex} + $y * vramio_viewers"),
            ["vramio_viewers"]
        );
    }

    #[test]
    fn grafana_label_values_reads_only_its_selector() {
        assert_eq!(
            names(r#"label_values(vramio_gpu_info{instance=~"$instance"}, host)"#),
            ["vramio_gpu_info"]
        );
        assert!(names("label_values(host)").is_empty());
        assert_eq!(
            names("query_result(max(vramio_severity))"),
            ["vramio_severity"]
        );
    }

    #[test]
    fn refuses_what_it_cannot_check() {
        for e in [
            r#"{__name__=~"vramio_.*"}"#,
            r#"{job="vramio"}"#,
            "no_such_function(vramio_viewers)",
            "rate(vramio_block_read_bytes_total[5m]",
            r#"vramio_verdict{verdict="x}"#,
        ] {
            assert!(metric_names(e).is_err(), "accepted `{e}`");
        }
    }
}
