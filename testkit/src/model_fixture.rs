//! Compiled-model fixtures: a module a real producer (jax, nkipy) wrote, its inputs and the
//! producer's outputs on CPU, in `conformance/tests/models/<producer>_<name>/`.
//!
//! The tests that compile each folder and run it (through C, Python and the binding layer) share
//! this reader, so a folder added by anyone is tested by all of them with no code change. The
//! layout (see that folder's README): `module.hlo.pb`, `fixture.toml`, `inputs/<NEFF input
//! name>.npy`, `outputs/<NEFF output name>.npy`, and optionally the weights of the binding-layer
//! path.
//!
//! Design choices:
//! - **Tolerances are the folder's**, as `numpy.allclose` applies them
//!   (`|ours - theirs| <= atol + rtol × |theirs|`), because the producer's tests state them that
//!   way (nkipy: 1e-2 and 1e-2).
//! - **The comparison measures**, not only judges: [`Agreement`] carries the largest absolute and
//!   relative differences, so a test can print them and a reviewer can see how much room a bound
//!   leaves.
//! - **Every file is checked against the others** (dtype and shape of each output), so a wrong
//!   output is reported as such rather than as a numeric mismatch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use abi::dtype::{bf16_bits_to_f32, f16_bits_to_f32};
use abi::neff::npy;

/// The folder's file of settings.
pub const FIXTURE_FILE: &str = "fixture.toml";
/// The module, as the producer wrote it.
pub const MODULE_FILE: &str = "module.hlo.pb";

/// Why a fixture folder cannot be read or an output does not match.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// A file or folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// `fixture.toml` does not have the expected keys.
    #[error("{path}: {detail}")]
    Toml {
        /// Its path.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// A `.npy` file is malformed or of a dtype this reader does not decode.
    #[error("{path}: {detail}")]
    Npy {
        /// Its path (or a name for bytes that came from elsewhere).
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// An output differs from the producer's in dtype or shape.
    #[error("{name}: {what} {got}, expected {want} as the producer's output")]
    Different {
        /// The output.
        name: String,
        /// `dtype` or `shape`.
        what: &'static str,
        /// Ours.
        got: String,
        /// The producer's.
        want: String,
    },
    /// An element is outside the tolerance.
    #[error(
        "{name}[{index}] is {got}, expected {want} within atol {atol} + rtol {rtol} (|difference| {difference}); {n_bad} of {n} elements are outside"
    )]
    OutOfTolerance {
        /// The output.
        name: String,
        /// The first element outside, as a flat C-order index.
        index: usize,
        /// Ours.
        got: f64,
        /// The producer's.
        want: f64,
        /// `|got - want|`.
        difference: f64,
        /// The bounds.
        rtol: f64,
        /// The bounds.
        atol: f64,
        /// How many elements are outside.
        n_bad: usize,
        /// How many elements there are.
        n: usize,
    },
}

/// The `[weights]` table: what the binding-layer path needs.
#[derive(Clone, Debug, PartialEq, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightsSpec {
    /// The `.safetensors` file, relative to the folder.
    pub file: PathBuf,
    /// `PARAM=KEY` choices for `nrtsim metaneff from-hlo --weight`.
    #[serde(default)]
    pub weight: Vec<String>,
    /// `PARAM=KEY` choices for `--state`.
    #[serde(default)]
    pub state: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureToml {
    producer: String,
    description: String,
    compile_args: Vec<String>,
    rtol: f64,
    atol: f64,
    weights: Option<WeightsSpec>,
}

/// One fixture folder.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelFixture {
    /// The folder.
    pub dir: PathBuf,
    /// The folder's name, `<producer>_<name>`.
    pub name: String,
    /// `jax` or `nkipy`.
    pub producer: String,
    /// What the model computes.
    pub description: String,
    /// The producer's neuronx-cc arguments after `compile --framework XLA FILE`.
    pub compile_args: Vec<String>,
    /// The relative tolerance.
    pub rtol: f64,
    /// The absolute tolerance.
    pub atol: f64,
    /// The binding-layer path's weights, when the folder has them.
    pub weights: Option<WeightsSpec>,
    /// The input files by NEFF input name.
    pub inputs: BTreeMap<String, PathBuf>,
    /// The producer's output files by NEFF output name.
    pub outputs: BTreeMap<String, PathBuf>,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> FixtureError + '_ {
    move |source| FixtureError::Io { path: path.to_owned(), source }
}

