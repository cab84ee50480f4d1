//! The HTML review report: one self-contained page a reviewer opens to judge a run.
//!
//! [`render`] turns a [`Report`] into an HTML5 page with everything inline (CSS, a few lines of
//! script for the filters; no network, no assets), and [`write()`] puts it in `DIR/index.html`.
//! The page has the runs (machine, runtime versions, shard, command), a matrix of areas ×
//! backends with a count per outcome, filters, and for every result that did not pass its
//! description, provenance, the hand-written expectations that failed, links to the vector's
//! files, and a side-by-side diff of the golden and the actual trace.
//!
//! Choices:
//! - The diff aligns lines by their longest common subsequence (Myers' diff, after the common
//!   head and tail are set aside, which is most of a trace), so that one inserted line does not mark every
//!   later line. Beyond [`MAX_ALIGN_CELLS`] cells of the table, it pairs lines by index and the
//!   page says so. Unmatched lines between two matches are paired in order, so that a changed
//!   value sits next to the one it replaced.
//! - Tensor bytes in a line (`[00 00 80 3f]`) are also shown as values: of the dtype the line
//!   names (`output 0 Float [4] […]`, torch's names as the trace writes them), or else of the
//!   tensor's dtype in [`CaseDetail::dtypes`], found through the name the trace gave the handle
//!   (`tensor_allocate(…, "input0") -> t1`). The element conversions are `abi::dtype`'s, the
//!   ones the simulator uses, so the page and the runtime cannot disagree on a bit pattern.
//! - Everything that comes from the report is escaped; the page's own markup is the only markup.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use abi::dtype::{Dltype, ScalarType, bf16_bits_to_f32, f16_bits_to_f32, scalar_type_of};

use crate::report::{CaseDetail, CaseResult, Outcome, Report};

/// The largest alignment table (expected × actual lines, after the common head and tail) the
/// diff computes; larger traces are aligned by line index.
pub const MAX_ALIGN_CELLS: usize = 4000 * 4000;

/// The text of a failure message that says the vector's generated inputs are stale.
const STALE: &str = "stale generated input";

/// The page could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    /// The output folder could not be made.
    #[error("creating the HTML report folder {path}: {source}")]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The page could not be written.
    #[error("writing the HTML report {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Writes `dir/index.html` (making `dir`), with links to the vectors' files under
/// `vectors_dir` by a path relative to `dir`; returns the page's path.
///
/// # Errors
/// [`HtmlError::CreateDir`] or [`HtmlError::Write`], naming the path.
pub fn write(
    dir: &Path,
    report: &Report,
    vectors_dir: Option<&Path>,
) -> Result<PathBuf, HtmlError> {
    std::fs::create_dir_all(dir)
        .map_err(|source| HtmlError::CreateDir { path: dir.to_owned(), source })?;
    let link = vectors_dir.and_then(|vectors| relative_path(dir, vectors));
    let path = dir.join("index.html");
    crate::output_file::write(&path, render(report, link.as_deref()).as_bytes())
        .map_err(|source| HtmlError::Write { path: path.clone(), source })?;
    Ok(path)
}

/// The path from folder `from` to `to` with `/` separators (`../vectors`), or `None` when one
/// of them cannot be resolved.
fn relative_path(from: &Path, to: &Path) -> Option<String> {
    let from = std::fs::canonicalize(from).ok()?;
    let to = std::fs::canonicalize(to).ok()?;
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); from.len() - common];
    parts.extend(to[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    Some(if parts.is_empty() { ".".to_owned() } else { parts.join("/") })
}

/// The review page of `report`; `vectors_link` is the path (relative to the page) of the
/// vectors folder, for links to each vector's files.
pub fn render(report: &Report, vectors_link: Option<&str>) -> String {
    let mut page = String::with_capacity(64 * 1024);
    page.push_str(concat!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        "<title>nrtsim conformance report</title>\n<style>\n",
    ));
    page.push_str(CSS);
    page.push_str("</style>\n</head>\n<body>\n");
    render_header(&mut page, report);
    render_matrix(&mut page, report);
    render_filters(&mut page, report);
    page.push_str("<main id=\"cases\">\n");
    for case in report.cases.iter().filter(|c| c.detail.is_some()) {
        render_case(&mut page, report, case, vectors_link);
    }
    page.push_str("</main>\n<script>\n");
    page.push_str(SCRIPT);
    page.push_str("</script>\n</body>\n</html>\n");
    page
}

/// Escapes text for HTML content and attribute values (the JUnit report's escaping: the five
/// markup characters, and control characters as numeric references).
fn escape(text: &str) -> String {
    crate::report::escape_markup(text)
}

/// The outcome's words on the page.
fn label(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "passed",
        Outcome::Failed => "failed",
        Outcome::KnownDifference => "known difference",
        Outcome::UnexpectedPass => "unexpected pass",
        Outcome::GuessRefuted => "guess refuted",
        Outcome::Skipped => "skipped",
    }
}

/// Whether a case failed because its generated inputs are stale.
fn is_stale(case: &CaseResult) -> bool {
    case.message.as_deref().is_some_and(|m| m.contains(STALE))
}

