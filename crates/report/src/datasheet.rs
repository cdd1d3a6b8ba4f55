//! The rendering of a suite's tables (`linkperf suite`): datasheets as vendors publish them
//! (`Test | Min | Typ | Max | Unit | Notes`), by-size tables, and runs' own tables; as aligned text or as
//! Markdown. The figures come from `linkperf_core::datasheet`.

use std::io::{self, Write};

use linkperf_core::datasheet::{DatasheetRow, Table};

use crate::Reporter;

/// How a suite's tables are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasheetFormat {
    /// Aligned text.
    Table,
    /// Markdown.
    Markdown,
}

/// Writes every table of a suite, under `title`.
pub fn write_tables(title: &str, tables: &[Table], format: DatasheetFormat, out: &mut dyn Write) -> io::Result<()> {
    let markdown = format == DatasheetFormat::Markdown;
    writeln!(out, "{}{title}\n", if markdown { "# " } else { "" })?;
    for table in tables {
        match table {
            Table::Datasheet { title, rows } => {
                heading(title, markdown, out)?;
                let mut cells = vec![["Test", "Min", "Typ", "Max", "Unit", "Notes"].map(String::from).to_vec()];
                cells.extend(rows.iter().map(datasheet_cells));
                grid(&cells, markdown, out)?;
            }
            Table::BySize { title, figure, columns, rows, note } => {
                heading(title, markdown, out)?;
                let mut cells =
                    vec![std::iter::once("Size (bytes)".to_string()).chain(columns.iter().cloned()).collect()];
                for (size, values) in rows {
                    cells.push(std::iter::once(size.to_string()).chain(values.iter().map(|v| value(*v))).collect());
                }
                grid(&cells, markdown, out)?;
                writeln!(out, "\n{figure}; {note}")?;
            }
            Table::Runs { title, runs } => {
                heading(title, markdown, out)?;
                for run in runs {
                    if markdown {
                        writeln!(out, "```text")?;
                    }
                    crate::TableReporter.render(run, out)?;
                    if markdown {
                        writeln!(out, "```")?;
                    }
                }
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

fn heading(title: &str, markdown: bool, out: &mut dyn Write) -> io::Result<()> {
    match markdown {
        true => writeln!(out, "## {title}\n"),
        false => writeln!(out, "{title}\n{}", "-".repeat(title.chars().count())),
    }
}

fn datasheet_cells(row: &DatasheetRow) -> Vec<String> {
    let note = match (&row.reason, &row.remark) {
        (Some(reason), _) => format!("NOT MEASURED: {reason}; {}", row.note),
        (None, Some(remark)) => format!("{}; {remark}", row.note),
        (None, None) => row.note.clone(),
    };
    vec![row.test.clone(), value(row.min), value(row.typ), value(row.max), row.unit.clone(), note]
}

/// A figure with at least three significant digits (`0.240`, not `0.24` or `0`).
fn value(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), linkperf_core::units::format_significant)
}

/// An aligned grid (numbers right-aligned), or a Markdown table.
fn grid(cells: &[Vec<String>], markdown: bool, out: &mut dyn Write) -> io::Result<()> {
    if markdown {
        for (i, row) in cells.iter().enumerate() {
            writeln!(out, "| {} |", row.join(" | "))?;
            if i == 0 {
                writeln!(out, "|{}", " --- |".repeat(row.len()))?;
            }
        }
        return Ok(());
    }
    let columns = cells.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| cells.iter().map(|r| r.get(c).map_or(0, |s| s.chars().count())).max().unwrap_or(0))
        .collect();
    for row in cells {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, &w)| {
                let numeric = cell.parse::<f64>().is_ok() || cell == "-";
                if numeric {
                    format!("{cell:>w$}")
                } else {
                    format!("{cell:<w$}")
                }
            })
            .collect();
        writeln!(out, "{}", line.join("  ").trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::datasheet::{by_size_rows, datasheet_rows, Figure, SizeFigure};
    use linkperf_core::fixture;

    fn tables() -> Vec<Table> {
        let mut rows = datasheet_rows(
            "Round trip",
            Figure::Rtt,
            "",
            "TCP, request and reply of SIZE bytes",
            &[fixture::latency_run()],
        );
        rows.extend(datasheet_rows(
            "TCP throughput, one way",
            Figure::Goodput,
            "Mbit/s",
            "2 streams, 3 s",
            &[fixture::throughput_run()],
        ));
        rows.push(DatasheetRow::not_measured(
            "Peak throughput, 256 KiB buffers",
            "TCP, 10 s",
            "`linkperf throughput --buffer 256k` failed: no receiver figure".into(),
        ));
        rows.extend(datasheet_rows(
            "UDP, maximum rate with 0 % loss",
            Figure::ZeroLoss,
            "",
            "1472-byte datagrams",
            &[fixture::ratesearch_run()],
        ));
        let (a, b) = (fixture::latency_run(), fixture::latency_run());
        vec![
            Table::Datasheet { title: "Datasheet".into(), rows },
            Table::BySize {
                title: "Round trip by message size".into(),
                figure: SizeFigure::RttP50.describe().into(),
                columns: vec!["inter-node (TCP)".into(), "intra-node (Unix)".into()],
                rows: by_size_rows(SizeFigure::RttP50, &[Some(&a), Some(&b)]),
                note: "10 000 round trips per size".into(),
            },
        ]
    }

    #[test]
    fn a_datasheet_matches_snapshot() {
        let mut out = Vec::new();
        write_tables("Link datasheet", &tables(), DatasheetFormat::Table, &mut out).unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }

    #[test]
    fn a_datasheet_in_markdown_matches_snapshot() {
        let mut out = Vec::new();
        write_tables("Link datasheet", &tables(), DatasheetFormat::Markdown, &mut out).unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }
}