/// The `.npy` files of a folder by file stem.
fn npy_files(dir: &Path) -> Result<BTreeMap<String, PathBuf>, FixtureError> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let path = entry.map_err(io_error(dir))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if let Some(stem) = name.strip_suffix(".npy") {
            files.insert(stem.to_owned(), path.clone());
        }
    }
    Ok(files)
}

impl ModelFixture {
    /// Reads the folder `dir`.
    ///
    /// # Errors
    /// [`FixtureError::Io`] for a missing file or folder, [`FixtureError::Toml`] for a
    /// `fixture.toml` without the expected keys (or with others).
    pub fn load(dir: &Path) -> Result<ModelFixture, FixtureError> {
        let toml_path = dir.join(FIXTURE_FILE);
        let text = std::fs::read_to_string(&toml_path).map_err(io_error(&toml_path))?;
        let parsed: FixtureToml = toml::from_str(&text).map_err(|err| FixtureError::Toml {
            path: toml_path.clone(),
            detail: err.to_string(),
        })?;
        let module = dir.join(MODULE_FILE);
        std::fs::metadata(&module).map_err(io_error(&module))?;
        Ok(ModelFixture {
            dir: dir.to_owned(),
            name: dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned(),
            producer: parsed.producer,
            description: parsed.description,
            compile_args: parsed.compile_args,
            rtol: parsed.rtol,
            atol: parsed.atol,
            weights: parsed.weights,
            inputs: npy_files(&dir.join("inputs"))?,
            outputs: npy_files(&dir.join("outputs"))?,
        })
    }

    /// Every fixture folder in `models_dir` (the folders holding a `fixture.toml`), by name.
    ///
    /// # Errors
    /// As [`ModelFixture::load`], for the first folder that fails.
    pub fn load_all(models_dir: &Path) -> Result<Vec<ModelFixture>, FixtureError> {
        let mut dirs = Vec::new();
        for entry in std::fs::read_dir(models_dir).map_err(io_error(models_dir))? {
            let path = entry.map_err(io_error(models_dir))?.path();
            if path.join(FIXTURE_FILE).is_file() {
                dirs.push(path);
            }
        }
        dirs.sort();
        dirs.iter().map(|dir| ModelFixture::load(dir)).collect()
    }

    /// The module file.
    pub fn module(&self) -> PathBuf {
        self.dir.join(MODULE_FILE)
    }

    /// The file the compile arguments write (`--output PATH` or `--output=PATH`), relative to
    /// the compiler's working directory.
    pub fn compile_output(&self) -> Option<&str> {
        let args = &self.compile_args;
        args.iter().enumerate().find_map(|(i, arg)| match arg.strip_prefix("--output") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        })
    }

    /// Compares our output `got` (the bytes of a `.npy` file) with the producer's output `name`.
    ///
    /// # Errors
    /// [`FixtureError::Npy`] for an unreadable file, [`FixtureError::Different`] for another
    /// dtype or shape, [`FixtureError::OutOfTolerance`] for an element outside the bounds.
    pub fn compare_output(&self, name: &str, got: &[u8]) -> Result<Agreement, FixtureError> {
        let path = self.outputs.get(name).ok_or_else(|| FixtureError::Npy {
            path: name.to_owned(),
            detail: format!(
                "no producer output of that name, expected one of {:?}",
                self.outputs.keys().collect::<Vec<_>>()
            ),
        })?;
        let want = std::fs::read(path).map_err(io_error(path))?;
        compare_npy(name, got, &want, self.rtol, self.atol)
    }
}

/// How close two arrays are.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Agreement {
    /// The number of elements.
    pub n: usize,
    /// The largest `|ours - theirs|`.
    pub max_abs: f64,
    /// The largest `|ours - theirs| / |theirs|` over the elements where theirs is not zero.
    pub max_rel: f64,
}