fn render_header(page: &mut String, report: &Report) {
    let summary = crate::report::summarize(&report.cases);
    let _ = writeln!(
        page,
        "<header>\n<h1>nrtsim conformance report</h1>\n<p class=\"summary\" id=\"summary\" \
         data-passed=\"{p}\" data-failed=\"{f}\" data-skipped=\"{s}\">\
         <span class=\"o-passed\">{p} passed</span> \
         <span class=\"o-failed\">{f} failed</span> \
         <span class=\"o-skipped\">{s} skipped</span> \
         <span class=\"muted\">({n} results)</span></p>",
        p = summary.passed,
        f = summary.failed,
        s = summary.skipped,
        n = report.cases.len()
    );
    page.push_str(
        "<table class=\"runs\"><thead><tr><th>run</th><th>source</th><th>machine</th>\
         <th>shard</th><th>runtime versions</th><th>nrtsim</th><th>command</th></tr></thead><tbody>\n",
    );
    for (index, run) in report.runs.iter().enumerate() {
        let versions = run
            .runtime_versions
            .iter()
            .map(|(backend, version)| format!("{}: {}", escape(backend), escape(version)))
            .collect::<Vec<_>>()
            .join("<br>");
        let _ = writeln!(
            page,
            "<tr><td>{index}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td><code>{}</code></td></tr>",
            escape(run.source.as_deref().unwrap_or("this run")),
            escape(run.instance_type.as_deref().unwrap_or("unknown")),
            run.shard.map(|s| s.to_string()).unwrap_or_else(|| "all".to_owned()),
            if versions.is_empty() { "none".to_owned() } else { versions },
            escape(&run.nrtsim_version),
            escape(&run.command.join(" ")),
        );
    }
    page.push_str("</tbody></table>\n</header>\n");
}

/// Counts per outcome, in [`Outcome::ALL`]'s order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts([usize; Outcome::ALL.len()]);

impl Counts {
    fn add(&mut self, outcome: Outcome) {
        if let Some(index) = Outcome::ALL.iter().position(|&o| o == outcome) {
            self.0[index] += 1;
        }
    }

    fn get(&self, outcome: Outcome) -> usize {
        Outcome::ALL.iter().position(|&o| o == outcome).map_or(0, |index| self.0[index])
    }
}

/// Areas × backends: the areas sorted, the backends in the order the report first names them.
#[derive(Debug, Default)]
struct Matrix {
    backends: Vec<String>,
    cells: BTreeMap<String, BTreeMap<String, Counts>>,
}

/// The first part of `area/name`.
fn area(vector: &str) -> &str {
    vector.split('/').next().unwrap_or(vector)
}

fn matrix(report: &Report) -> Matrix {
    let mut matrix = Matrix::default();
    for case in &report.cases {
        if !matrix.backends.contains(&case.backend) {
            matrix.backends.push(case.backend.clone());
        }
        matrix
            .cells
            .entry(area(&case.vector).to_owned())
            .or_default()
            .entry(case.backend.clone())
            .or_default()
            .add(case.outcome);
    }
    matrix
}

/// The short column names of the outcomes in a matrix cell.
fn short(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "pass",
        Outcome::Failed => "fail",
        Outcome::KnownDifference => "known",
        Outcome::UnexpectedPass => "unexp",
        Outcome::GuessRefuted => "refuted",
        Outcome::Skipped => "skip",
    }
}

