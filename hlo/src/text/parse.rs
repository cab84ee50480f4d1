//! The HLO text parser: a hand-written recursive descent over the characters, since the grammar's
//! tokens depend on context (`3x3`, `1_1x0_0`, `bf01_oi01->bf01` and `-inf` are each one value).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use super::error::TextError;
use super::literal::{self, Elem};
use super::names;
use crate::limits::LoadLimits;
use crate::proto::{
    CholeskyOptions, CollectiveDeviceListProto, ConvolutionDimensionNumbers, DotDimensionNumbers,
    FftType, FrontendAttributes, GatherDimensionNumbers, HloComputationProto,
    HloInputOutputAliasProto, HloInstructionProto, HloModuleProto, IotaReplicaGroupListProto, Kind,
    LayoutProto, LiteralProto, OpMetadata, PaddingConfig, PrecisionConfig, PrimitiveType,
    ProgramShapeProto, RandomAlgorithm, RandomDistribution, ReplicaGroup, ScatterDimensionNumbers,
    ShapeProto, SourceTarget, TileProto, TriangularSolveOptions, Window, WindowDimension,
    hlo_input_output_alias_proto::AliasEntryProto, hlo_instruction_proto::SliceDimensions,
    padding_config::PaddingConfigDimension, precision_config::Precision,
    triangular_solve_options::Transpose,
};

/// Deepest nesting of tuples, literals and skipped values; far beyond anything XLA prints, and
/// low enough that recursion cannot overflow the stack.
const MAX_DEPTH: usize = 64;

/// The comparison directions of `compare`.
pub(crate) const DIRECTIONS: &[&str] = &["EQ", "NE", "LT", "LE", "GT", "GE"];
/// The comparison types of `compare`.
pub(crate) const COMPARISON_TYPES: &[&str] =
    &["FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED", "PARTIALORDER"];

/// Parses HLO text into a module, assigning ids as described in the [module docs](super).
/// There is no count limit: [`crate::load_module_with_limits`] parses under one.
///
/// # Errors
/// A [`TextError`] with the line and column of the first problem.
pub fn parse_module(src: &str) -> Result<HloModuleProto, TextError> {
    let unlimited = LoadLimits { max_computations: usize::MAX, max_instructions: usize::MAX };
    parse_module_within(src, &unlimited).map_err(|stop| match stop {
        Stop::Text(e) => e,
        // A count cannot pass usize::MAX; the error is still said in the text's terms.
        Stop::TooManyComputations { limit } | Stop::TooManyInstructions { limit } => {
            TextError::Invalid {
                line: 1,
                column: 1,
                message: format!("expected at most {limit} computations and instructions"),
            }
        }
    })
}

/// Why [`parse_module_within`] stopped: the text is not a module, or a count reached its limit.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The text does not parse.
    Text(TextError),
    /// The text starts one more computation than `limit`.
    TooManyComputations { limit: usize },
    /// The text starts one more instruction, over all computations, than `limit`.
    TooManyInstructions { limit: usize },
}

impl From<TextError> for Stop {
    fn from(e: TextError) -> Stop {
        Stop::Text(e)
    }
}

/// [`parse_module`] under count limits, counted as the text is read: the parse stops when a
/// computation or instruction past a limit begins, before reading it, so text over a limit costs
/// no more than the module at the limit.
pub(crate) fn parse_module_within(src: &str, limits: &LoadLimits) -> Result<HloModuleProto, Stop> {
    let mut p = Parser { src, pos: 0, depth: 0, limits: *limits, n_instructions: 0 };
    p.module()
}

/// A called computation as written, resolved to an id once every computation is known.
#[derive(Debug, Default)]
struct Calls {
    /// `to_apply`, `calls`, `called_computations`, `branch_computations`, in order.
    list: Vec<(usize, String)>,
    body: Option<(usize, String)>,
    condition: Option<(usize, String)>,
    true_computation: Option<(usize, String)>,
    false_computation: Option<(usize, String)>,
    select: Option<(usize, String)>,
    scatter: Option<(usize, String)>,
}

/// An instruction with its references still by name.
struct PendingInstruction {
    proto: HloInstructionProto,
    name_pos: usize,
    is_root: bool,
    operands: Vec<(usize, String)>,
    control_predecessors: Vec<(usize, String)>,
    calls: Calls,
}

struct PendingComputation {
    name: String,
    name_pos: usize,
    is_entry: bool,
    instructions: Vec<PendingInstruction>,
    end_pos: usize,
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
    limits: LoadLimits,
    /// Instructions begun so far, over all computations.
    n_instructions: usize,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '+')
}

impl<'a> Parser<'a> {
    // ---- positions and errors -----------------------------------------------------------

