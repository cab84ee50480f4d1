//! A misspelled name in `case.toml` fails discovery, before anything runs: the message names the
//! file, the step, the key and the values it could have been.
//!
//! Each case writes one vector into a fresh folder and runs `vector::discover` on it, through one
//! helper, [`check`]; the well-spelled twin of every case ([`check_accepted`]) shows that the
//! rejection is about the name and nothing else.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use conformance::spec::{ErrorKind, LoadAction, Setter, Status, Step, TensorPlacement};
use conformance::vector;

/// A vectors folder of its own, removed when dropped.
struct Folder(PathBuf);

impl Folder {
    fn with_case(case_toml: &str) -> Folder {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "nrtsim-spec-errors-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let dir = root.join("area").join("case");
        std::fs::create_dir_all(&dir).expect("temp folder");
        std::fs::write(dir.join("case.toml"), case_toml).expect("case.toml written");
        Folder(root)
    }

    fn case_path(&self) -> PathBuf {
        self.0.join("area").join("case").join("case.toml")
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn discover(root: &Path) -> Result<Vec<vector::Vector>, String> {
    vector::discover(root).map_err(|e| e.to_string())
}

/// Discovery of a vector whose case is `description = …` plus `body` must fail, and its message
/// must contain the file and every one of `parts`.
fn check(body: &str, parts: &[&str]) {
    let folder = Folder::with_case(&format!("description = \"a misspelling\"\n{body}"));
    let message = match discover(&folder.0) {
        Ok(_) => panic!("discovery accepted a misspelled case:\n{body}"),
        Err(message) => message,
    };
    let file = folder.case_path().display().to_string();
    for part in std::iter::once(file.as_str()).chain(parts.iter().copied()) {
        assert!(message.contains(part), "expected {part:?} in the error, got:\n{message}");
    }
}

/// Discovery of the same case spelled right must succeed.
fn check_accepted(body: &str) -> Vec<vector::Vector> {
    let folder = Folder::with_case(&format!("description = \"well spelled\"\n{body}"));
    discover(&folder.0).unwrap_or_else(|message| panic!("rejected:\n{body}\n{message}"))
}

#[test]
fn a_misspelled_status_names_the_step_the_key_and_the_statuses() {
    check(
        "[[step]]\ncall = \"init\"\n\n[[step]]\ncall = \"tensor_allocate\"\nas = \"t\"\nsize = 4\nexpect = \"NRT_INVALD\"\n",
        &["step 2 (tensor_allocate)", "expect", "\"NRT_INVALD\"", "NRT_SUCCESS", "NRT_INVALID"],
    );
    let accepted = check_accepted(
        "[[step]]\ncall = \"init\"\n\n[[step]]\ncall = \"tensor_allocate\"\nas = \"t\"\nsize = 4\nexpect = \"NRT_INVALID\"\n",
    );
    match &accepted[0].case.steps[1] {
        Step::TensorAllocate(step) => {
            assert_eq!(step.expect, Some(Status(abi::status::NrtStatus::Invalid)));
        }
        other => panic!("expected a tensor_allocate step, got {other:?}"),
    }
}

#[test]
fn a_misspelled_status_inside_an_expected_error_names_the_nested_key() {
    check(
        "[[step]]\ncall = \"model_new\"\nas = \"m\"\nexpect_error = { kind = \"runtime\", status = \"NRT_RESOURSE\" }\n",
        &["step 1 (model_new)", "expect_error.status", "NRT_RESOURCE"],
    );
}

#[test]
fn a_misspelled_placement_names_the_key_and_the_placements() {
    check(
        "[[step]]\ncall = \"tensor_allocate\"\nas = \"t\"\nsize = 4\nplacement = \"DEVCE\"\n",
        &["step 1 (tensor_allocate)", "placement", "\"DEVCE\"", "DEVICE, HOST, VIRTUAL"],
    );
    assert_eq!(TensorPlacement::NAMES, ["DEVICE", "HOST", "VIRTUAL"]);
    check_accepted(
        "[[step]]\ncall = \"tensor_allocate\"\nas = \"t\"\nsize = 4\nplacement = \"HOST\"\n",
    );
}

#[test]
fn a_misspelled_setter_names_the_key_and_the_setters() {
    check(
        "[[step]]\ncall = \"model_set\"\nmodel = \"m\"\nsetter = \"set_lazyload\"\nvalue = true\n",
        &["step 1 (model_set)", "setter", "\"set_lazyload\"", &Setter::NAMES.join(", ")],
    );
    check_accepted(
        "[[step]]\ncall = \"model_set\"\nmodel = \"m\"\nsetter = \"set_lazy_load\"\nvalue = true\n",
    );
}

#[test]
fn a_misspelled_framework_names_the_key_and_the_frameworks() {
    check(
        "auto_init = false\n\n[[step]]\ncall = \"init\"\nframework = \"PYTHORCH\"\n",
        &["step 1 (init)", "framework", "\"PYTHORCH\"", "NO_FW", "PYTORCH"],
    );
    check_accepted("auto_init = false\n\n[[step]]\ncall = \"init\"\nframework = \"PYTORCH\"\n");
}

#[test]
fn a_misspelled_dtype_deep_in_a_step_names_its_path_and_the_dtypes() {
    check(
        "[[step]]\ncall = \"model_forward\"\nmodel = \"m\"\ninputs = [{ dtype = \"Float\", shape = [1] }, { dtype = \"float\", shape = [1] }]\n",
        &["step 1 (model_forward)", "inputs[1].dtype", "\"float\"", "Float", "BFloat16"],
    );
}

#[test]
fn a_misspelled_error_kind_action_and_load_status_are_rejected() {
    check(
        "[[step]]\ncall = \"model_load\"\nmodel = \"m\"\nexpect_error = { kind = \"dtyp\" }\n",
        &["expect_error.kind", "\"dtyp\"", "unsupported_dtype", ErrorKind::Dtype.name()],
    );
    check(
        "[[step]]\ncall = \"model_load\"\nmodel = \"m\"\naction = \"lod\"\n",
        &["action", "\"lod\"", &LoadAction::NAMES.join(", ")],
    );
    check(
        "[[step]]\ncall = \"model_load_status\"\nmodel = \"m\"\nexpect = \"load\"\n",
        &["expect", "\"load\"", "unloaded, loading, loaded"],
    );
}

#[test]
fn a_misspelled_call_names_the_step_and_the_calls() {
    check(
        "[[step]]\ncall = \"init\"\n\n[[step]]\ncall = \"tensor_alocate\"\n",
        &["step 2", "\"tensor_alocate\"", "tensor_allocate", "model_forward"],
    );
    check("[[step]]\nas = \"t\"\n", &["step 1", "no call"]);
}

#[test]
fn an_unknown_key_in_a_step_is_rejected_with_the_keys_it_has() {
    check(
        "[[step]]\ncall = \"tensor_free\"\ntensor = \"t\"\nexpected = \"NRT_INVALID\"\n",
        &["step 1 (tensor_free)", "unknown field `expected`", "`expect`"],
    );
}

#[test]
fn misspelled_names_outside_the_steps_are_rejected_too() {
    check("backends = [\"sim\", \"capy\"]\n", &["backends", "\"capy\"", "sim, capi, nrt"]);
    check(
        "[neff]\ninputs = [{ name = \"input0\", dtype = \"flaot32\", shape = [1] }]\n",
        &["dtype", "flaot32", "float32"],
    );
    check("[neff]\nheader = { num_tbp = 2 }\n", &["num_tbp", "num_tpb", "lnc_size"]);
    check("[sim]\nfaults = \"nrt_execute:one=EXEC_BAD_INPUT\"\n", &["faults"]);
    check_accepted(
        "backends = [\"sim\"]\n[sim]\nfaults = \"nrt_execute:1=EXEC_BAD_INPUT\"\n[neff]\nheader = { num_tpb = 2 }\ninputs = [{ name = \"input0\", dtype = \"float32\", shape = [1] }]\n",
    );
}

#[test]
fn a_misspelled_libnrt_function_names_the_step_and_the_key() {
    check(
        "[[step]]\ncall = \"libnrt\"\nfunction = \"nrt_tensor_memsett\"\nargs = [\"t\"]\n",
        &["step 1 (libnrt)", "function", "\"nrt_tensor_memsett\"", "is not a libnrt function"],
    );
    let accepted = check_accepted(
        "[[step]]\ncall = \"libnrt\"\nfunction = \"nrt_tensor_memset\"\nargs = [\"t\", \"0\", \"1\", \"4\"]\n",
    );
    match &accepted[0].case.steps[0] {
        Step::Libnrt(step) => {
            assert_eq!(step.function, abi::functions::LibnrtFunction::nrt_tensor_memset);
            assert_eq!(step.args, ["t", "0", "1", "4"]);
        }
        other => panic!("expected a libnrt step, got {other:?}"),
    }
}