fn render_matrix(page: &mut String, report: &Report) {
    let matrix = matrix(report);
    page.push_str("<section class=\"matrix\"><h2>Areas × backends</h2>\n<table id=\"matrix\"><thead><tr><th>area</th>");
    for backend in &matrix.backends {
        let _ = write!(page, "<th>{}</th>", escape(backend));
    }
    page.push_str("</tr></thead><tbody>\n");
    for (area, row) in &matrix.cells {
        let _ = write!(page, "<tr><th class=\"area\">{}</th>", escape(area));
        for backend in &matrix.backends {
            let counts = row.get(backend).copied().unwrap_or_default();
            let worst = Outcome::ALL.iter().copied().find(|&o| counts.get(o) > 0);
            let _ = write!(
                page,
                "<td class=\"cell {}\" data-area=\"{}\" data-backend=\"{}\"",
                worst.map_or("empty", |o| o.name()),
                escape(area),
                escape(backend)
            );
            for outcome in Outcome::ALL {
                let _ = write!(page, " data-{}=\"{}\"", outcome.name(), counts.get(outcome));
            }
            page.push('>');
            let parts: Vec<String> = Outcome::ALL
                .iter()
                .filter(|&&o| counts.get(o) > 0)
                .map(|&o| {
                    format!(
                        "<span class=\"o-{}\" title=\"{}\">{} {}</span>",
                        o.name(),
                        label(o),
                        counts.get(o),
                        short(o)
                    )
                })
                .collect();
            page.push_str(&if parts.is_empty() { "–".to_owned() } else { parts.join(" ") });
            page.push_str("</td>");
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</tbody></table></section>\n");
}

/// The filters: each shows the cases it names and hides the others.
const FILTERS: [(&str, &str); 6] = [
    ("all", "all"),
    ("failed", "failed"),
    ("guess_refuted", "guess refuted"),
    ("unexpected_pass", "unexpected pass"),
    ("stale", "stale"),
    ("known_difference", "known difference"),
];

fn render_filters(page: &mut String, report: &Report) {
    let reviewed: Vec<&CaseResult> = report.cases.iter().filter(|c| c.detail.is_some()).collect();
    page.push_str("<nav class=\"filters\" id=\"filters\"><h2>Results to review</h2>");
    for (key, text) in FILTERS {
        let count = reviewed
            .iter()
            .filter(|c| match key {
                "all" => true,
                "stale" => is_stale(c),
                outcome => c.outcome.name() == outcome,
            })
            .count();
        let _ = write!(
            page,
            "<button type=\"button\" data-filter=\"{key}\" class=\"{}\">{text} <b>{count}</b></button>",
            if key == "all" { "on" } else { "" }
        );
    }
    let _ = writeln!(
        page,
        " <span class=\"muted\">showing <span id=\"shown\">{n}</span> of {n}</span></nav>",
        n = reviewed.len()
    );
}

fn render_case(page: &mut String, report: &Report, case: &CaseResult, vectors_link: Option<&str>) {
    let Some(detail) = case.detail.as_deref() else { return };
    let id = case.id();
    let _ = writeln!(
        page,
        "<section class=\"case {outcome}\" id=\"{anchor}\" data-outcome=\"{outcome}\" data-stale=\"{stale}\">\n\
         <h3><a href=\"#{anchor}\">{}</a> <span class=\"badge o-{outcome}\">{}</span>{}</h3>",
        escape(&id),
        label(case.outcome),
        report
            .run_of(case)
            .filter(|_| report.runs.len() > 1)
            .map(|run| format!(
                " <span class=\"muted\">run {} · {}</span>",
                case.run,
                escape(run.instance_type.as_deref().unwrap_or("unknown machine"))
            ))
            .unwrap_or_default(),
        outcome = case.outcome.name(),
        anchor = escape(&id.replace('/', "--")),
        stale = is_stale(case),
    );
    if let Some(message) = &case.message {
        let _ = writeln!(page, "<p class=\"message\">{}</p>", escape(message));
    }
    page.push_str("<dl>");
    let _ = write!(page, "<dt>description</dt><dd>{}</dd>", escape(&detail.description));
    if let Some(provenance) = &detail.provenance {
        let class = if provenance.starts_with("guess") { "guess" } else { "fact" };
        let _ =
            write!(page, "<dt>provenance</dt><dd class=\"{class}\">{}</dd>", escape(provenance));
    }
    if let Some(link) = vectors_link {
        let base = format!("{link}/{}", case.vector);
        let _ = write!(
            page,
            "<dt>files</dt><dd><a href=\"{b}/case.toml\">case.toml</a> · \
             <a href=\"{b}/expected.trace\">expected.trace</a></dd>",
            b = escape(&base)
        );
    }
    if !detail.failures.is_empty() {
        page.push_str("<dt>failed expectations</dt><dd><ul class=\"failures\">");
        for failure in &detail.failures {
            let _ = write!(page, "<li>{}</li>", escape(failure));
        }
        page.push_str("</ul></dd>");
    }
    page.push_str("</dl>\n");
    render_diff(page, detail);
    page.push_str("</section>\n");
}

/// One row of a side-by-side diff: a line of each trace (by index), or a gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Row {
    expected: Option<usize>,
    actual: Option<usize>,
    differs: bool,
}

/// The rows of a diff of `expected` and `actual`, and whether the alignment was by index
/// because the traces were too long for the table.
fn align(expected: &[String], actual: &[String]) -> (Vec<Row>, bool) {
    let head = expected.iter().zip(actual).take_while(|(e, a)| e == a).count();
    let tail = expected[head..]
        .iter()
        .rev()
        .zip(actual[head..].iter().rev())
        .take_while(|(e, a)| e == a)
        .count();
    let same = |i: usize, j: usize| Row { expected: Some(i), actual: Some(j), differs: false };
    let mut rows: Vec<Row> = (0..head).map(|i| same(i, i)).collect();
    let middle_e = &expected[head..expected.len() - tail];
    let middle_a = &actual[head..actual.len() - tail];
    let by_index = middle_e.len().saturating_mul(middle_a.len()) > MAX_ALIGN_CELLS;
    let pairs = if by_index { Vec::new() } else { common_subsequence(middle_e, middle_a) };
    // Between two matched lines (and after the last), the unmatched lines of both sides are
    // paired in order, so that a changed line stands next to the one it replaced.
    let (mut i, mut j) = (0, 0);
    let ends = pairs.iter().copied().chain(std::iter::once((middle_e.len(), middle_a.len())));
    for (match_i, match_j) in ends {
        while i < match_i || j < match_j {
            let e = (i < match_i).then_some(head + i);
            let a = (j < match_j).then_some(head + j);
            let differs = match (e, a) {
                (Some(e), Some(a)) => expected[e] != actual[a],
                _ => true,
            };
            rows.push(Row { expected: e, actual: a, differs });
            i += usize::from(i < match_i);
            j += usize::from(j < match_j);
        }
        if match_i < middle_e.len() {
            rows.push(same(head + match_i, head + match_j));
            i += 1;
            j += 1;
        }
    }
    let (e0, a0) = (expected.len() - tail, actual.len() - tail);
    rows.extend((0..tail).map(|k| same(e0 + k, a0 + k)));
    (rows, by_index)
}

/// The index pairs of the lines a shortest edit script keeps (Myers' diff, the one `nrtsim
/// vectors review` shows), in order: the longest common subsequence in all but rare ties.
fn common_subsequence(a: &[String], b: &[String]) -> Vec<(usize, usize)> {
    similar::capture_diff_slices(similar::Algorithm::Myers, a, b)
        .into_iter()
        .flat_map(|op| match op {
            similar::DiffOp::Equal { old_index, new_index, len } => {
                (0..len).map(|k| (old_index + k, new_index + k)).collect::<Vec<_>>()
            }
            _ => Vec::new(),
        })
        .collect()
}

/// The step each line belongs to (`== step N: name` starts step N; lines before it are `init`).
fn steps(lines: &[String]) -> Vec<String> {
    let mut current = "init".to_owned();
    lines
        .iter()
        .map(|line| {
            if let Some(rest) = line.strip_prefix("== step ") {
                current = rest.split(':').next().unwrap_or(rest).trim().to_owned();
            }
            current.clone()
        })
        .collect()
}

/// The elements of one byte group, each as text (exact) and as a number (for the errors).
type Values = Vec<(String, f64)>;

/// An element type the page can show bytes as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Element {
    /// A torch type, as `output` lines name them and `abi::dtype` decodes them.
    Scalar(ScalarType),
    /// `uint32`, which torch has no type for.
    U32,
    /// `uint64`, which torch has no type for.
    U64,
}