    fn line_col(&self, pos: usize) -> (usize, usize) {
        let before = &self.src[..pos.min(self.src.len())];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[line_start..].chars().count() + 1)
    }

    fn found_at(&self, pos: usize) -> String {
        let rest = &self.src[pos.min(self.src.len())..];
        let Some(first) = rest.chars().next() else { return "end of input".into() };
        let token: String = if is_word_char(first) || first == '%' {
            rest.chars().take_while(|&c| is_word_char(c) || c == '%').take(40).collect()
        } else {
            first.to_string()
        };
        format!("`{token}`")
    }

    fn unexpected_at(&self, pos: usize, expected: impl Into<String>) -> TextError {
        let (line, column) = self.line_col(pos);
        TextError::Unexpected { line, column, expected: expected.into(), found: self.found_at(pos) }
    }

    fn unexpected(&mut self, expected: impl Into<String>) -> TextError {
        self.skip_ws();
        self.unexpected_at(self.pos, expected)
    }

    fn invalid_at(&self, pos: usize, message: impl Into<String>) -> TextError {
        let (line, column) = self.line_col(pos);
        TextError::Invalid { line, column, message: message.into() }
    }

    fn undefined_at(&self, pos: usize, what: &'static str, name: &str) -> TextError {
        let (line, column) = self.line_col(pos);
        TextError::Undefined { line, column, what, name: name.into() }
    }

    fn duplicate_at(&self, pos: usize, what: &'static str, name: &str) -> TextError {
        let (line, column) = self.line_col(pos);
        TextError::Duplicate { line, column, what, name: name.into() }
    }

    fn enter(&mut self) -> Result<(), TextError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(
                self.invalid_at(self.pos, format!("nesting deeper than {MAX_DEPTH} levels"))
            );
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ---- characters ---------------------------------------------------------------------

    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn peek_raw(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// Skips whitespace and `/* */` and `//` comments.
    fn skip_ws(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with("/*") {
                self.pos += trimmed.find("*/").map_or(trimmed.len(), |i| i + 2);
            } else if trimmed.starts_with("//") {
                self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
            } else {
                return;
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.peek_raw()
    }

    fn eat(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> Result<(), TextError> {
        if self.eat(s) { Ok(()) } else { Err(self.unexpected(format!("`{s}`"))) }
    }

    /// Eats `keyword` when it is a whole word here.
    fn eat_keyword(&mut self, keyword: &str) -> bool {
        self.skip_ws();
        let rest = self.rest();
        if rest.starts_with(keyword) && !rest[keyword.len()..].starts_with(is_name_char) {
            self.pos += keyword.len();
            true
        } else {
            false
        }
    }

    fn scan(&mut self, accept: impl Fn(char) -> bool) -> &'a str {
        let rest = self.rest();
        let len = rest.find(|c| !accept(c)).unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    /// A name, with or without `%`: letters, digits, `_`, `.` and `-` (but not the `-` of `->`).
    fn name(&mut self, what: &str) -> Result<(usize, &'a str), TextError> {
        self.skip_ws();
        let start = self.pos;
        self.eat("%");
        let rest = self.rest();
        let mut len = 0;
        for (i, c) in rest.char_indices() {
            if !is_name_char(c) || (c == '-' && rest[i + 1..].starts_with('>')) {
                break;
            }
            len = i + c.len_utf8();
        }
        if len == 0 {
            self.pos = start;
            return Err(self.unexpected(what.to_string()));
        }
        self.pos += len;
        Ok((start, &rest[..len]))
    }

    /// The name a computation or instruction defines: as [`Self::name`], but a keyword of the
    /// text form must be written with its `%` (`%ROOT`), as XLA's parser requires; bare, it is
    /// refused rather than read as a name that would print differently.
    fn defined_name(&mut self, what: &str) -> Result<(usize, &'a str), TextError> {
        let (pos, name) = self.name(what)?;
        if names::KEYWORDS.contains(&name) && !self.src[pos..].starts_with('%') {
            return Err(self.invalid_at(
                pos,
                format!("expected {what}, found the keyword `{name}`; write a name that is a keyword as `%{name}`"),
            ));
        }
        Ok((pos, name))
    }

    /// A bare word: a number, a keyword, an enum spelling.
    fn word(&mut self, what: &str) -> Result<(usize, &'a str), TextError> {
        self.skip_ws();
        let start = self.pos;
        let w = self.scan(is_word_char);
        if w.is_empty() { Err(self.unexpected(what.to_string())) } else { Ok((start, w)) }
    }

    fn int(&mut self) -> Result<i64, TextError> {
        let (pos, w) = self.word("an integer")?;
        w.parse::<i64>().map_err(|_| self.unexpected_at(pos, "an integer"))
    }

    fn bool_value(&mut self) -> Result<bool, TextError> {
        let (pos, w) = self.word("true or false")?;
        match w {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.unexpected_at(pos, "true or false")),
        }
    }

    /// A quoted string with C escapes, as bytes (backend configs need not be UTF-8).
    fn string_bytes(&mut self) -> Result<Vec<u8>, TextError> {
        self.skip_ws();
        if !self.rest().starts_with('"') {
            return Err(self.unexpected("a quoted string"));
        }
        let start = self.pos;
        self.pos += 1;
        let mut out = Vec::new();
        let bytes = self.src.as_bytes();
        loop {
            let Some(&b) = bytes.get(self.pos) else {
                return Err(self.invalid_at(start, "string is not terminated"));
            };
            self.pos += 1;
            match b {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&e) = bytes.get(self.pos) else {
                        return Err(self.invalid_at(start, "string is not terminated"));
                    };
                    self.pos += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'0'..=b'7' => {
                            let mut v = u32::from(e - b'0');
                            for _ in 0..2 {
                                match bytes.get(self.pos) {
                                    Some(&d @ b'0'..=b'7') => {
                                        v = v * 8 + u32::from(d - b'0');
                                        self.pos += 1;
                                    }
                                    _ => break,
                                }
                            }
                            out.push(u8::try_from(v).map_err(|_| {
                                self.invalid_at(self.pos, "octal escape above \\377")
                            })?);
                        }
                        b'x' => {
                            let hex: String = self.src[self.pos..]
                                .chars()
                                .take_while(char::is_ascii_hexdigit)
                                .take(2)
                                .collect();
                            let v = u8::from_str_radix(&hex, 16).map_err(|_| {
                                self.unexpected_at(self.pos, "two hex digits after \\x")
                            })?;
                            self.pos += hex.len();
                            out.push(v);
                        }
                        other => out.push(other),
                    }
                }
                other => out.push(other),
            }
        }
    }

    fn string(&mut self) -> Result<String, TextError> {
        self.skip_ws();
        let start = self.pos;
        let bytes = self.string_bytes()?;
        String::from_utf8(bytes).map_err(|_| self.invalid_at(start, "string is not valid UTF-8"))
    }

    /// `{}` or `{1,2,3}`.
    fn int_list(&mut self) -> Result<Vec<i64>, TextError> {
        self.expect("{")?;
        let mut out = Vec::new();
        if self.eat("}") {
            return Ok(out);
        }
        loop {
            out.push(self.int()?);
            if self.eat("}") {
                return Ok(out);
            }
            if !self.eat(",") {
                return Err(self.unexpected("`,` or `}`"));
            }
        }
    }

    /// `{{0,1},{2,3}}`.
    fn int_list_list(&mut self) -> Result<Vec<Vec<i64>>, TextError> {
        self.expect("{")?;
        let mut out = Vec::new();
        if self.eat("}") {
            return Ok(out);
        }
        loop {
            out.push(self.int_list()?);
            if self.eat("}") {
                return Ok(out);
            }
            if !self.eat(",") {
                return Err(self.unexpected("`,` or `}`"));
            }
        }
    }

    /// Skips one attribute value of unknown meaning: a run of characters up to whitespace, `,`
    /// or an unbalanced closer, where brackets and strings may hold anything.
    fn skip_value(&mut self) -> Result<(), TextError> {
        self.skip_ws();
        let start = self.pos;
        let mut stack: Vec<char> = Vec::new();
        loop {
            let Some(c) = self.peek_raw() else {
                if stack.is_empty() {
                    break;
                }
                return Err(
                    self.invalid_at(start, "attribute value is not closed before the end of input")
                );
            };
            match c {
                '"' => {
                    self.string_bytes()?;
                    continue;
                }
                '{' | '[' | '(' => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(self.invalid_at(
                            self.pos,
                            format!("nesting deeper than {MAX_DEPTH} levels"),
                        ));
                    }
                    stack.push(match c {
                        '{' => '}',
                        '[' => ']',
                        _ => ')',
                    });
                }
                '}' | ']' | ')' => match stack.last() {
                    Some(&close) if close == c => {
                        stack.pop();
                    }
                    Some(&close) => return Err(self.unexpected_at(self.pos, format!("`{close}`"))),
                    None => break,
                },
                ',' if stack.is_empty() => break,
                c if c.is_whitespace() && stack.is_empty() => break,
                _ => {}
            }
            self.pos += c.len_utf8();
        }
        Ok(())
    }

    // ---- shapes -------------------------------------------------------------------------

    /// Whether a shape starts here (a `(` or a type name directly followed by `[`).
    fn at_shape(&mut self) -> bool {
        self.skip_ws();
        let rest = self.rest();
        if rest.starts_with('(') {
            return true;
        }
        let len = rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(rest.len());
        names::type_from_name(&rest[..len]).is_some() && rest[len..].starts_with('[')
    }

    fn shape(&mut self) -> Result<ShapeProto, TextError> {
        self.skip_ws();
        if self.eat("(") {
            self.enter()?;
            let mut tuple_shapes = Vec::new();
            if !self.eat(")") {
                loop {
                    tuple_shapes.push(self.shape()?);
                    if self.eat(")") {
                        break;
                    }
                    if !self.eat(",") {
                        return Err(self.unexpected("`,` or `)` in a tuple shape"));
                    }
                }
            }
            self.leave();
            return Ok(ShapeProto {
                element_type: PrimitiveType::Tuple.into(),
                tuple_shapes,
                ..Default::default()
            });
        }
        let start = self.pos;
        let word = self.scan(|c| c.is_ascii_alphanumeric());
        let Some(ty) = names::type_from_name(word) else {
            return Err(
                self.unexpected_at(start, "a shape such as `f32[4,8]` or `(s32[], f32[2])`")
            );
        };
        if !self.rest().starts_with('[') {
            return Err(self.unexpected_at(self.pos, "`[` after the element type"));
        }
        self.pos += 1;
        let mut dimensions = Vec::new();
        let mut dynamic = Vec::new();
        if !self.eat("]") {
            loop {
                let is_dynamic = self.eat("<=");
                self.skip_ws();
                if self.rest().starts_with('?') {
                    return Err(self.invalid_at(
                        self.pos,
                        "unbounded dynamic dimensions (`?`) are not supported",
                    ));
                }
                let pos = self.pos;
                let d = self.int()?;
                if d < 0 {
                    return Err(self.invalid_at(
                        pos,
                        format!("expected a dimension size of at least 0, found {d}"),
                    ));
                }
                dimensions.push(d);
                dynamic.push(is_dynamic);
                if self.eat("]") {
                    break;
                }
                if !self.eat(",") {
                    return Err(self.unexpected("`,` or `]` in the dimensions"));
                }
            }
        }
        // XLA writes one flag per dimension, dynamic or not.
        let is_dynamic_dimension = dynamic;
        // A layout follows directly, without space, as XLA prints it.
        let mut layout = if self.rest().starts_with('{') { Some(self.layout()?) } else { None };
        // A scalar's layout is empty; the printer omits it, so the parser drops it too.
        if dimensions.is_empty() && layout == Some(LayoutProto::default()) {
            layout = None;
        }
        Ok(ShapeProto {
            element_type: ty.into(),
            dimensions,
            tuple_shapes: Vec::new(),
            layout,
            is_dynamic_dimension,
        })
    }

    /// `{1,0}`, `{1,0:T(8,128)(2,1)}`, `{0:S(1)}`, `{:E(4)}`.
    fn layout(&mut self) -> Result<LayoutProto, TextError> {
        self.expect("{")?;
        let mut layout = LayoutProto::default();
        if self.eat("}") {
            return Ok(layout);
        }
        if !self.eat(":") {
            loop {
                layout.minor_to_major.push(self.int()?);
                if self.eat("}") {
                    return Ok(layout);
                }
                if self.eat(":") {
                    break;
                }
                if !self.eat(",") {
                    return Err(self.unexpected("`,`, `:` or `}` in a layout"));
                }
            }
        }
        loop {
            self.skip_ws();
            if self.eat("}") {
                return Ok(layout);
            }
            let (pos, key) = self.name("a layout attribute such as `T(8,128)`")?;
            let mut groups = Vec::new();
            while self.rest().starts_with('(') {
                self.pos += 1;
                let mut group = Vec::new();
                if !self.eat(")") {
                    loop {
                        self.skip_ws();
                        // Tiles may hold `*` (combine dimensions); we only record numbers.
                        if self.eat("*") {
                            group.push(-1);
                        } else {
                            group.push(self.int()?);
                        }
                        if self.eat(")") {
                            break;
                        }
                        if !self.eat(",") {
                            return Err(self.unexpected("`,` or `)`"));
                        }
                    }
                }
                groups.push(group);
            }
            let single = |p: &Self, groups: &[Vec<i64>]| match groups {
                [g] if g.len() == 1 => Ok(g[0]),
                _ => Err(p.unexpected_at(pos, format!("`{key}(N)`"))),
            };
            match key {
                "T" => {
                    layout.tiles =
                        groups.into_iter().map(|dimensions| TileProto { dimensions }).collect()
                }
                "E" => layout.element_size_in_bits = single(self, &groups)?,
                "S" => layout.memory_space = single(self, &groups)?,
                // Other layout attributes (dim level types, index and pointer types, split
                // configs, ...) do not change the dense element order; skip them.
                _ => {}
            }
        }
    }

    /// `(f32[4,8]{1,0}, s32[])->f32[4]{0}`.
    fn program_shape(&mut self) -> Result<ProgramShapeProto, TextError> {
        self.expect("(")?;
        let mut parameters = Vec::new();
        if !self.eat(")") {
            loop {
                parameters.push(self.shape()?);
                if self.eat(")") {
                    break;
                }
                if !self.eat(",") {
                    return Err(self.unexpected("`,` or `)`"));
                }
            }
        }
        self.expect("->")?;
        let result = self.shape()?;
        Ok(ProgramShapeProto { parameters, result: Some(result), parameter_names: Vec::new() })
    }

    // ---- literals -----------------------------------------------------------------------

    fn literal(&mut self, shape: &ShapeProto) -> Result<LiteralProto, TextError> {
        self.enter()?;
        let result = self.literal_inner(shape);
        self.leave();
        result
    }

    fn literal_inner(&mut self, shape: &ShapeProto) -> Result<LiteralProto, TextError> {
        match shape.element_type() {
            PrimitiveType::Tuple => {
                self.expect("(")?;
                let mut tuple_literals = Vec::new();
                for (i, element) in shape.tuple_shapes.iter().enumerate() {
                    if i > 0 {
                        self.expect(",")?;
                    }
                    tuple_literals.push(self.literal(element)?);
                }
                self.expect(")")?;
                Ok(LiteralProto {
                    shape: Some(shape.clone()),
                    tuple_literals,
                    ..Default::default()
                })
            }
            PrimitiveType::Token | PrimitiveType::OpaqueType => {
                Err(self.invalid_at(self.pos, "a token or opaque shape has no constant value"))
            }
            _ => {
                let complex =
                    matches!(shape.element_type(), PrimitiveType::C64 | PrimitiveType::C128);
                let mut elems = Vec::new();
                self.array_elems(&shape.dimensions, complex, &mut elems)?;
                let values: Vec<Elem<'_>> = elems.iter().map(|(_, e)| *e).collect();
                literal::store(shape, &values).map_err(|(i, message)| {
                    let pos = elems.get(i).map_or(self.pos, |(p, _)| *p);
                    self.invalid_at(pos, message)
                })
            }
        }
    }

    fn array_elems(
        &mut self,
        dims: &[i64],
        complex: bool,
        out: &mut Vec<(usize, Elem<'a>)>,
    ) -> Result<(), TextError> {
        let Some((&first, inner)) = dims.split_first() else {
            out.push(self.scalar(complex)?);
            return Ok(());
        };
        self.skip_ws();
        if self.rest().starts_with("{...}") {
            return Err(self.invalid_at(self.pos, "the constant's values were elided by the printer (`{...}`); print with large constants"));
        }
        self.expect("{")?;
        self.enter()?;
        for i in 0..first {
            if i > 0 && !self.eat(",") {
                return Err(self.unexpected(format!("`,` and element {i} of {first}")));
            }
            self.array_elems(inner, complex, out)?;
        }
        self.leave();
        if !self.eat("}") {
            return Err(self.unexpected(format!("`}}` after {first} elements")));
        }
        Ok(())
    }

    fn scalar(&mut self, complex: bool) -> Result<(usize, Elem<'a>), TextError> {
        self.skip_ws();
        let pos = self.pos;
        if complex {
            self.expect("(")?;
            let (_, re) = self.word("the real part")?;
            self.expect(",")?;
            let (_, im) = self.word("the imaginary part")?;
            self.expect(")")?;
            return Ok((pos, Elem::Complex(re, im)));
        }
        let (_, w) = self.word("a number")?;
        Ok((pos, Elem::Real(w)))
    }

    // ---- module -------------------------------------------------------------------------

    fn module(&mut self) -> Result<HloModuleProto, Stop> {
        if !self.eat_keyword("HloModule") {
            return Err(Stop::Text(self.unexpected("`HloModule`")));
        }
        let (_, name) = self.name("the module name")?;
        let mut module = HloModuleProto { name: name.to_string(), ..Default::default() };
        let mut seen = BTreeMap::new();
        while self.eat(",") {
            let (pos, key) = self.name("a module attribute")?;
            if seen.insert(key, ()).is_some() {
                return Err(Stop::Text(self.duplicate_at(pos, "attribute", key)));
            }
            self.expect("=")?;
            match key {
                "entry_computation_layout" => {
                    self.expect("{")?;
                    let mut shape = self.program_shape()?;
                    // XLA names the entry parameters p0, p1, ... in the host program shape.
                    shape.parameter_names =
                        (0..shape.parameters.len()).map(|k| format!("p{k}")).collect();
                    module.host_program_shape = Some(shape);
                    self.expect("}")?;
                }
                "input_output_alias" => {
                    module.input_output_alias = Some(self.input_output_alias()?)
                }
                "frontend_attributes" => {
                    module.frontend_attributes = Some(self.frontend_attributes()?)
                }
                _ => self.skip_value()?,
            }
        }
        if module.frontend_attributes.as_ref().is_some_and(|a| a.map.is_empty()) {
            module.frontend_attributes = None;
        }
        if module.input_output_alias.as_ref().is_some_and(|a| a.entries.is_empty()) {
            module.input_output_alias = None;
        }
        let mut computations = Vec::new();
        while self.peek().is_some() {
            if computations.len() == self.limits.max_computations {
                return Err(Stop::TooManyComputations { limit: self.limits.max_computations });
            }
            computations.push(self.computation()?);
        }
        Ok(self.finish(module, computations)?)
    }

    /// `{ {0}: (0, {}, may-alias), {1}: (1, {}) }`.
    fn input_output_alias(&mut self) -> Result<HloInputOutputAliasProto, TextError> {
        self.expect("{")?;
        let mut entries = Vec::new();
        if !self.eat("}") {
            loop {
                let output_shape_index = self.int_list()?;
                self.expect(":")?;
                self.expect("(")?;
                let parameter_number = self.int()?;
                self.expect(",")?;
                let parameter_shape_index = self.int_list()?;
                let mut kind = Kind::UndefinedAlias;
                if self.eat(",") {
                    let (pos, w) = self.word("may-alias or must-alias")?;
                    kind = match w {
                        "may-alias" => Kind::MayAlias,
                        "must-alias" => Kind::MustAlias,
                        _ => return Err(self.unexpected_at(pos, "may-alias or must-alias")),
                    };
                }
                self.expect(")")?;
                entries.push(AliasEntryProto {
                    output_shape_index,
                    parameter_number,
                    parameter_shape_index,
                    kind: kind.into(),
                });
                if self.eat("}") {
                    break;
                }
                if !self.eat(",") {
                    return Err(self.unexpected("`,` or `}`"));
                }
            }
        }
        Ok(HloInputOutputAliasProto { entries })
    }

    /// `{key="value", other="x"}`.
    fn frontend_attributes(&mut self) -> Result<FrontendAttributes, TextError> {
        self.expect("{")?;
        let mut map = BTreeMap::new();
        if !self.eat("}") {
            loop {
                self.skip_ws();
                let pos = self.pos;
                let key = if self.rest().starts_with('"') {
                    self.string()?
                } else {
                    self.name("an attribute name")?.1.to_string()
                };
                self.expect("=")?;
                let value = if self.peek() == Some('"') {
                    self.string()?
                } else {
                    self.word("a value")?.1.to_string()
                };
                if map.insert(key.clone(), value).is_some() {
                    return Err(self.duplicate_at(pos, "attribute", &key));
                }
                if self.eat("}") {
                    break;
                }
                if !self.eat(",") {
                    return Err(self.unexpected("`,` or `}`"));
                }
            }
        }
        Ok(FrontendAttributes { map })
    }

    fn computation(&mut self) -> Result<PendingComputation, Stop> {
        let is_entry = self.eat_keyword("ENTRY");
        let (name_pos, name) = self.defined_name("a computation name (or `ENTRY`)")?;
        // The signature is optional and is derived from the instructions anyway.
        if self.peek() == Some('(') {
            self.pos += 1;
            if !self.eat(")") {
                loop {
                    self.name("a parameter name")?;
                    self.expect(":")?;
                    self.shape()?;
                    if self.eat(")") {
                        break;
                    }
                    if !self.eat(",") {
                        return Err(Stop::Text(self.unexpected("`,` or `)`")));
                    }
                }
            }
            self.expect("->")?;
            self.shape()?;
        }
        while self.eat(",") {
            self.name("a computation attribute")?;
            self.expect("=")?;
            self.skip_value()?;
        }
        self.expect("{")?;
        let mut instructions = Vec::new();
        loop {
            self.skip_ws();
            if self.peek_raw().is_none() {
                return Err(Stop::Text(self.unexpected(format!(
                    "an instruction or the `}}` closing computation `{name}`"
                ))));
            }
            if self.eat("}") {
                break;
            }
            if self.n_instructions == self.limits.max_instructions {
                return Err(Stop::TooManyInstructions { limit: self.limits.max_instructions });
            }
            self.n_instructions += 1;
            instructions.push(self.instruction()?);
        }
        Ok(PendingComputation {
            name: name.to_string(),
            name_pos,
            is_entry,
            instructions,
            end_pos: self.pos,
        })
    }

    fn instruction(&mut self) -> Result<PendingInstruction, TextError> {
        let is_root = self.eat_keyword("ROOT");
        let (name_pos, name) = self.defined_name("an instruction name")?;
        self.expect("=")?;
        let mut shape = self.shape()?;
        self.skip_ws();
        let opcode_pos = self.pos;
        let opcode = self.scan(|c| c.is_ascii_alphanumeric() || c == '-');
        if opcode.is_empty() {
            return Err(self.unexpected_at(opcode_pos, "an opcode"));
        }
        if !names::is_opcode(opcode) {
            let (line, column) = self.line_col(opcode_pos);
            return Err(TextError::UnknownOpcode { line, column, opcode: opcode.to_string() });
        }
        let mut pending = PendingInstruction {
            proto: HloInstructionProto {
                name: name.to_string(),
                opcode: opcode.to_string(),
                ..Default::default()
            },
            name_pos,
            is_root,
            operands: Vec::new(),
            control_predecessors: Vec::new(),
            calls: Calls::default(),
        };
        self.expect("(")?;
        match opcode {
            "parameter" => {
                let pos = self.pos;
                let n = self.int()?;
                if n < 0 {
                    return Err(self.invalid_at(
                        pos,
                        format!("expected a parameter number of at least 0, found {n}"),
                    ));
                }
                pending.proto.parameter_number = n;
                self.expect(")")?;
            }
            "constant" => {
                let mut literal = self.literal(&shape)?;
                with_literal_layouts(&mut literal);
                // XLA's reader requires a constant's shape to be its literal's, layout included.
                shape = literal.shape.clone().unwrap_or(shape);
                pending.proto.literal = Some(Box::new(literal));
                self.expect(")")?;
            }
            _ => {
                if !self.eat(")") {
                    loop {
                        if self.at_shape() {
                            self.shape()?;
                        }
                        let (pos, operand) = self.name("an operand name")?;
                        pending.operands.push((pos, operand.trim_start_matches('%').to_string()));
                        if self.eat(")") {
                            break;
                        }
                        if !self.eat(",") {
                            return Err(self.unexpected("`,` or `)` in the operands"));
                        }
                    }
                }
            }
        }
        pending.proto.shape = Some(shape);
        let mut seen = BTreeMap::new();
        while self.eat(",") {
            let (pos, key) = self.name("an attribute name")?;
            if seen.insert(key, ()).is_some() {
                return Err(self.duplicate_at(pos, "attribute", key));
            }
            self.expect("=")?;
            self.attribute(&mut pending, pos, key)?;
        }
        normalize(&mut pending.proto);
        Ok(pending)
    }

    fn computation_ref(&mut self) -> Result<(usize, String), TextError> {
        let (pos, name) = self.name("a computation name")?;
        Ok((pos, name.trim_start_matches('%').to_string()))
    }

    /// `%a` or `{%a, %b}`.
    fn computation_refs(&mut self) -> Result<Vec<(usize, String)>, TextError> {
        if !self.eat("{") {
            return Ok(vec![self.computation_ref()?]);
        }
        let mut out = Vec::new();
        if self.eat("}") {
            return Ok(out);
        }
        loop {
            out.push(self.computation_ref()?);
            if self.eat("}") {
                return Ok(out);
            }
            if !self.eat(",") {
                return Err(self.unexpected("`,` or `}`"));
            }
        }
    }

    fn enum_word<T: Copy>(&mut self, choices: &[(&str, T)]) -> Result<T, TextError> {
        let (pos, w) = self.word("a value")?;
        choices.iter().find(|(n, _)| n.eq_ignore_ascii_case(w)).map(|(_, v)| *v).ok_or_else(|| {
            self.unexpected_at(
                pos,
                format!(
                    "one of {}",
                    choices.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            )
        })
    }

    fn attribute(
        &mut self,
        pending: &mut PendingInstruction,
        pos: usize,
        key: &str,
    ) -> Result<(), TextError> {
        let i = &mut pending.proto;
        let opcode = i.opcode.clone();
        match key {
            "dimensions" => i.dimensions = self.int_list()?,
            "iota_dimension" => i.dimensions = vec![self.int()?],
            "index" => i.tuple_index = self.int()?,
            "slice" => i.slice_dimensions = self.slices()?,
            "padding" => i.padding_config = Some(self.padding()?),
            "window" => i.window = Some(self.window()?),
            "dim_labels" => i.convolution_dimension_numbers = Some(Box::new(self.dim_labels()?)),
            "feature_group_count" => i.feature_group_count = self.int()?,
            "batch_group_count" => i.batch_group_count = self.int()?,
            "lhs_contracting_dims" => dot(i).lhs_contracting_dimensions = self.int_list()?,
            "rhs_contracting_dims" => dot(i).rhs_contracting_dimensions = self.int_list()?,
            "lhs_batch_dims" => dot(i).lhs_batch_dimensions = self.int_list()?,
            "rhs_batch_dims" => dot(i).rhs_batch_dimensions = self.int_list()?,
            "offset_dims" => gather(i).offset_dims = self.int_list()?,
            "collapsed_slice_dims" => gather(i).collapsed_slice_dims = self.int_list()?,
            "start_index_map" => gather(i).start_index_map = self.int_list()?,
            "operand_batching_dims" => gather(i).operand_batching_dims = self.int_list()?,
            "start_indices_batching_dims" => {
                gather(i).start_indices_batching_dims = self.int_list()?
            }
            "slice_sizes" => i.gather_slice_sizes = self.int_list()?,
            "update_window_dims" => scatter(i).update_window_dims = self.int_list()?,
            "inserted_window_dims" => scatter(i).inserted_window_dims = self.int_list()?,
            "scatter_dims_to_operand_dims" => {
                scatter(i).scatter_dims_to_operand_dims = self.int_list()?
            }
            "input_batching_dims" => scatter(i).input_batching_dims = self.int_list()?,
            "scatter_indices_batching_dims" => {
                scatter(i).scatter_indices_batching_dims = self.int_list()?
            }
            "index_vector_dim" => {
                let v = self.int()?;
                if opcode == "scatter" {
                    scatter(i).index_vector_dim = v;
                } else {
                    gather(i).index_vector_dim = v;
                }
            }
            "dynamic_slice_sizes" => i.dynamic_slice_sizes = self.int_list()?,
            "indices_are_sorted" => i.indices_are_sorted = self.bool_value()?,
            "unique_indices" => i.unique_indices = self.bool_value()?,
            "is_stable" => i.is_stable = self.bool_value()?,
            "largest" => i.largest = self.bool_value()?,
            "use_global_device_ids" => i.use_global_device_ids = self.bool_value()?,
            "constrain_layout" => i.constrain_layout = self.bool_value()?,
            "custom_call_has_side_effect" => i.custom_call_has_side_effect = self.bool_value()?,
            "is_host_transfer" => i.is_host_transfer = self.bool_value()?,
            "is_composite" => i.is_composite = self.bool_value()?,
            "k" => i.k = self.int()?,
            "channel_id" => i.channel_id = self.int()?,
            "exponent_bits" => i.exponent_bits = self.int32()?,
            "mantissa_bits" => i.mantissa_bits = self.int32()?,
            "feature_index" => i.feature_index = self.int()?,
            "delta" => i.delta = self.int()?,
            "epsilon" => {
                let (p, w) = self.word("a number")?;
                i.epsilon = w.parse().map_err(|_| self.unexpected_at(p, "a number"))?;
            }
            "direction" => {
                let (p, w) = self.word("a comparison direction")?;
                if !DIRECTIONS.contains(&w) {
                    return Err(self.unexpected_at(p, format!("one of {}", DIRECTIONS.join(", "))));
                }
                i.comparison_direction = w.to_string();
            }
            "type" if opcode == "compare" => {
                let (p, w) = self.word("a comparison type")?;
                if !COMPARISON_TYPES.contains(&w) {
                    return Err(
                        self.unexpected_at(p, format!("one of {}", COMPARISON_TYPES.join(", ")))
                    );
                }
                i.comparison_type = w.to_string();
            }
            "custom_call_target" => i.custom_call_target = self.string()?,
            "backend_config" => {
                if self.peek() == Some('"') {
                    i.backend_config = self.string_bytes()?;
                } else {
                    // A JSON object in braces: keep its text as written.
                    self.skip_ws();
                    let start = self.pos;
                    self.skip_value()?;
                    i.backend_config = self.src.as_bytes()[start..self.pos].to_vec();
                }
            }
            "metadata" => i.metadata = Some(Box::new(self.metadata()?)),
            "frontend_attributes" => i.frontend_attributes = Some(self.frontend_attributes()?),
            "control-predecessors" => {
                self.expect("{")?;
                if !self.eat("}") {
                    loop {
                        let (p, n) = self.name("an instruction name")?;
                        pending
                            .control_predecessors
                            .push((p, n.trim_start_matches('%').to_string()));
                        if self.eat("}") {
                            break;
                        }
                        if !self.eat(",") {
                            return Err(self.unexpected("`,` or `}`"));
                        }
                    }
                }
            }
            "replica_groups" => self.replica_groups(i)?,
            "source_target_pairs" => {
                let pairs = self.int_list_list()?;
                for pair in pairs {
                    let [source, target] = pair[..] else {
                        return Err(self.invalid_at(
                            pos,
                            format!(
                                "expected source-target pairs of two ids, found {} ids",
                                pair.len()
                            ),
                        ));
                    };
                    i.source_target_pairs.push(SourceTarget { source, target });
                }
            }
            "kind" if opcode == "fusion" => {
                i.fusion_kind = self.word("a fusion kind")?.1.to_string()
            }
            "distribution" => {
                i.distribution = self
                    .enum_word(&[
                        ("rng_uniform", RandomDistribution::RngUniform),
                        ("rng_normal", RandomDistribution::RngNormal),
                    ])?
                    .into();
            }
            "algorithm" if opcode == "rng-bit-generator" => {
                i.rng_algorithm = self
                    .enum_word(&[
                        ("rng_default", RandomAlgorithm::RngDefault),
                        ("rng_three_fry", RandomAlgorithm::RngThreeFry),
                        ("rng_philox", RandomAlgorithm::RngPhilox),
                    ])?
                    .into();
            }
            "fft_type" => {
                i.fft_type = self
                    .enum_word(&[
                        ("FFT", FftType::Fft),
                        ("IFFT", FftType::Ifft),
                        ("RFFT", FftType::Rfft),
                        ("IRFFT", FftType::Irfft),
                    ])?
                    .into();
            }
            "fft_length" => i.fft_length = self.int_list()?,
            "operand_precision" => {
                self.expect("{")?;
                let config = i.precision_config.get_or_insert_with(Default::default);
                if !self.eat("}") {
                    loop {
                        let p = self.enum_word(&[
                            ("default", Precision::Default),
                            ("high", Precision::High),
                            ("highest", Precision::Highest),
                        ])?;
                        config.operand_precision.push(p.into());
                        if self.eat("}") {
                            break;
                        }
                        if !self.eat(",") {
                            return Err(self.unexpected("`,` or `}`"));
                        }
                    }
                }
            }
            "left_side" => triangular(i).left_side = self.bool_value()?,
            "unit_diagonal" => triangular(i).unit_diagonal = self.bool_value()?,
            "transpose_a" => {
                triangular(i).transpose_a = self
                    .enum_word(&[
                        ("NO_TRANSPOSE", Transpose::NoTranspose),
                        ("TRANSPOSE", Transpose::Transpose),
                        ("ADJOINT", Transpose::Adjoint),
                    ])?
                    .into();
            }
            "lower" if opcode == "cholesky" => {
                i.cholesky_options.get_or_insert_with(CholeskyOptions::default).lower =
                    self.bool_value()?
            }
            "lower" => triangular(i).lower = self.bool_value()?,
            "to_apply" | "calls" | "called_computations" | "branch_computations" => {
                pending.calls.list.extend(self.computation_refs()?);
            }
            "body" => pending.calls.body = Some(self.computation_ref()?),
            "condition" => pending.calls.condition = Some(self.computation_ref()?),
            "true_computation" => pending.calls.true_computation = Some(self.computation_ref()?),
            "false_computation" => pending.calls.false_computation = Some(self.computation_ref()?),
            "select" => pending.calls.select = Some(self.computation_ref()?),
            "scatter" => pending.calls.scatter = Some(self.computation_ref()?),
            // sharding, api_version, schedule, result accuracy, output aliasing, layout
            // constraints, statistics, ...: nothing the interpreter reads.
            _ => self.skip_value()?,
        }
        Ok(())
    }

    fn int32(&mut self) -> Result<i32, TextError> {
        self.skip_ws();
        let pos = self.pos;
        let v = self.int()?;
        i32::try_from(v)
            .map_err(|_| self.invalid_at(pos, format!("expected a 32-bit integer, found {v}")))
    }

    /// `{[0:4:1], [0:8]}`.
    fn slices(&mut self) -> Result<Vec<SliceDimensions>, TextError> {
        self.expect("{")?;
        let mut out = Vec::new();
        if self.eat("}") {
            return Ok(out);
        }
        loop {
            self.expect("[")?;
            let start = self.int()?;
            self.expect(":")?;
            let limit = self.int()?;
            let stride = if self.eat(":") { self.int()? } else { 1 };
            self.expect("]")?;
            out.push(SliceDimensions { start, limit, stride });
            if self.eat("}") {
                return Ok(out);
            }
            if !self.eat(",") {
                return Err(self.unexpected("`,` or `}`"));
            }
        }
    }

    /// A `x`-separated list of `_`-separated integers: `3x3`, `1_1x0_2`, `0_0_1x-1_2`.
    fn dims_value(&mut self, what: &str) -> Result<(usize, Vec<Vec<i64>>), TextError> {
        self.skip_ws();
        let pos = self.pos;
        let text = self.scan(|c| c.is_ascii_digit() || matches!(c, 'x' | '_' | '-'));
        if text.is_empty() {
            return Ok((pos, Vec::new()));
        }
        let parsed: Option<Vec<Vec<i64>>> = text
            .split('x')
            .map(|dim| dim.split('_').map(|n| n.parse::<i64>().ok()).collect())
            .collect();
        parsed.map(|v| (pos, v)).ok_or_else(|| self.unexpected_at(pos, what.to_string()))
    }

    fn padding(&mut self) -> Result<PaddingConfig, TextError> {
        let (pos, dims) = self.dims_value("padding such as `0_0x1_2_1`")?;
        let dimensions = dims
            .into_iter()
            .map(|d| match d[..] {
                [low, high] => Ok(PaddingConfigDimension {
                    edge_padding_low: low,
                    edge_padding_high: high,
                    interior_padding: 0,
                }),
                [low, high, interior] => Ok(PaddingConfigDimension {
                    edge_padding_low: low,
                    edge_padding_high: high,
                    interior_padding: interior,
                }),
                _ => Err(self
                    .unexpected_at(pos, "padding `low_high` or `low_high_interior` per dimension")),
            })
            .collect::<Result<_, _>>()?;
        Ok(PaddingConfig { dimensions })
    }

    /// `{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x1}`.
    fn window(&mut self) -> Result<Window, TextError> {
        self.expect("{")?;
        let mut fields: BTreeMap<&str, (usize, Vec<Vec<i64>>)> = BTreeMap::new();
        while !self.eat("}") {
            let (pos, key) = self
                .name("a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)")?;
            if !["size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"].contains(&key)
            {
                return Err(self.unexpected_at(
                    pos,
                    "a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)",
                ));
            }
            self.expect("=")?;
            let value = self.dims_value("a window value such as `3x3`")?;
            match fields.entry(key) {
                Entry::Occupied(_) => return Err(self.duplicate_at(pos, "window field", key)),
                Entry::Vacant(v) => {
                    v.insert(value);
                }
            }
        }
        let rank = fields.get("size").map_or(0, |(_, v)| v.len());
        let mut dimensions = vec![
            WindowDimension {
                size: 0,
                stride: 1,
                padding_low: 0,
                padding_high: 0,
                window_dilation: 1,
                base_dilation: 1,
                window_reversal: false
            };
            rank
        ];
        for (key, (pos, values)) in fields {
            if values.len() != rank {
                return Err(self.invalid_at(
                    pos,
                    format!("window {key} has {} dimensions, size has {rank}", values.len()),
                ));
            }
            for (d, v) in dimensions.iter_mut().zip(values) {
                let one = |p: &Self| match v[..] {
                    [x] => Ok(x),
                    _ => Err(
                        p.unexpected_at(pos, format!("one integer per dimension in window {key}"))
                    ),
                };
                match key {
                    "size" => d.size = one(self)?,
                    "stride" => d.stride = one(self)?,
                    "lhs_dilate" => d.base_dilation = one(self)?,
                    "rhs_dilate" => d.window_dilation = one(self)?,
                    "rhs_reversal" => d.window_reversal = one(self)? != 0,
                    _ => match v[..] {
                        [low, high] => {
                            d.padding_low = low;
                            d.padding_high = high;
                        }
                        _ => {
                            return Err(
                                self.unexpected_at(pos, "window pad `low_high` per dimension")
                            );
                        }
                    },
                }
            }
        }
        Ok(Window { dimensions })
    }

    /// `bf01_oi01->bf01`: the role of each dimension of input, kernel and output.
    fn dim_labels(&mut self) -> Result<ConvolutionDimensionNumbers, TextError> {
        self.skip_ws();
        let pos = self.pos;
        let text = self.scan(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '>'));
        let bad = |p: &Self, why: String| p.invalid_at(pos, format!("dim_labels `{text}`: {why}"));
        let (lhs, out) = text
            .split_once("->")
            .ok_or_else(|| self.unexpected_at(pos, "dim_labels such as `bf01_oi01->bf01`"))?;
        let (input, kernel) = lhs
            .split_once('_')
            .ok_or_else(|| self.unexpected_at(pos, "dim_labels such as `bf01_oi01->bf01`"))?;
        let rank = input.len();
        if kernel.len() != rank || out.len() != rank || rank < 2 {
            return Err(bad(
                self,
                "input, kernel and output must have the same rank, at least 2".into(),
            ));
        }
        let spatial = rank - 2;
        // Returns (positions of the two letters, position of each spatial index).
        let roles = |labels: &str, a: char, b: char| -> Result<(i64, i64, Vec<i64>), String> {
            let mut first = None;
            let mut second = None;
            let mut spatial_at = vec![None; spatial];
            for (at, c) in labels.chars().enumerate() {
                let slot = if c == a {
                    &mut first
                } else if c == b {
                    &mut second
                } else if let Some(d) = c.to_digit(10).filter(|&d| (d as usize) < spatial) {
                    &mut spatial_at[d as usize]
                } else {
                    return Err(format!(
                        "`{c}` in `{labels}` is not {a}, {b} or a spatial index below {spatial}"
                    ));
                };
                if slot.replace(at as i64).is_some() {
                    return Err(format!("`{c}` appears twice in `{labels}`"));
                }
            }
            Ok((
                first.unwrap_or(0),
                second.unwrap_or(0),
                spatial_at.into_iter().map(|s| s.unwrap_or(0)).collect(),
            ))
        };
        let (ib, if_, is) = roles(input, 'b', 'f').map_err(|m| bad(self, m))?;
        let (ki, ko, ks) = roles(kernel, 'i', 'o').map_err(|m| bad(self, m))?;
        let (ob, of, os) = roles(out, 'b', 'f').map_err(|m| bad(self, m))?;
        Ok(ConvolutionDimensionNumbers {
            input_batch_dimension: ib,
            input_feature_dimension: if_,
            input_spatial_dimensions: is,
            kernel_input_feature_dimension: ki,
            kernel_output_feature_dimension: ko,
            kernel_spatial_dimensions: ks,
            output_batch_dimension: ob,
            output_feature_dimension: of,
            output_spatial_dimensions: os,
        })
    }

    /// `{{0,1},{2,3}}` (explicit) or `[2,2]<=[4]`, `[2,4]<=[4,2]T(1,0)` (iota).
    fn replica_groups(&mut self, i: &mut HloInstructionProto) -> Result<(), TextError> {
        if self.peek() == Some('{') {
            let groups = self.int_list_list()?;
            if !groups.is_empty() {
                i.collective_device_list = Some(Box::new(CollectiveDeviceListProto {
                    replica_groups: groups
                        .into_iter()
                        .map(|replica_ids| ReplicaGroup { replica_ids })
                        .collect(),
                    iota_replica_group_list: None,
                }));
            }
            return Ok(());
        }
        let pos = self.pos;
        let bracketed = |p: &mut Self| -> Result<Vec<i64>, TextError> {
            p.expect("[")?;
            let mut out = Vec::new();
            loop {
                out.push(p.int()?);
                if p.eat("]") {
                    return Ok(out);
                }
                if !p.eat(",") {
                    return Err(p.unexpected("`,` or `]`"));
                }
            }
        };
        let counts = bracketed(self)?;
        let [groups, per_group] = counts[..] else {
            return Err(self.unexpected_at(pos, "iota replica groups `[groups,size]<=[dims]`"));
        };
        self.expect("<=")?;
        let iota_reshape_dims = bracketed(self)?;
        let mut iota_transpose_perm = Vec::new();
        if self.rest().starts_with('T') {
            self.pos += 1;
            self.expect("(")?;
            loop {
                iota_transpose_perm.push(self.int32()?);
                if self.eat(")") {
                    break;
                }
                if !self.eat(",") {
                    return Err(self.unexpected("`,` or `)`"));
                }
            }
        } else {
            // XLA writes the identity permutation explicitly in the proto.
            iota_transpose_perm = (0..iota_reshape_dims.len() as i32).collect();
        }
        let iota = IotaReplicaGroupListProto {
            num_replica_groups: groups,
            num_devices_per_group: per_group,
            iota_reshape_dims,
            iota_transpose_perm,
        };
        iota.expand().map_err(|e| self.invalid_at(pos, e.to_string()))?;
        i.iota_replica_group_list = Some(Box::new(iota));
        Ok(())
    }

    /// `{op_type="add" op_name="jit(f)/add" source_file="f.py" source_line=3}`.
    fn metadata(&mut self) -> Result<OpMetadata, TextError> {
        self.expect("{")?;
        let mut m = OpMetadata::default();
        while !self.eat("}") {
            let (_, key) = self.name("a metadata field")?;
            self.expect("=")?;
            match key {
                "op_type" => m.op_type = self.string()?,
                "op_name" => m.op_name = self.string()?,
                "source_file" => m.source_file = self.string()?,
                "source_line" => m.source_line = self.int32()?,
                _ => self.skip_value()?,
            }
        }
        Ok(m)
    }

    // ---- resolution ---------------------------------------------------------------------

    /// Resolves names to ids and builds the module, moving each parsed instruction into it
    /// (never copying one, so the parse holds each instruction once).
    fn finish(
        &self,
        mut module: HloModuleProto,
        computations: Vec<PendingComputation>,
    ) -> Result<HloModuleProto, TextError> {
        let mut computation_ids: BTreeMap<String, i64> = BTreeMap::new();
        for (index, c) in computations.iter().enumerate() {
            if computation_ids.insert(c.name.clone(), index as i64).is_some() {
                return Err(self.duplicate_at(c.name_pos, "computation", &c.name));
            }
        }
        let entries: Vec<&PendingComputation> =
            computations.iter().filter(|c| c.is_entry).collect();
        let entry = match entries[..] {
            [] => computations
                .last()
                .ok_or_else(|| self.unexpected_at(self.src.len(), "a computation"))?,
            [one] => one,
            [_, second, ..] => {
                return Err(self.invalid_at(
                    second.name_pos,
                    format!("a second ENTRY computation `{}`; a module has one", second.name),
                ));
            }
        };
        module.entry_computation_name = entry.name.clone();
        module.entry_computation_id = computation_ids[entry.name.as_str()];
        let resolve_computation = |(pos, name): &(usize, String)| {
            computation_ids
                .get(name.as_str())
                .copied()
                .ok_or_else(|| self.undefined_at(*pos, "computation", name))
        };
        module.computations.reserve_exact(computations.len());
        // Names are scoped to their computation in the text, but one namespace in the module.
        let mut names = names::InstructionNames::default();
        for (c_index, c) in computations.into_iter().enumerate() {
            let c_id = c_index as i64;
            let mut ids: BTreeMap<&str, i64> = BTreeMap::new();
            for (i_index, i) in c.instructions.iter().enumerate() {
                if ids.insert(&i.proto.name, (c_id << 32) | i_index as i64).is_some() {
                    return Err(self.duplicate_at(i.name_pos, "instruction", &i.proto.name));
                }
            }
            let resolve = |(pos, name): &(usize, String)| {
                ids.get(name.as_str())
                    .copied()
                    .ok_or_else(|| self.undefined_at(*pos, "instruction", name))
            };
            let mut proto =
                HloComputationProto { name: c.name.clone(), id: c_id, ..Default::default() };
            let roots: Vec<&PendingInstruction> =
                c.instructions.iter().filter(|i| i.is_root).collect();
            let root = match roots[..] {
                [] => c.instructions.last().ok_or_else(|| {
                    self.invalid_at(
                        c.end_pos.saturating_sub(1),
                        format!("computation `{}` has no instructions", c.name),
                    )
                })?,
                [one] => one,
                [_, second, ..] => {
                    return Err(self.invalid_at(
                        second.name_pos,
                        format!(
                            "a second ROOT instruction `{}` in computation `{}`; it has one",
                            second.proto.name, c.name
                        ),
                    ));
                }
            };
            proto.root_id = ids[root.proto.name.as_str()];
            // Parameter number -> (where its name is, its index).
            let mut parameters: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
            // Operands, control predecessors and called computations, by instruction.
            let mut references = Vec::with_capacity(c.instructions.len());
            for (i_index, pending) in c.instructions.iter().enumerate() {
                let operand_ids: Vec<i64> =
                    pending.operands.iter().map(&resolve).collect::<Result<_, _>>()?;
                let control_predecessor_ids: Vec<i64> =
                    pending.control_predecessors.iter().map(&resolve).collect::<Result<_, _>>()?;
                let calls = &pending.calls;
                let mut called = Vec::new();
                let mut push = |r: &Option<(usize, String)>| -> Result<(), TextError> {
                    if let Some(r) = r {
                        called.push(resolve_computation(r)?);
                    }
                    Ok(())
                };
                // XLA's order of called computations: while is [body, condition], conditional is
                // [true, false] (or the branches), select-and-scatter is [select, scatter].
                push(&calls.body)?;
                push(&calls.condition)?;
                push(&calls.true_computation)?;
                push(&calls.false_computation)?;
                push(&calls.select)?;
                push(&calls.scatter)?;
                for r in &calls.list {
                    called.push(resolve_computation(r)?);
                }
                let number = pending.proto.parameter_number;
                if pending.proto.opcode == "parameter"
                    && parameters.insert(number, (pending.name_pos, i_index)).is_some()
                {
                    return Err(self.invalid_at(
                        pending.name_pos,
                        format!(
                            "parameter number {number} is used twice in computation `{}`",
                            c.name
                        ),
                    ));
                }
                references.push((operand_ids, control_predecessor_ids, called));
            }
            proto.instructions = c
                .instructions
                .into_iter()
                .zip(references)
                .enumerate()
                .map(|(i_index, (pending, (operands, control_predecessors, called)))| {
                    let mut i = pending.proto;
                    i.name = names.unique(&i.name);
                    i.id = (c_id << 32) | i_index as i64;
                    i.operand_ids = operands;
                    i.control_predecessor_ids = control_predecessors;
                    i.called_computation_ids = called;
                    i
                })
                .collect();
            fill_xla_defaults(&mut proto.instructions);
            let mut program_shape = ProgramShapeProto {
                result: proto
                    .instructions
                    .iter()
                    .find(|i| i.id == proto.root_id)
                    .and_then(|i| i.shape.clone()),
                ..Default::default()
            };
            for (expected, (&number, &(name_pos, index))) in parameters.iter().enumerate() {
                if number != expected as i64 {
                    return Err(self.invalid_at(name_pos, format!("expected parameter number {expected} in computation `{}`, found {number}", c.name)));
                }
                let parameter = &proto.instructions[index];
                program_shape.parameters.push(parameter.shape.clone().unwrap_or_default());
                program_shape.parameter_names.push(parameter.name.clone());
            }
            proto.program_shape = Some(program_shape);
            module.computations.push(proto);
        }
        if module.host_program_shape.is_none() {
            module.host_program_shape = module.derived_host_program_shape();
        }
        Ok(module)
    }
}