/// A `.npy` file's dtype, shape and elements as `f64`.
///
/// # Errors
/// [`FixtureError::Npy`] for a malformed file, Fortran order, or a dtype without a decoder here.
pub fn npy_values(name: &str, bytes: &[u8]) -> Result<(String, Vec<u64>, Vec<f64>), FixtureError> {
    let bad = |detail: String| FixtureError::Npy { path: name.to_owned(), detail };
    let header = npy::parse_header(name, bytes).map_err(|err| bad(err.to_string()))?;
    if header.fortran_order {
        return Err(bad("the array is in Fortran order, expected C order".to_owned()));
    }
    let data = bytes.get(header.data_offset..).unwrap_or_default();
    let descr = header.descr.replace('=', "<");
    let values: Vec<f64> = match descr.as_str() {
        "<f4" => data
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        "<f8" => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect(),
        "<f2" => data
            .chunks_exact(2)
            .map(|c| f64::from(f16_bits_to_f32(u16::from_le_bytes([c[0], c[1]]))))
            .collect(),
        "<V2" | "|V2" => data
            .chunks_exact(2)
            .map(|c| f64::from(bf16_bits_to_f32(u16::from_le_bytes([c[0], c[1]]))))
            .collect(),
        "|i1" => data.iter().map(|&b| f64::from(b as i8)).collect(),
        "|u1" | "|b1" => data.iter().map(|&b| f64::from(b)).collect(),
        "<i2" => {
            data.chunks_exact(2).map(|c| f64::from(i16::from_le_bytes([c[0], c[1]]))).collect()
        }
        "<u2" => {
            data.chunks_exact(2).map(|c| f64::from(u16::from_le_bytes([c[0], c[1]]))).collect()
        }
        "<i4" => data
            .chunks_exact(4)
            .map(|c| f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        "<u4" => data
            .chunks_exact(4)
            .map(|c| f64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect(),
        "<i8" => data
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64)
            .collect(),
        "<u8" => data
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f64)
            .collect(),
        other => {
            return Err(bad(format!(
                "dtype {other:?}, expected a float, integer or bool descr (<f4, <f2, <V2, |i1, …)"
            )));
        }
    };
    Ok((descr, header.shape, values))
}