impl Element {
    /// The element type of a neff.json dtype name (`float32`, `bfloat16`, `uint32`).
    fn of_dltype(name: &str) -> Option<Element> {
        match Dltype::from_name(name).ok()? {
            Dltype::Uint32 => Some(Element::U32),
            Dltype::Uint64 => Some(Element::U64),
            dltype => scalar_type_of(dltype.data_type()?).ok().map(Element::Scalar),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Element::Scalar(scalar) => scalar.name(),
            Element::U32 => "uint32",
            Element::U64 => "uint64",
        }
    }

    /// The elements of `bytes` as text and as numbers, or `None` when the length is not a whole
    /// number of elements or the type has no numeric reading (the float8 types).
    fn decode(self, bytes: &[u8]) -> Option<Values> {
        let size = match self {
            Element::Scalar(scalar) => scalar.item_size() as usize,
            Element::U32 => 4,
            Element::U64 => 8,
        };
        if bytes.is_empty() || bytes.len() % size != 0 {
            return None;
        }
        bytes
            .chunks_exact(size)
            .map(|chunk| {
                let mut raw = [0u8; 8];
                raw[..size].copy_from_slice(chunk);
                let (u16_, u32_, u64_) = (
                    u16::from_le_bytes([raw[0], raw[1]]),
                    u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]),
                    u64::from_le_bytes(raw),
                );
                let float = |value: f32| Some((value.to_string(), f64::from(value)));
                match self {
                    Element::Scalar(ScalarType::Float) => float(f32::from_bits(u32_)),
                    Element::Scalar(ScalarType::Half) => float(f16_bits_to_f32(u16_)),
                    Element::Scalar(ScalarType::BFloat16) => float(bf16_bits_to_f32(u16_)),
                    Element::Scalar(ScalarType::Double) => {
                        let value = f64::from_bits(u64_);
                        Some((value.to_string(), value))
                    }
                    Element::Scalar(ScalarType::Bool) => {
                        Some(((raw[0] != 0).to_string(), f64::from(raw[0])))
                    }
                    Element::Scalar(ScalarType::Byte) => int(raw[0]),
                    Element::Scalar(ScalarType::Char) => int(raw[0] as i8),
                    Element::Scalar(ScalarType::Short) => int(u16_ as i16),
                    Element::Scalar(ScalarType::UInt16) => int(u16_),
                    Element::Scalar(ScalarType::Int) => int(u32_ as i32),
                    Element::U32 => int(u32_),
                    Element::Scalar(ScalarType::Long) => int(u64_ as i64),
                    Element::U64 => int(u64_),
                    Element::Scalar(ScalarType::Float8E4m3fn | ScalarType::Float8E5m2) => None,
                }
            })
            .collect()
    }
}

/// An integer element as text (exact) and as a number (for the error columns).
fn int<T: std::fmt::Display>(value: T) -> Option<(String, f64)> {
    let text = value.to_string();
    let number = text.parse::<f64>().unwrap_or(f64::NAN);
    Some((text, number))
}

/// The byte groups of a trace line: each `[..]` whose contents are two-digit hex bytes
/// separated by spaces. An `output` line's first bracket is its shape (`[16]` would read as a
/// byte), so it is skipped.
fn byte_groups(line: &str) -> Vec<Vec<u8>> {
    let mut groups = Vec::new();
    let mut rest = line;
    let mut skip_first = line.starts_with("output ");
    while let Some(start) = rest.find('[') {
        let after = &rest[start + 1..];
        let Some(end) = after.find([']', '[']) else { break };
        let inside = &after[..end];
        rest = &after[end..];
        if after[end..].starts_with('[') {
            continue;
        }
        if std::mem::take(&mut skip_first) {
            continue;
        }
        if let Some(bytes) = abi::hex::parse_hex_spaced(inside).ok().filter(|b| !b.is_empty()) {
            groups.push(bytes);
        }
    }
    groups
}

