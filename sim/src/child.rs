//! The one child-process harness: runs a body that needs a fresh libnrt in a child process and
//! reads back what it did.
//!
//! libnrt is one runtime per process, configured from the environment, so a body that needs its
//! own machine (a vector on the `capi` or `nrt` backend, a test body on `NrtRuntime` over the
//! simulator's `libnrt.so.1`) runs in a child: the parent describes the machine as a
//! [`SimConfig`], which [`simulate`] turns into the child's environment with
//! `sim::config::to_env` (the inverse of what the simulator library reads); the child prints one
//! [`RunOutput`] as a JSON line on stdout with [`report`]; the parent's [`run`] reads it. The
//! libnrt backends of the conformance runner (their child is `nrtsim run-vector`) and the C-ABI
//! tests of `sim/capi` (their own test binary, re-executed) both use it, so the protocol exists
//! once. It lives beside [`crate::config`], whose `to_env` it applies, so neither user depends
//! on the other.

use std::process::Command;

use crate::SimConfig;

/// What a run produced: the result a child reports and its parent reads, and what the
/// conformance runner gives for a run in its own process.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct RunOutput {
    /// The trace lines.
    pub trace: Vec<String>,
    /// The first failed expectation, if any.
    pub failure: Option<String>,
}

/// Makes `command`'s simulator library the machine `config` describes: every variable the
/// simulator reads is set, so nothing of this process's own environment leaks into the child's
/// machine.
pub fn simulate<'a>(command: &'a mut Command, config: &SimConfig) -> &'a mut Command {
    command.envs(crate::config::to_env(config))
}

/// Runs `command` to its end and returns the [`RunOutput`] it reported (its last line on stdout
/// that is one), whatever its exit status; `what` names the body in the failure of a child that
/// could not start or ended without a result (a crash, a panic), which carries its exit status
/// and stderr.
pub fn run(command: &mut Command, what: &str) -> RunOutput {
    let failed = |message: String| RunOutput { trace: Vec::new(), failure: Some(message) };
    let output = match command.output() {
        Ok(output) => output,
        Err(error) => {
            return failed(format!(
                "cannot run {} for {what}: {error}",
                command.get_program().to_string_lossy()
            ));
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let reported = stdout
        .lines()
        .rev()
        .filter(|line| line.starts_with('{'))
        .find_map(|line| serde_json::from_str::<RunOutput>(line).ok());
    reported.unwrap_or_else(|| {
        failed(format!(
            "the child process for {what} exited with {} without a result: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    })
}

/// The child's side: prints `output` as one JSON line on stdout, for the parent's [`run`].
pub fn report(output: &RunOutput) {
    // A RunOutput is strings only, so encoding cannot fail; the fallback keeps the protocol.
    let line = serde_json::to_string(output).unwrap_or_else(|error| {
        format!("{{\"trace\":[],\"failure\":\"cannot encode the result: {error}\"}}")
    });
    println!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.arg("-c").arg(script);
        command
    }

    #[test]
    fn the_last_reported_result_is_read_whatever_the_exit_status() {
        let out = run(
            &mut shell(
                r#"echo noise; echo '{"trace":["a -> NRT_SUCCESS"],"failure":"boom"}'; exit 3"#,
            ),
            "body",
        );
        assert_eq!(out.trace, ["a -> NRT_SUCCESS"]);
        assert_eq!(out.failure.as_deref(), Some("boom"));
    }

    #[test]
    fn a_child_without_a_result_is_a_failure_with_its_status_and_stderr() {
        let out = run(&mut shell("echo partial; echo oops >&2; exit 7"), "body");
        let failure = out.failure.expect("a failure");
        assert!(failure.starts_with("the child process for body exited with"), "{failure}");
        assert!(failure.contains("7") && failure.ends_with("oops"), "{failure}");
        let out = run(&mut Command::new("/nonexistent/nrtsim-child"), "body");
        assert!(out.failure.expect("a failure").starts_with("cannot run /nonexistent"));
    }

    #[test]
    fn the_child_gets_every_simulator_variable_of_the_config() {
        let config = SimConfig { n_cores: 5, warnings_to_stderr: false, ..SimConfig::default() };
        let mut command = shell("");
        simulate(&mut command, &config);
        let envs: Vec<(String, Option<String>)> = command
            .get_envs()
            .map(|(k, v)| {
                (k.to_string_lossy().into_owned(), v.map(|v| v.to_string_lossy().into_owned()))
            })
            .collect();
        for (name, value) in crate::config::to_env(&config) {
            assert!(envs.contains(&(name.clone(), Some(value))), "{name} missing: {envs:?}");
        }
        assert!(envs.contains(&("NRTSIM_CORES".to_owned(), Some("5".to_owned()))));
    }
}
