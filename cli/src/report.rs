//! `nrtsim report`: merge the JSON reports of several runs (shards, machines) and compare two.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use conformance::report::{self, Report};

/// Subcommands of `nrtsim report`.
#[derive(clap::Subcommand)]
pub(crate) enum ReportCommand {
    /// Merge the `--json` reports of several runs (the shards of one run, or runs on several
    /// machines) into one report; a vector reported twice for the same backend and instance
    /// type is an error naming both files. Prints each run and the merged summary.
    Merge(MergeArgs),
    /// List the vectors whose outcome differs between two `--json` reports (new and removed ones
    /// too); exit status 1 when any did.
    Diff {
        /// The earlier report.
        old: PathBuf,
        /// The later report.
        new: PathBuf,
        /// Refuse a report larger than this many bytes.
        #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_REPORT_BYTES)]
        max_input_bytes: u64,
    },
}

/// The default cap on each report `nrtsim report` reads: 256 MiB, far above the JSON report of
/// a whole run with every trace (a few MiB), and what a device bundle may hold.
pub(crate) const DEFAULT_MAX_REPORT_BYTES: u64 = 256 << 20;

/// Arguments of `nrtsim report merge`.
#[derive(clap::Args)]
pub(crate) struct MergeArgs {
    /// The reports (`nrtsim conformance --json`), in the order their runs are listed.
    #[arg(required = true, value_name = "REPORT.json")]
    reports: Vec<PathBuf>,
    /// Write the merged JSON report here (default: on stdout when no other output is asked).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write the merged JUnit XML report here.
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Write the merged HTML review page `DIR/index.html`, with each run's machine and runtime
    /// versions.
    #[arg(long, value_name = "DIR")]
    html: Option<PathBuf>,
    /// The vectors folder the page links to (default: `vectors/` here or above, when there is
    /// one; without one the page has no links to the vectors' files).
    #[arg(long, value_name = "DIR")]
    vectors: Option<PathBuf>,
    /// Refuse a report larger than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_REPORT_BYTES)]
    max_input_bytes: u64,
}

/// Reads a `--json` report through the capped reader, at most `limit` bytes, naming the file in
/// every error.
pub(crate) fn read(path: &Path, limit: u64) -> Result<Report> {
    let bytes = crate::input::read_capped(path, limit)?;
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow::anyhow!("{}: expected a JSON report, got bytes that are not UTF-8", path.display())
    })?;
    Ok(Report::from_json(&text, &path.display().to_string())?)
}

/// Runs `nrtsim report`; `Ok(false)` when `diff` found a change.
pub(crate) fn run(command: ReportCommand) -> Result<bool> {
    match command {
        ReportCommand::Merge(args) => merge(args),
        ReportCommand::Diff { old, new, max_input_bytes } => {
            let changes =
                report::diff(&read(&old, max_input_bytes)?, &read(&new, max_input_bytes)?);
            for change in &changes {
                println!("{change}");
            }
            println!(
                "{} case(s) changed outcome between {} and {}",
                changes.len(),
                old.display(),
                new.display()
            );
            Ok(changes.is_empty())
        }
    }
}

fn merge(args: MergeArgs) -> Result<bool> {
    let reports = args
        .reports
        .iter()
        .map(|path| read(path, args.max_input_bytes))
        .collect::<Result<Vec<_>>>()?;
    let merged = report::merge(reports)?;
    let to_stdout = args.json.is_none() && args.junit.is_none() && args.html.is_none();
    // With the JSON on stdout, the listing goes to stderr so that stdout stays one document.
    let say = |line: String| if to_stdout { eprintln!("{line}") } else { println!("{line}") };
    for (index, run) in merged.runs.iter().enumerate() {
        let cases: Vec<_> = merged.cases.iter().filter(|c| c.run == index).cloned().collect();
        say(format!(
            "{}: {}{}{}, {}",
            run.source.as_deref().unwrap_or("?"),
            run.instance_type.as_deref().unwrap_or("unknown machine"),
            run.shard.map(|s| format!(", shard {s}")).unwrap_or_default(),
            run.runtime_versions
                .iter()
                .map(|(backend, version)| format!(", {backend} {version}"))
                .collect::<String>(),
            report::summary_line(report::summarize(&cases))
        ));
    }
    say(format!("merged: {}", report::summary_line(merged.summary)));
    if let Some(path) = &args.json {
        write(path, &merged.to_json())?;
    }
    if let Some(path) = &args.junit {
        write(path, &report::to_junit(&merged.cases))?;
    }
    if let Some(dir) = &args.html {
        let vectors = crate::conformance::vectors_dir(args.vectors.clone()).ok();
        let page = conformance::html::write(dir, &merged, vectors.as_deref())?;
        println!("wrote {}", page.display());
    }
    if to_stdout {
        print!("{}", merged.to_json());
    }
    Ok(true)
}

/// Writes a report file, naming it in the error.
pub(crate) fn write(path: &Path, text: &str) -> Result<()> {
    conformance::output_file::write(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