/// What the page knows of a trace's tensors: the names each handle was given.
struct TensorNames<'a> {
    names: BTreeMap<&'a str, Vec<&'a str>>,
    dtypes: &'a BTreeMap<String, String>,
}

impl<'a> TensorNames<'a> {
    /// Reads `tensor_allocate(…, "name") -> tN` and `add_tensor_to_tensor_set(sN, "name", tN)`.
    fn new(lines: &'a [String], dtypes: &'a BTreeMap<String, String>) -> TensorNames<'a> {
        let mut names: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for line in lines {
            let quoted = || line.split('"').nth(1);
            let handle = if line.starts_with("tensor_allocate(") {
                line.split("-> ").nth(1).and_then(|r| r.split(' ').next())
            } else if line.starts_with("add_tensor_to_tensor_set(") {
                line.split(", ").nth(2).and_then(|r| r.split(')').next())
            } else {
                None
            };
            if let (Some(handle), Some(name)) = (handle, quoted()) {
                names.entry(handle).or_default().push(name);
            }
        }
        TensorNames { names, dtypes }
    }

    /// The element type of a line's bytes: the dtype the line names, or that of its tensor.
    fn element_of(&self, line: &str) -> Option<Element> {
        if let Some(rest) = line.strip_prefix("output ") {
            let word = rest.split(' ').nth(1)?;
            return ScalarType::from_name(word).ok().map(Element::Scalar);
        }
        let args = line.split_once('(')?.1;
        let handle = args.split([',', ' ', ')']).find(|t| {
            t.len() > 1 && t.starts_with('t') && t[1..].bytes().all(|b| b.is_ascii_digit())
        })?;
        self.names
            .get(handle)?
            .iter()
            .find_map(|name| self.dtypes.get(*name))
            .and_then(|dtype| Element::of_dltype(dtype))
    }

    /// The values of each byte group of `line`, with the element type.
    fn values(&self, line: &str) -> Option<(Element, Vec<Values>)> {
        let element = self.element_of(line)?;
        let groups: Vec<_> = byte_groups(line).iter().filter_map(|g| element.decode(g)).collect();
        (!groups.is_empty()).then_some((element, groups))
    }
}

/// The largest absolute and relative differences between the values of two lines, or `None`
/// when their groups or lengths do not correspond.
fn errors(expected: &[Values], actual: &[Values]) -> Option<(f64, f64)> {
    if expected.len() != actual.len() {
        return None;
    }
    let (mut max_abs, mut max_rel) = (0.0f64, 0.0f64);
    for (e, a) in expected.iter().zip(actual) {
        if e.len() != a.len() {
            return None;
        }
        for ((_, e), (_, a)) in e.iter().zip(a) {
            let abs = if e.is_nan() && a.is_nan() || e == a { 0.0 } else { (a - e).abs() };
            let abs = if abs.is_nan() { f64::INFINITY } else { abs };
            let rel = if abs == 0.0 { 0.0 } else { abs / e.abs() };
            max_abs = max_abs.max(abs);
            max_rel = max_rel.max(rel);
        }
    }
    Some((max_abs, max_rel))
}

/// At most this many values of one byte group are written out.
const MAX_SHOWN_VALUES: usize = 64;

fn values_html(element: Element, groups: &[Values]) -> String {
    let mut out = format!("<div class=\"values\">= {}", element.name());
    for group in groups {
        let shown: Vec<&str> =
            group.iter().take(MAX_SHOWN_VALUES).map(|(text, _)| text.as_str()).collect();
        let more = if group.len() > MAX_SHOWN_VALUES { ", …" } else { "" };
        let _ = write!(out, " [{}{more}]", escape(&shown.join(", ")));
    }
    out.push_str("</div>");
    out
}