/// Gives every array and scalar in a literal's shape a layout, the default one where the text
/// has none: XLA's proto reader refuses a literal without one ("LiteralProto has no layout"),
/// although an instruction's shape may leave it out.
fn with_literal_layouts(literal: &mut LiteralProto) {
    if let Some(shape) = &mut literal.shape {
        *shape = shape.with_default_layouts();
    }
    literal.tuple_literals.iter_mut().for_each(with_literal_layouts);
}

/// Fills what XLA's parser fills when the text leaves it out, so that a parsed module equals
/// XLA's parse of the same text: the comparison type of `compare` (from the operands' element
/// type) and the operand precisions of `dot` and `convolution` (all DEFAULT).
fn fill_xla_defaults(instructions: &mut [HloInstructionProto]) {
    let types: BTreeMap<i64, PrimitiveType> = instructions
        .iter()
        .filter_map(|i| i.shape.as_ref().map(|s| (i.id, s.element_type())))
        .collect();
    for i in instructions {
        if i.opcode == "compare" && i.comparison_type.is_empty() {
            let ty = i.operand_ids.first().and_then(|id| types.get(id));
            if let Some(ty) = ty {
                i.comparison_type = default_comparison_type(*ty).to_string();
            }
        }
        if matches!(i.opcode.as_str(), "dot" | "convolution") && i.precision_config.is_none() {
            i.precision_config = Some(Box::new(PrecisionConfig {
                operand_precision: vec![Precision::Default.into(); i.operand_ids.len()],
                algorithm: 0,
            }));
        }
    }
}

