//! Reading a NEFF's JSON members against parsing them alone, in the same run
//! (`cargo bench -p nrtsim-abi --bench neff_json`).
//!
//! A NEFF whose `sg00/def.json` lists 20 000 variables (every modelled field set) and whose
//! `neff.json` has 20 000 graph-form nodes, heads and shapes plus a 2 000-tensor metadata
//! signature. The baseline is `serde_json::from_slice::<Value>` of the same three members, which
//! every reader has to do; `Neff::parse` adds the typed reading (the structs, the paths kept for
//! errors, the checks) and the archive. The ratio parse / baseline is the reader's overhead.
//! Each figure is the best of several rounds (the machine is shared).

use std::hint::black_box;
use std::time::{Duration, Instant};

use abi::neff::{Neff, NeffHeader, ReadOptions, assemble_neff, write_payload};

const VARS: usize = 20_000;
const NODES: usize = 20_000;
const SIGNATURE: usize = 2_000;

fn def_json() -> String {
    let vars: Vec<String> = (0..VARS)
        .map(|i| {
            let kind = if i == 0 { "output" } else { "input" };
            format!(
                r#""v{i}":{{"type":"{kind}","var_id":{i},"size":{},"alignment":64,"file_name":"w{i}.npy","backing_variable_off":{},"referenced_var_id":0,"list":[0,1,2]}}"#,
                4 * i + 4,
                8 * i
            )
        })
        .collect();
    format!(r##"{{"#comment":"bench","var":{{{}}}}}"##, vars.join(","))
}

fn neff_json() -> String {
    let nodes: Vec<String> = (0..NODES)
        .map(|i| format!(r#"{{"name":"n{i}","op":"null","attrs":{{"k":"v"}}}}"#))
        .collect();
    let heads: Vec<String> = (0..NODES).map(|i| format!("[{i},0,0]")).collect();
    let shapes: Vec<String> = (0..NODES).map(|i| format!("[1,{},768]", i % 512)).collect();
    let dtypes: Vec<&str> = (0..NODES).map(|_| r#""float16""#).collect();
    let inputs: Vec<String> = (0..SIGNATURE)
        .map(|i| format!(r#""x{i}":{{"id":{i},"dtype":"float16","shape":[1,128,768]}}"#))
        .collect();
    format!(
        r#"{{"metadata":{{"signatures":{{"default":{{"inputs":{{{}}},"outputs":{{}}}}}}}},"nodes":[{}],"arg_nodes":[0],"heads":[{}],"attrs":{{"shape":["list_shape",[{}]],"dltype":["list_str",[{}]]}}}}"#,
        inputs.join(","),
        nodes.join(","),
        heads.join(","),
        shapes.join(","),
        dtypes.join(",")
    )
}

/// The best per-iteration time of `rounds` rounds of `iterations` calls.
fn best(rounds: usize, iterations: usize, mut run: impl FnMut()) -> Duration {
    (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                run();
            }
            start.elapsed() / iterations as u32
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let kelf = br#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"}],"version":"0.5"}"#;
    let (def_json, neff_json) = (def_json(), neff_json());
    let members: [(&str, &[u8]); 3] = [
        ("kelf-0.json", kelf),
        ("neff.json", neff_json.as_bytes()),
        ("sg00/def.json", def_json.as_bytes()),
    ];
    let payload = write_payload(2, &members).expect("valid members");
    let file = assemble_neff(&NeffHeader::default(), &payload).expect("fits");
    let options = ReadOptions::default();
    let neff = Neff::parse(&file, &options).expect("the bench NEFF is valid");
    assert_eq!((neff.graphs[0].vars.len(), neff.signature.inputs.len()), (VARS, SIGNATURE));
    let json_bytes: usize = members.iter().map(|(_, bytes)| bytes.len()).sum();

    let baseline = best(7, 5, || {
        for (_, bytes) in &members {
            black_box(serde_json::from_slice::<serde_json::Value>(black_box(bytes)).expect("JSON"));
        }
    });
    let parse = best(7, 5, || {
        black_box(Neff::parse(black_box(&file), &options).expect("valid"));
    });
    println!(
        "{} KiB of JSON ({VARS} vars, {NODES} nodes, {SIGNATURE} signature inputs):",
        json_bytes / 1024
    );
    println!("  serde_json::Value parse alone  {baseline:>10.2?}");
    println!("  Neff::parse (typed reading)    {parse:>10.2?}");
    println!(
        "  overhead: parse / Value parse = {:.2}",
        parse.as_secs_f64() / baseline.as_secs_f64()
    );
}
