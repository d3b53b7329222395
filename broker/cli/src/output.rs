//! How the CLI prints: aligned tables for people, JSON for scripts, and a
//! progress bar on stderr while a long operation runs (drawn only on a
//! terminal, so scripts and pipes see clean output).

use std::io::Write;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

/// A table: a header and rows of cells, printed with aligned columns.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0usize; cols];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate().take(cols) {
                if i + 1 == cols {
                    line.push_str(c);
                } else {
                    line.push_str(c);
                    line.push_str(&" ".repeat(width[i] - c.chars().count() + 2));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Prints `value` as JSON (one document, pretty) to stdout.
pub fn json<T: Serialize>(value: &T) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).map_err(std::io::Error::other)?;
    writeln!(out)
}

/// The outcome of a change: `json` for scripts, `text` for people.
pub fn done(format: Format, json: serde_json::Value, text: &str) -> std::io::Result<()> {
    match format {
        Format::Json => self::json(&json),
        Format::Table => print(text),
    }
}

pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
}

/// A note for people on stderr (never mixed into JSON on stdout).
pub fn note(text: &str) {
    eprintln!("{text}");
}

pub fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

pub fn seconds(s: f64) -> String {
    if !s.is_finite() {
        return "never".into();
    }
    let s = s.max(0.0) as u64;
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m{}s", s / 60, s % 60),
        7200..=172_799 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub fn progress(len: u64, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:30}] {pos}/{len} ({per_sec}, {eta} left)",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    bar
}

/// A running count on stderr for operations of unknown length (hidden
/// when stderr is not a terminal).
pub fn counter(what: &str) -> indicatif::ProgressBar {
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg}: {pos} ({per_sec})")
    {
        bar.set_style(style);
    }
    bar.set_message(what.to_string());
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns_and_sizes_read_well() {
        let mut t = Table::new(&["TOPIC", "PARTITIONS"]);
        t.row(vec!["orders".into(), "6".into()]);
        t.row(vec!["a".into(), "12".into()]);
        assert_eq!(t.render(), "TOPIC   PARTITIONS\norders  6\na       12\n");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(seconds(f64::INFINITY), "never");
        assert_eq!(seconds(90.0), "90s");
        assert_eq!(seconds(3.0 * 3600.0 + 60.0), "3h1m");
    }
}