/// The comparison type XLA assumes for operands of `ty`, and omits when printing.
pub(crate) fn default_comparison_type(ty: PrimitiveType) -> &'static str {
    use PrimitiveType as T;
    match ty {
        T::S1 | T::S2 | T::S4 | T::S8 | T::S16 | T::S32 | T::S64 => "SIGNED",
        T::Pred | T::U1 | T::U2 | T::U4 | T::U8 | T::U16 | T::U32 | T::U64 => "UNSIGNED",
        _ => "FLOAT",
    }
}

/// Drops attribute messages left at their defaults (`metadata={}`, `window={}`), which the
/// printer does not write, and gives convolution XLA's group counts of 1; so that a parsed module
/// is exactly what parsing its print gives.
fn normalize(i: &mut HloInstructionProto) {
    fn drop_default<T: Default + PartialEq>(field: &mut Option<T>) {
        if field.as_ref().is_some_and(|v| *v == T::default()) {
            *field = None;
        }
    }
    drop_default(&mut i.metadata);
    drop_default(&mut i.frontend_attributes);
    // Precisions that are all DEFAULT say nothing; `fill_xla_defaults` writes XLA's form.
    if i.precision_config
        .as_ref()
        .is_some_and(|p| p.algorithm == 0 && p.operand_precision.iter().all(|&v| v == 0))
    {
        i.precision_config = None;
    }
    drop_default(&mut i.dot_dimension_numbers);
    drop_default(&mut i.gather_dimension_numbers);
    drop_default(&mut i.scatter_dimension_numbers);
    drop_default(&mut i.window);
    drop_default(&mut i.padding_config);
    drop_default(&mut i.triangular_solve_options);
    drop_default(&mut i.cholesky_options);
    if i.opcode == "convolution" {
        for count in [&mut i.feature_group_count, &mut i.batch_group_count] {
            if *count == 0 {
                *count = 1;
            }
        }
    }
}

fn dot(i: &mut HloInstructionProto) -> &mut DotDimensionNumbers {
    i.dot_dimension_numbers.get_or_insert_with(Default::default)
}

fn gather(i: &mut HloInstructionProto) -> &mut GatherDimensionNumbers {
    i.gather_dimension_numbers.get_or_insert_with(Default::default)
}

fn scatter(i: &mut HloInstructionProto) -> &mut ScatterDimensionNumbers {
    i.scatter_dimension_numbers.get_or_insert_with(Default::default)
}

fn triangular(i: &mut HloInstructionProto) -> &mut TriangularSolveOptions {
    i.triangular_solve_options.get_or_insert_with(Default::default)
}