fn render_diff(page: &mut String, detail: &CaseDetail) {
    if detail.expected.is_empty() && detail.actual.is_empty() {
        page.push_str("<p class=\"muted\">no trace to compare</p>\n");
        return;
    }
    let (rows, by_index) = align(&detail.expected, &detail.actual);
    let n_differing = rows.iter().filter(|r| r.differs).count();
    let _ = write!(
        page,
        "<p class=\"diffinfo\">trace: {} expected line(s), {} actual line(s), \
         <b class=\"ndiff\">{n_differing}</b> row(s) differ",
        detail.expected.len(),
        detail.actual.len()
    );
    if by_index {
        let _ = write!(
            page,
            " <span class=\"warn\">(aligned by line index: the traces are too long for a \
             line-by-line alignment, over {MAX_ALIGN_CELLS} cells)</span>"
        );
    }
    page.push_str("</p>\n");
    if detail.expected.is_empty() {
        page.push_str("<p class=\"muted\">no golden trace (a recorded vector)</p>\n");
    }
    let expected_steps = steps(&detail.expected);
    let actual_steps = steps(&detail.actual);
    let expected_names = TensorNames::new(&detail.expected, &detail.dtypes);
    let actual_names = TensorNames::new(&detail.actual, &detail.dtypes);
    page.push_str(
        "<div class=\"diffwrap\"><table class=\"trace\"><thead><tr><th>step</th><th>#</th>\
         <th>expected</th><th>#</th><th>actual</th></tr></thead><tbody>\n",
    );
    for row in rows {
        let step = row
            .expected
            .map(|i| &expected_steps[i])
            .or(row.actual.map(|j| &actual_steps[j]))
            .map_or("", String::as_str);
        let e_values = row.expected.and_then(|i| expected_names.values(&detail.expected[i]));
        let a_values = row.actual.and_then(|j| actual_names.values(&detail.actual[j]));
        let error = match (&e_values, &a_values) {
            (Some((_, e)), Some((_, a))) if row.differs => errors(e, a),
            _ => None,
        };
        let _ = write!(
            page,
            "<tr{}><td class=\"step\">{}</td>",
            if row.differs { " class=\"diff\"" } else { "" },
            escape(step)
        );
        for (index, lines, values, is_actual) in [
            (row.expected, &detail.expected, &e_values, false),
            (row.actual, &detail.actual, &a_values, true),
        ] {
            match index {
                Some(i) => {
                    let _ = write!(
                        page,
                        "<td class=\"ln\">{}</td><td class=\"line\"><code>{}</code>{}",
                        i + 1,
                        escape(&lines[i]),
                        values.as_ref().map(|(e, g)| values_html(*e, g)).unwrap_or_default()
                    );
                }
                None => page.push_str("<td class=\"ln\"></td><td class=\"line gap\">"),
            }
            if is_actual {
                if let Some((abs, rel)) = error {
                    let _ = write!(
                        page,
                        "<div class=\"err\">max abs error {abs}, max rel error {rel}</div>"
                    );
                }
            }
            page.push_str("</td>");
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</tbody></table></div>\n");
}

const CSS: &str = r#"
:root { --pass: #1a7f37; --fail: #cf222e; --known: #8250df; --unexp: #bc4c00; --refuted: #a40e26;
  --skip: #6e7781; --line: #d0d7de; --bg-diff: #ffebe9; }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 24px 40px;
  color: #1f2328; background: #fff; }
h1 { font-size: 22px; margin: 16px 0 4px; }
h2 { font-size: 16px; margin: 18px 0 6px; }
h3 { font-size: 15px; margin: 0 0 6px; font-family: ui-monospace, monospace; }
h3 a { color: inherit; text-decoration: none; }
code { font: 12px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap;
  word-break: break-all; }
table { border-collapse: collapse; }
th, td { border: 1px solid var(--line); padding: 3px 7px; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; }
.muted { color: #656d76; }
.summary span { font-weight: 600; margin-right: 10px; }
.runs { font-size: 12px; margin-top: 6px; }
.o-passed { color: var(--pass); } .o-failed { color: var(--fail); }
.o-known_difference { color: var(--known); } .o-unexpected_pass { color: var(--unexp); }
.o-guess_refuted { color: var(--refuted); } .o-skipped { color: var(--skip); }
#matrix td.cell { font-size: 12px; white-space: nowrap; }
#matrix td.cell span { margin-right: 6px; }
#matrix td.failed, #matrix td.guess_refuted, #matrix td.unexpected_pass { background: #fff1f0; }
#matrix td.known_difference { background: #f6f0ff; }
#matrix td.passed { background: #f0fff4; }
#matrix th.area { font-weight: 600; }
.filters button { font: inherit; font-size: 13px; margin: 0 4px 4px 0; padding: 3px 10px;
  border: 1px solid var(--line); border-radius: 14px; background: #f6f8fa; cursor: pointer; }
.filters button.on { background: #0969da; color: #fff; border-color: #0969da; }
.case { border: 1px solid var(--line); border-left: 5px solid var(--fail); border-radius: 6px;
  padding: 10px 14px; margin: 12px 0; }
.case.known_difference { border-left-color: var(--known); }
.case.unexpected_pass { border-left-color: var(--unexp); }
.case.guess_refuted { border-left-color: var(--refuted); }
.badge { font: 600 11px system-ui, sans-serif; padding: 1px 8px; border-radius: 10px;
  border: 1px solid currentColor; vertical-align: middle; }
.message { font-family: ui-monospace, monospace; font-size: 12px; background: #fff8c5;
  padding: 4px 8px; margin: 4px 0; white-space: pre-wrap; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0; }
dt { color: #656d76; } dd { margin: 0; }
dd.guess { color: var(--unexp); } ul.failures { margin: 0; padding-left: 18px; }
.diffinfo { margin: 6px 0 4px; font-size: 12px; } .warn { color: var(--unexp); }
.diffwrap { max-height: 640px; overflow: auto; border: 1px solid var(--line); }
table.trace { width: 100%; table-layout: fixed; }
table.trace th, table.trace td { border-width: 0 0 1px 0; padding: 1px 6px; }
table.trace col, table.trace .step { width: 48px; color: #656d76; font-size: 11px; }
table.trace .ln { width: 40px; color: #8c959f; font-size: 11px; text-align: right; }
table.trace th:nth-child(1) { width: 48px; } table.trace th:nth-child(2),
table.trace th:nth-child(4) { width: 40px; }
tr.diff td.line { background: var(--bg-diff); } tr.diff td.ln { color: var(--fail); font-weight: 600; }
td.gap, tr.diff td.gap { background: repeating-linear-gradient(45deg, #f6f8fa, #f6f8fa 4px,
  #fff 4px, #fff 8px); }
.values { font: 11px ui-monospace, monospace; color: #0550ae; }
.err { font-size: 11px; color: var(--fail); font-weight: 600; }
"#;

const SCRIPT: &str = r#"
(function () {
  var buttons = document.querySelectorAll('#filters button');
  var cases = document.querySelectorAll('section.case');
  function apply(filter) {
    var shown = 0;
    cases.forEach(function (c) {
      var on = filter === 'all' || (filter === 'stale' ? c.dataset.stale === 'true'
        : c.dataset.outcome === filter);
      c.hidden = !on;
      if (on) shown++;
    });
    buttons.forEach(function (b) { b.classList.toggle('on', b.dataset.filter === filter); });
    document.getElementById('shown').textContent = shown;
    document.body.dataset.filter = filter;
  }
  buttons.forEach(function (b) {
    b.addEventListener('click', function () { apply(b.dataset.filter); });
  });
  apply(location.hash.indexOf('#filter=') === 0 ? location.hash.slice(8) : 'all');
})();
"#;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::RunInfo;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|l| (*l).to_owned()).collect()
    }

    fn case(vector: &str, backend: &str, outcome: Outcome) -> CaseResult {
        let reviewed = !matches!(outcome, Outcome::Passed | Outcome::Skipped);
        CaseResult {
            vector: vector.to_owned(),
            backend: backend.to_owned(),
            outcome,
            duration: Duration::from_millis(3),
            message: reviewed.then(|| "trace differs".to_owned()),
            first_diff: None,
            run: 0,
            detail: reviewed.then(Box::default),
        }
    }

    #[test]
    fn a_script_tag_in_a_message_is_escaped() {
        let mut failing = case("lifecycle/x", "sim", Outcome::Failed);
        failing.message = Some("got <script>alert('x')</script> & more".to_owned());
        let page = render(&Report::new(RunInfo::default(), vec![failing]), None);
        assert!(page.contains("got &lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &amp; more"));
        assert_eq!(page.matches("<script>").count(), 1, "only the page's own script");
    }

    #[test]
    fn float_bytes_decode_as_their_dtype() {
        let decode = |element, bytes: &[u8]| {
            element_texts(Element::decode(element, bytes).expect("whole elements"))
        };
        assert_eq!(decode(Element::Scalar(ScalarType::Float), &[0x00, 0x00, 0x80, 0x3f]), ["1"]);
        assert_eq!(decode(Element::Scalar(ScalarType::BFloat16), &[0x80, 0x3f]), ["1"]);
        assert_eq!(decode(Element::Scalar(ScalarType::Half), &[0x00, 0x3c]), ["1"]);
        assert_eq!(decode(Element::Scalar(ScalarType::Float), &[0, 0, 0xc0, 0x3f]), ["1.5"]);
        assert_eq!(decode(Element::Scalar(ScalarType::Half), &[0x00, 0xc0]), ["-2"]);
        assert_eq!(decode(Element::Scalar(ScalarType::Int), &[0xff, 0xff, 0xff, 0xff]), ["-1"]);
        assert_eq!(decode(Element::U32, &[0xff, 0xff, 0xff, 0xff]), ["4294967295"]);
        assert_eq!(decode(Element::Scalar(ScalarType::Long), &[2, 1, 0, 0, 0, 0, 0, 0]), ["258"]);
        assert_eq!(Element::decode(Element::Scalar(ScalarType::Float), &[0, 0, 0x80]), None);
    }

    fn element_texts(values: Values) -> Vec<String> {
        values.into_iter().map(|(text, _)| text).collect()
    }

    #[test]
    fn a_diff_marks_the_changed_and_the_added_line_only() {
        let (rows, by_index) = align(&lines(&["a", "b", "c"]), &lines(&["a", "x", "c", "d"]));
        assert!(!by_index);
        let marked: Vec<usize> =
            rows.iter().enumerate().filter(|(_, r)| r.differs).map(|(i, _)| i + 1).collect();
        assert_eq!(marked, [2, 4]);
        assert_eq!(rows[1], Row { expected: Some(1), actual: Some(1), differs: true });
        assert_eq!(rows[3], Row { expected: None, actual: Some(3), differs: true });
    }

    #[test]
    fn an_inserted_line_does_not_mark_the_lines_after_it() {
        let (rows, _) = align(&lines(&["a", "b", "c", "d"]), &lines(&["a", "new", "b", "c", "d"]));
        let marked: Vec<(Option<usize>, Option<usize>)> =
            rows.iter().filter(|r| r.differs).map(|r| (r.expected, r.actual)).collect();
        assert_eq!(marked, [(None, Some(1))]);
        assert_eq!(rows.len(), 5);
    }

    #[test]
    fn the_matrix_counts_each_outcome_per_area_and_backend() {
        let report = Report::new(
            RunInfo::default(),
            vec![
                case("lifecycle/a", "sim", Outcome::Passed),
                case("lifecycle/b", "sim", Outcome::Failed),
                case("lifecycle/c", "sim", Outcome::Passed),
                case("lifecycle/a", "capi", Outcome::KnownDifference),
                case("tensors/a", "sim", Outcome::Skipped),
                case("tensors/a", "capi", Outcome::GuessRefuted),
            ],
        );
        let matrix = matrix(&report);
        assert_eq!(matrix.backends, ["sim", "capi"]);
        let cell = |area: &str, backend: &str, outcome| matrix.cells[area][backend].get(outcome);
        assert_eq!(cell("lifecycle", "sim", Outcome::Passed), 2);
        assert_eq!(cell("lifecycle", "sim", Outcome::Failed), 1);
        assert_eq!(cell("lifecycle", "capi", Outcome::KnownDifference), 1);
        assert_eq!(cell("lifecycle", "capi", Outcome::Passed), 0);
        assert_eq!(cell("tensors", "sim", Outcome::Skipped), 1);
        assert_eq!(cell("tensors", "capi", Outcome::GuessRefuted), 1);
        assert!(!matrix.cells["tensors"].contains_key("nrt"));
        let page = render(&report, None);
        assert!(page.contains(
            "data-area=\"lifecycle\" data-backend=\"sim\" data-failed=\"1\" \
             data-guess_refuted=\"0\" data-unexpected_pass=\"0\" data-known_difference=\"0\" \
             data-passed=\"2\" data-skipped=\"0\""
        ));
    }

    #[test]
    fn bytes_take_the_dtype_of_the_line_or_of_the_named_tensor() {
        let trace = lines(&[
            "tensor_allocate(DEVICE, 0, 4, \"input0\") -> t1 NRT_SUCCESS",
            "tensor_write(t1, 0, [00 3c 00 c0]) -> NRT_SUCCESS",
            "output 0 Float [16] [00 00 80 3f]",
        ]);
        let dtypes = BTreeMap::from([("input0".to_owned(), "float16".to_owned())]);
        let names = TensorNames::new(&trace, &dtypes);
        let (element, groups) = names.values(&trace[1]).expect("input0 is float16");
        assert_eq!(element, Element::Scalar(ScalarType::Half));
        assert_eq!(element_texts(groups[0].clone()), ["1", "-2"]);
        let (element, groups) = names.values(&trace[2]).expect("the line names Float");
        assert_eq!(element, Element::Scalar(ScalarType::Float));
        assert_eq!(groups.len(), 1, "the shape [16] is not a byte");
        assert_eq!(element_texts(groups[0].clone()), ["1"]);
    }

    #[test]
    fn byte_groups_are_brackets_of_spaced_hex_and_nothing_else() {
        let line = "tensor_read(t1, 0, 4) -> [é0 00] [00 ff] [AB cd] [] [0 1] [00  ff] [ü]";
        assert_eq!(byte_groups(line), [vec![0x00, 0xff], vec![0xab, 0xcd]]);
    }

    #[test]
    fn the_errors_are_the_largest_absolute_and_relative_differences() {
        let values = |numbers: &[f64]| vec![numbers.iter().map(|&n| (String::new(), n)).collect()];
        assert_eq!(errors(&values(&[1.0, 4.0]), &values(&[1.5, 3.0])), Some((1.0, 0.5)));
        assert_eq!(errors(&values(&[1.0]), &values(&[1.0, 2.0])), None);
    }

    #[test]
    fn steps_start_at_their_marker_lines() {
        let steps = steps(&lines(&["init()", "== step 1: model_new", "load()", "== step 2: x"]));
        assert_eq!(steps, ["init", "1", "1", "2"]);
    }

    #[test]
    fn int16_values_are_signed_on_the_page_and_in_the_errors() {
        // -1 is ff ff: shown as -1, and 1 against it is an error of 2, not of 65534.
        let mut failing = case("tensors/int16", "sim", Outcome::Failed);
        failing.detail = Some(Box::new(CaseDetail {
            expected: lines(&[
                "tensor_allocate(DEVICE, 0, 4, \"input0\") -> t1 NRT_SUCCESS",
                "tensor_write(t1, 0, [ff ff 02 00]) -> NRT_SUCCESS",
                "output 0 Short [2] [00 80 fe ff]",
            ]),
            actual: lines(&[
                "tensor_allocate(DEVICE, 0, 4, \"input0\") -> t1 NRT_SUCCESS",
                "tensor_write(t1, 0, [01 00 02 00]) -> NRT_SUCCESS",
                "output 0 Short [2] [00 80 ff ff]",
            ]),
            dtypes: BTreeMap::from([("input0".to_owned(), "int16".to_owned())]),
            ..CaseDetail::default()
        }));
        let page = render(&Report::new(RunInfo::default(), vec![failing]), None);
        assert!(page.contains("= Short [-1, 2]</div>"), "{page}");
        assert!(page.contains("= Short [1, 2]</div>"), "{page}");
        assert!(page.contains("max abs error 2, max rel error 2</div>"), "{page}");
        // The output line: -32768 and -2 against -32768 and -1.
        assert!(page.contains("= Short [-32768, -2]</div>"), "{page}");
        assert!(page.contains("max abs error 1, max rel error 0.5</div>"), "{page}");
    }
}
