//! docs/cli.md, rendered from the clap definitions in [`super::flags`]: every command that is not
//! hidden, with its about text, usage and a table of its arguments (names, value, default,
//! environment variable, possible values, help). Pure and deterministic: no terminal width, no
//! version string, declaration order. `backend/tests/cli_docs.rs` compares it with the file, and
//! `cargo xtask cli-docs` writes it.

use super::flags::Cli;
use clap::{Arg, ArgAction, Command, CommandFactory};
use std::fmt::Write as _;

/// The text above the generated part of docs/cli.md.
const INTRO: &str = "# vramio's command line

Every command and flag of `vramio`, generated from its clap definitions; back to the
[README](../README.md). Do not edit by hand: `cargo xtask cli-docs` regenerates it, and
`backend/tests/cli_docs.rs` fails while it differs from the code.

`vramio` with no command runs [`vramio serve`](#vramio-serve) and takes its flags. Every command
takes `-h`/`--help`, and `vramio --version` prints the version. Exit codes (64 for bad usage,
`check`'s 0 to 3), `VRAMIO_LOG` and the rules behind the flags are in
[architecture.md](architecture.md#4-commands-and-flags).
";

/// docs/cli.md for vramio's own command line.
pub fn markdown() -> String {
    render(Cli::command(), INTRO)
}

/// `intro`, then one section per visible command of `root` (depth first, in declaration order).
pub fn render(mut root: Command, intro: &str) -> String {
    // Sets every subcommand's full name (`vramio share create`), which usage lines use.
    root.build();
    let mut out = String::from(intro);
    section(&root, true, &mut out);
    out
}

/// The subcommands worth a section: clap's generated `help` command documents nothing new.
fn visible(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
}

/// `--help` and `--version` are clap's own, on every command alike; the intro mentions them.
fn documented(cmd: &Command) -> impl Iterator<Item = &Arg> {
    cmd.get_arguments().filter(|a| {
        !a.is_hide_set() && !matches!(a.get_action(), ArgAction::Help | ArgAction::Version)
    })
}

fn full_name(cmd: &Command) -> &str {
    cmd.get_bin_name().unwrap_or(cmd.get_name())
}

/// A heading's anchor under GitHub's rule, for the names used here (letters, digits, `-`,
/// spaces).
fn anchor(name: &str) -> String {
    name.to_lowercase().replace(' ', "-")
}

fn section(cmd: &Command, root: bool, out: &mut String) {
    let name = full_name(cmd);
    let _ = writeln!(out, "\n## {name}\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(out, "{}\n", about.to_string().trim());
    }
    let usage = cmd.clone().render_usage().to_string();
    let _ = writeln!(out, "```text");
    for line in usage.lines() {
        let line = line.trim();
        let _ = writeln!(out, "{}", line.strip_prefix("Usage: ").unwrap_or(line));
    }
    let _ = writeln!(out, "```");
    let subs: Vec<&Command> = visible(cmd).collect();
    if !subs.is_empty() {
        let _ = writeln!(out, "\n| command | what it does |\n| --- | --- |");
        for sub in &subs {
            let sub_name = full_name(sub);
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            let _ = writeln!(
                out,
                "| [`{sub_name}`](#{}) | {} |",
                anchor(sub_name),
                cell(&about)
            );
        }
    }
    // vramio's root flags are `serve`'s (flattened), documented there.
    let args: Vec<&Arg> = if root && !subs.is_empty() {
        Vec::new()
    } else {
        documented(cmd).collect()
    };
    if !args.is_empty() {
        let _ = writeln!(
            out,
            "\n| argument | environment | default | meaning |\n| --- | --- | --- | --- |"
        );
        for arg in args {
            row(arg, out);
        }
    }
    for sub in subs {
        section(sub, false, out);
    }
}

/// How an argument is written on the command line: `--port <N>`, `-o, --out <FILE>`, `<FILE>...`.
fn spelling(arg: &Arg) -> String {
    let takes = arg.get_action().takes_values();
    let value = match arg.get_value_names() {
        Some(names) if !names.is_empty() => names
            .iter()
            .map(|n| format!("<{n}>"))
            .collect::<Vec<_>>()
            .join(" "),
        _ => format!("<{}>", arg.get_id().as_str().to_uppercase()),
    };
    let many = matches!(arg.get_action(), ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    if arg.is_positional() {
        return if many { format!("{value}...") } else { value };
    }
    let mut s = match (arg.get_short(), arg.get_long()) {
        (Some(c), Some(l)) => format!("-{c}, --{l}"),
        (Some(c), None) => format!("-{c}"),
        (None, Some(l)) => format!("--{l}"),
        (None, None) => arg.get_id().as_str().to_owned(),
    };
    if takes {
        s.push(' ');
        s.push_str(&value);
    }
    s
}

fn row(arg: &Arg, out: &mut String) {
    let takes = arg.get_action().takes_values();
    let env = match arg.get_env() {
        Some(e) if !arg.is_hide_env_set() => format!("`{}`", e.to_string_lossy()),
        _ => String::new(),
    };
    // A switch's default (`false`) says nothing.
    let default = if takes && !arg.is_hide_default_value_set() {
        let values: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| format!("`{}`", v.to_string_lossy()))
            .collect();
        values.join(", ")
    } else {
        String::new()
    };
    let mut meaning = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut notes = Vec::new();
    if arg.is_required_set() {
        notes.push("Required.".to_owned());
    }
    if matches!(arg.get_action(), ArgAction::Append) && !arg.is_positional() {
        notes.push("Repeatable.".to_owned());
    }
    if let Some(d) = arg.get_value_delimiter() {
        notes.push(format!("Values may be separated by `{d}`."));
    }
    let possible: Vec<String> = if takes && !arg.is_hide_possible_values_set() {
        arg.get_possible_values()
            .iter()
            .filter(|p| !p.is_hide_set())
            .map(|p| match p.get_help() {
                Some(h) => format!("`{}` ({h})", p.get_name()),
                None => format!("`{}`", p.get_name()),
            })
            .collect()
    } else {
        Vec::new()
    };
    if !possible.is_empty() {
        notes.push(format!("One of {}.", possible.join(", ")));
    }
    for note in notes {
        // clap drops a one-sentence help's closing period; a note after it needs one.
        if !meaning.is_empty() {
            if !meaning.ends_with(['.', '!', '?']) {
                meaning.push('.');
            }
            meaning.push(' ');
        }
        meaning.push_str(&note);
    }
    let _ = writeln!(
        out,
        "| `{}` | {} | {} | {} |",
        spelling(arg),
        env,
        default,
        cell(&meaning)
    );
}

/// Text fit for one table cell: one line, `|` escaped.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction, Command};

    fn toy() -> Command {
        Command::new("toy")
            .about("A toy.")
            .subcommand(
                Command::new("run")
                    .about("Run it.")
                    .arg(
                        Arg::new("mode")
                            .short('m')
                            .long("mode")
                            .env("TOY_MODE")
                            .default_value("fast")
                            .value_parser(["fast", "slow"])
                            .help("How | to run."),
                    )
                    .arg(
                        Arg::new("verbose")
                            .long("verbose")
                            .action(ArgAction::SetTrue)
                            .help("Say more."),
                    )
                    .arg(Arg::new("secret").long("secret").hide(true))
                    .arg(
                        Arg::new("files")
                            .value_name("FILE")
                            .action(ArgAction::Append)
                            .required(true),
                    ),
            )
            .subcommand(Command::new("internal").hide(true))
            .subcommand(
                Command::new("share")
                    .about("Links.")
                    .subcommand_required(true)
                    .subcommand(Command::new("list").about("List them.")),
            )
    }

    #[test]
    fn renders_every_visible_command_and_argument() {
        let text = render(toy(), "# toy\n");
        assert!(text.starts_with("# toy\n"));
        for heading in [
            "## toy\n",
            "## toy run\n",
            "## toy share\n",
            "## toy share list\n",
        ] {
            assert!(text.contains(heading), "{heading:?} missing:\n{text}");
        }
        assert!(!text.contains("internal"), "a hidden command:\n{text}");
        assert!(!text.contains("secret"), "a hidden flag:\n{text}");
        assert!(
            !text.contains("## toy help"),
            "clap's help command:\n{text}"
        );
        assert!(!text.contains("--help"), "clap's --help flag:\n{text}");
        assert!(
            text.contains(
                "| `-m, --mode <MODE>` | `TOY_MODE` | `fast` | How \\| to run. One of `fast`, `slow`. |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| `--verbose` |  |  | Say more. |"),
            "a switch shows no default:\n{text}"
        );
        assert!(text.contains("| `<FILE>...` |  |  | Required. |"), "{text}");
        assert!(
            text.contains("```text\ntoy run [OPTIONS] <FILE>...\n```"),
            "{text}"
        );
        assert!(
            text.contains("| [`toy share list`](#toy-share-list) | List them. |"),
            "{text}"
        );
    }

    #[test]
    fn vramios_page_is_stable_and_names_every_command() {
        let text = markdown();
        assert_eq!(text, markdown(), "the same text twice");
        for cmd in Cli::command().get_subcommands() {
            let heading = format!("\n## vramio {}\n", cmd.get_name());
            assert!(text.contains(&heading), "{heading:?} missing");
        }
        assert!(text.contains("`VRAMIO_PORT`") && text.contains("`7575`"));
        assert!(!text.contains("Usage:"), "usage lines carry no prefix");
    }
}
