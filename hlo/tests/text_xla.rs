//! Our HLO text and proto handling against XLA's own, on modules jax 0.10.2 wrote.
//!
//! The fixtures (`tests/fixtures/*.hlo`, `*.old.hlo`, `*.xla.pb`) are output of XLA, made by
//! `tests/fixtures/export.py`: the text jax prints, the same module in XLA's old print style, and
//! XLA's parse of the text serialized as a proto. The expected values are XLA's, never ours.

use std::fs;
use std::path::{Path, PathBuf};

use hlo::proto::{HloModuleProto, ShapeProto};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut names: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(".xla.pb"))
        .map(|p| PathBuf::from(p.to_str().unwrap().trim_end_matches(".xla.pb")))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "fixtures missing from {}", dir.display());
    names
}

fn read(base: &Path, suffix: &str) -> Vec<u8> {
    let path = format!("{}{suffix}", base.display());
    fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn text(base: &Path, suffix: &str) -> String {
    String::from_utf8(read(base, suffix)).unwrap()
}

#[test]
fn xla_text_prints_back_byte_for_byte() {
    for base in fixtures() {
        let src = text(&base, ".hlo");
        let module =
            hlo::text::parse_module(&src).unwrap_or_else(|e| panic!("{}: {e}", base.display()));
        let printed = hlo::text::print_module(&module).unwrap();
        assert_eq!(printed, src, "{}", base.display());
    }
}

#[test]
fn old_style_text_parses_to_the_same_module() {
    for base in fixtures() {
        let new = hlo::text::parse_module(&text(&base, ".hlo")).unwrap();
        let old = hlo::text::parse_module(&text(&base, ".old.hlo"))
            .unwrap_or_else(|e| panic!("{}.old.hlo: {e}", base.display()));
        assert_eq!(hlo::encode_module(&old), hlo::encode_module(&new), "{}", base.display());
    }
}

#[test]
fn xla_binary_prints_as_xla_text() {
    for base in fixtures() {
        let module = hlo::decode_module(&read(&base, ".xla.pb")).unwrap();
        let printed =
            hlo::text::print_module(&module).unwrap_or_else(|e| panic!("{}: {e}", base.display()));
        assert_eq!(printed, text(&base, ".hlo"), "{}", base.display());
    }
}

/// XLA writes a layout for scalars too, and empty metadata and frontend attributes on every
/// instruction; the text form has neither, so they are dropped before comparing.
fn without_xla_noise(mut m: HloModuleProto) -> HloModuleProto {
    fn shape(s: &mut ShapeProto) {
        if s.dimensions.is_empty() && s.layout.as_ref().is_some_and(|l| l.minor_to_major.is_empty())
        {
            s.layout = None;
        }
        s.tuple_shapes.iter_mut().for_each(shape);
    }
    for c in &mut m.computations {
        if let Some(p) = &mut c.program_shape {
            p.parameters.iter_mut().for_each(shape);
            p.result.iter_mut().for_each(shape);
        }
        for i in &mut c.instructions {
            i.shape.iter_mut().for_each(shape);
            if let Some(l) = &mut i.literal {
                l.shape.iter_mut().for_each(shape);
            }
            if i.metadata == Some(Default::default()) {
                i.metadata = None;
            }
            if i.frontend_attributes == Some(Default::default()) {
                i.frontend_attributes = None;
            }
        }
    }
    if let Some(p) = &mut m.host_program_shape {
        p.parameters.iter_mut().for_each(shape);
        p.result.iter_mut().for_each(shape);
    }
    m
}

#[test]
fn our_parse_equals_xla_parse_field_by_field() {
    for base in fixtures() {
        let ours = hlo::text::parse_module(&text(&base, ".hlo")).unwrap();
        let xla = without_xla_noise(hlo::decode_module(&read(&base, ".xla.pb")).unwrap());
        let name = base.display();
        assert_eq!(ours.entry_computation_id, xla.entry_computation_id, "{name}");
        assert_eq!(ours.computations.len(), xla.computations.len(), "{name}");
        for (c_ours, c_xla) in ours.computations.iter().zip(&xla.computations) {
            assert_eq!(
                (c_ours.id, c_ours.root_id, &c_ours.name),
                (c_xla.id, c_xla.root_id, &c_xla.name),
                "{name}"
            );
            assert_eq!(
                c_ours.instructions.len(),
                c_xla.instructions.len(),
                "{name} {}",
                c_ours.name
            );
            for (i_ours, i_xla) in c_ours.instructions.iter().zip(&c_xla.instructions) {
                // Byte equality, so that NaN constants compare equal to themselves.
                assert!(
                    prost::Message::encode_to_vec(i_ours) == prost::Message::encode_to_vec(i_xla),
                    "{name} {}:\n ours {i_ours:?}\n xla  {i_xla:?}",
                    c_ours.name
                );
            }
            assert_eq!(c_ours.program_shape, c_xla.program_shape, "{name} {}", c_ours.name);
        }
        assert_eq!(ours.host_program_shape, xla.host_program_shape, "{name}");
    }
}