/// Compares two `.npy` files' bytes, `got` (ours) against `want` (the producer's), under
/// `numpy.allclose`'s rule; NaN matches NaN.
///
/// # Errors
/// As [`ModelFixture::compare_output`].
pub fn compare_npy(
    name: &str,
    got: &[u8],
    want: &[u8],
    rtol: f64,
    atol: f64,
) -> Result<Agreement, FixtureError> {
    let (got_descr, got_shape, got_values) = npy_values(&format!("our {name}"), got)?;
    let (want_descr, want_shape, want_values) =
        npy_values(&format!("the producer's {name}"), want)?;
    let different = |what, got: String, want: String| FixtureError::Different {
        name: name.to_owned(),
        what,
        got,
        want,
    };
    // A PRED tensor crosses libnrt as uint8 (libnrt has no bool dtype), so our `|u1` output
    // matches a producer's numpy bool (`|b1`): both are bytes holding 0 or 1.
    let as_bytes = |descr: &str| if descr == "|b1" { "|u1".to_owned() } else { descr.to_owned() };
    if as_bytes(&got_descr) != as_bytes(&want_descr) {
        return Err(different("dtype", got_descr, want_descr));
    }
    if got_shape != want_shape {
        return Err(different("shape", format!("{got_shape:?}"), format!("{want_shape:?}")));
    }
    let mut agreement = Agreement { n: want_values.len(), ..Agreement::default() };
    let mut first_bad = None;
    let mut n_bad = 0;
    for (index, (&g, &w)) in got_values.iter().zip(&want_values).enumerate() {
        let same = (g.is_nan() && w.is_nan()) || g == w;
        let difference = if same { 0.0 } else { (g - w).abs() };
        // A NaN on one side only makes the difference NaN, which no bound admits.
        let within = difference <= atol + rtol * w.abs();
        if !same && !within {
            n_bad += 1;
            first_bad.get_or_insert((index, g, w, difference));
        }
        if difference.is_finite() {
            agreement.max_abs = agreement.max_abs.max(difference);
            if w != 0.0 {
                agreement.max_rel = agreement.max_rel.max(difference / w.abs());
            }
        }
    }
    match first_bad {
        None => Ok(agreement),
        Some((index, got, want, difference)) => Err(FixtureError::OutOfTolerance {
            name: name.to_owned(),
            index,
            got,
            want,
            difference,
            rtol,
            atol,
            n_bad,
            n: want_values.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_npy(shape: &[u64], values: &[f32]) -> Vec<u8> {
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        npy::encode("<f4", shape, &data).unwrap()
    }

    #[test]
    fn values_within_the_bounds_agree_and_the_largest_differences_are_measured() {
        let want = f32_npy(&[3], &[1.0, -2.0, 0.0]);
        let got = f32_npy(&[3], &[1.5, -2.0, 0.25]);
        let agreement = compare_npy("o", &got, &want, 0.5, 0.25).unwrap();
        assert_eq!(agreement, Agreement { n: 3, max_abs: 0.5, max_rel: 0.5 });
    }

    #[test]
    fn a_value_outside_is_named_with_the_count() {
        let want = f32_npy(&[2, 2], &[1.0, 1.0, 1.0, 1.0]);
        let got = f32_npy(&[2, 2], &[1.0, 1.5, 3.0, 1.0]);
        let error = compare_npy("o", &got, &want, 0.0, 0.25).unwrap_err();
        assert!(
            matches!(error, FixtureError::OutOfTolerance { index: 1, n_bad: 2, n: 4, .. }),
            "{error:?}"
        );
    }

    #[test]
    fn nan_matches_nan_only() {
        let want = f32_npy(&[2], &[f32::NAN, 1.0]);
        assert!(compare_npy("o", &f32_npy(&[2], &[f32::NAN, 1.0]), &want, 0.0, 0.0).is_ok());
        let error = compare_npy("o", &f32_npy(&[2], &[1.0, 1.0]), &want, 1.0, 1.0).unwrap_err();
        assert!(matches!(error, FixtureError::OutOfTolerance { index: 0, .. }), "{error:?}");
    }

    #[test]
    fn another_shape_or_dtype_is_a_difference_not_a_mismatch() {
        let want = f32_npy(&[2], &[1.0, 2.0]);
        let error = compare_npy("o", &f32_npy(&[1, 2], &[1.0, 2.0]), &want, 1.0, 1.0).unwrap_err();
        assert!(matches!(error, FixtureError::Different { what: "shape", .. }), "{error:?}");
        let bools = npy::encode("|b1", &[2], &[1, 0]).unwrap();
        let bytes = npy::encode("|u1", &[2], &[1, 0]).unwrap();
        assert!(compare_npy("o", &bytes, &bools, 0.0, 0.0).is_ok(), "PRED crosses as uint8");
        let int = npy::encode("<i4", &[2], &[1, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        let error = compare_npy("o", &int, &want, 1.0, 1.0).unwrap_err();
        assert!(matches!(error, FixtureError::Different { what: "dtype", .. }), "{error:?}");
    }

    #[test]
    fn the_compile_output_is_found_in_either_form() {
        let mut fixture = ModelFixture {
            dir: PathBuf::new(),
            name: String::new(),
            producer: "jax".to_owned(),
            description: String::new(),
            compile_args: ["--target", "trn2", "--output", "model.neff"].map(String::from).to_vec(),
            rtol: 0.0,
            atol: 0.0,
            weights: None,
            inputs: BTreeMap::new(),
            outputs: BTreeMap::new(),
        };
        assert_eq!(fixture.compile_output(), Some("model.neff"));
        fixture.compile_args =
            ["--pipeline", "compile", "--output=file.neff"].map(String::from).to_vec();
        assert_eq!(fixture.compile_output(), Some("file.neff"));
        fixture.compile_args = vec!["--outputs".to_owned()];
        assert_eq!(fixture.compile_output(), None);
    }

    #[test]
    fn the_committed_fixtures_load() {
        let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/tests/models");
        let fixtures = ModelFixture::load_all(&models).unwrap();
        let jax: Vec<&str> =
            fixtures.iter().filter(|f| f.producer == "jax").map(|f| f.name.as_str()).collect();
        assert_eq!(jax, ["jax_attention", "jax_conv", "jax_mlp"]);
        let mlp = fixtures.iter().find(|f| f.name == "jax_mlp").unwrap();
        assert_eq!(
            mlp.inputs.keys().collect::<Vec<_>>(),
            ["input0", "input1", "input2", "input3", "input4"]
        );
        assert_eq!(mlp.outputs.keys().collect::<Vec<_>>(), ["output0"]);
        assert_eq!(mlp.weights.as_ref().map(|w| w.weight.len()), Some(4));
    }
}
