//! Writer → reader round trips over arbitrary specs, and byte-identical re-writes.

use std::collections::BTreeMap;

use abi::neff::{
    ConstantSpec, GraphSpec, MrType, Neff, NeffSpec, ReadOptions, Signature, SignatureForm,
    TensorSignature, Var,
};
use proptest::prelude::*;

const KINDS: &[&str] = &[
    "state-buffer",
    "file",
    "tmp-buf",
    "input",
    "output",
    "pointer",
    "virtual",
    "list",
    "dge-table",
    "remote",
    "semaphore",
];

fn var_strategy() -> impl Strategy<Value = Var> {
    (
        "[a-zA-Z_][a-zA-Z0-9_.]{0,12}",
        proptest::sample::select(KINDS),
        proptest::option::of(0u64..1 << 40),
        proptest::option::of(0u64..1 << 20),
        proptest::option::of("[a-z0-9_]{1,8}\\.npy"),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u32>()),
        proptest::option::of(proptest::collection::vec(any::<u32>(), 0..4)),
    )
        .prop_map(
            |(
                name,
                kind,
                size,
                alignment,
                file_name,
                backing_variable_off,
                referenced_var_id,
                list,
            )| Var {
                size,
                alignment,
                file_name,
                backing_variable_off,
                referenced_var_id,
                list,
                ..Var::new(&name, 0, kind)
            },
        )
}

/// A graph whose var_ids are a permutation of `0..n` and whose names are unique.
fn graph_strategy(graph_idx: usize) -> impl Strategy<Value = GraphSpec> {
    proptest::collection::vec(var_strategy(), 1..7).prop_shuffle().prop_map(move |vars| {
        let vars = vars
            .into_iter()
            .enumerate()
            .map(|(var_id, var)| Var {
                name: format!("{}_{var_id}", var.name),
                var_id: var_id as u32,
                ..var
            })
            .collect();
        GraphSpec { name: format!("sg{graph_idx:02}"), vars }
    })
}

fn tensors_strategy(prefix: &'static str) -> impl Strategy<Value = Vec<TensorSignature>> {
    proptest::collection::vec(
        (
            "[a-z]{1,6}",
            proptest::sample::select(&["float16", "float32", "bfloat16", "int64", ""][..]),
            proptest::collection::vec(-1i64..4096, 0..4),
        ),
        0..4,
    )
    .prop_map(move |tensors| {
        tensors
            .into_iter()
            .enumerate()
            .map(|(idx, (name, dtype, shape))| TensorSignature {
                name: format!("{prefix}{idx}_{name}"),
                dtype: dtype.to_owned(),
                shape,
            })
            .collect()
    })
}

fn spec_strategy() -> impl Strategy<Value = NeffSpec> {
    (
        "[a-zA-Z0-9_.-]{0,40}",
        prop_oneof![Just(1u64), Just(2u64)],
        (
            0u64..=2,
            any::<u64>(),
            any::<u32>(),
            1u32..=2,
            any::<u64>().prop_map(|bits| bits & !0x7FFF_FFFF_F800_0000),
        ),
        proptest::collection::vec(any::<bool>(), 1..4),
        (tensors_strategy("input"), tensors_strategy("output")),
        prop_oneof![
            Just(SignatureForm::Both),
            Just(SignatureForm::GraphOnly),
            Just(SignatureForm::MetadataOnly),
            Just(SignatureForm::Compiled)
        ],
        proptest::collection::btree_map(
            "[a-z]{1,6}(/[a-z0-9]{1,6})?\\.(bin|json|txt)",
            proptest::collection::vec(any::<u8>(), 0..300),
            0..4,
        ),
        proptest::collection::vec(any::<u8>(), 0..64),
    )
        .prop_flat_map(
            |(
                name,
                pkg_version,
                versions,
                graph_flags,
                (inputs, outputs),
                form,
                extras,
                constant,
            )| {
                let graphs: Vec<_> = (0..graph_flags.len()).map(graph_strategy).collect();
                (
                    Just((name, pkg_version, versions, inputs, outputs, form, extras, constant)),
                    graphs,
                )
            },
        )
        .prop_map(
            |(
                (name, pkg_version, versions, inputs, outputs, form, extras, constant),
                mut graphs,
            )| {
                let (version_major, version_minor, num_tpb, lnc_size, feature_bits) = versions;
                // The loader needs one output; the first var of the first graph provides it.
                graphs[0].vars[0] = Var {
                    kind: "output".to_owned(),
                    mr_type: Some(MrType::Output),
                    ..graphs[0].vars[0].clone()
                };
                let mut spec = NeffSpec::new(&name);
                spec.header.pkg_version = pkg_version;
                spec.header.version_major = version_major;
                spec.header.version_minor = version_minor;
                spec.header.num_tpb = num_tpb;
                spec.header.lnc_size = lnc_size;
                spec.header.feature_bits = feature_bits;
                spec.graphs = graphs;
                spec.signature = Signature { inputs, outputs };
                spec.signature_form = form;
                spec.extra_members = extras
                    .into_iter()
                    .map(|(name, bytes)| (format!("extra/{name}"), bytes))
                    .collect();
                let n_items = constant.len() as u64;
                spec.constants.insert(
                    "sg00/c.npy".to_owned(),
                    ConstantSpec { descr: "|u1".to_owned(), shape: vec![n_items], data: constant },
                );
                spec
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn written_specs_read_back_and_rewrite_identically(spec in spec_strategy()) {
        let bytes = spec.to_bytes().expect("valid spec");
        prop_assert_eq!(&bytes, &spec.to_bytes().expect("valid spec"));
        let options = ReadOptions { verify_hash: true, ..ReadOptions::default() };
        let neff = Neff::parse(&bytes, &options).expect("written neffs read back");
        prop_assert!(neff.hash_ok);
        let header = &neff.header;
        prop_assert_eq!(
            (header.pkg_version, header.version_major, header.version_minor, header.num_tpb, header.lnc_size, header.feature_bits),
            (spec.header.pkg_version, spec.header.version_major, spec.header.version_minor, spec.header.num_tpb, spec.header.lnc_size, spec.header.feature_bits)
        );
        prop_assert_eq!(&header.name, &spec.header.name);
        prop_assert_eq!(&neff.signature, &spec.signature);
        prop_assert_eq!(neff.graphs.len(), spec.graphs.len());
        for (graph, graph_spec) in neff.graphs.iter().zip(&spec.graphs) {
            prop_assert_eq!(&graph.name, &graph_spec.name);
            prop_assert_eq!(&graph.definition, &format!("{}/def.json", graph_spec.name));
            let mut expected = graph_spec.vars.clone();
            expected.sort_by_key(|var| var.var_id);
            prop_assert_eq!(&graph.vars, &expected);
        }
        let extras: BTreeMap<&str, &[u8]> = neff
            .members
            .iter()
            .filter(|(name, _)| name.starts_with("extra/"))
            .map(|(name, member)| (name.as_str(), member.bytes()))
            .collect();
        let expected: BTreeMap<&str, &[u8]> = spec.extra_members.iter().map(|(name, bytes)| (name.as_str(), bytes.as_slice())).collect();
        prop_assert_eq!(extras, expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn damaged_neffs_are_refused_without_panicking(
        flips in proptest::collection::vec((any::<proptest::sample::Index>(), 1u8..=255), 1..4),
        cut in any::<proptest::sample::Index>(),
    ) {
        let mut spec = NeffSpec::new("damaged.neff");
        spec.graphs.push(GraphSpec { name: "sg00".to_owned(), vars: vec![Var::new("out", 0, "output").with_size(4)] });
        let valid = spec.to_bytes().expect("valid spec");
        let mut damaged = valid.clone();
        for (at, mask) in flips {
            let at = at.index(damaged.len());
            damaged[at] ^= mask;
        }
        // Any outcome is fine except a panic; an error must carry a status other than success.
        if let Err(error) = Neff::parse(&damaged, &ReadOptions::loader()) {
            prop_assert_ne!(error.status(), abi::status::NrtStatus::Success);
        }
        let truncated = &valid[..cut.index(valid.len())];
        prop_assert!(Neff::parse(truncated, &ReadOptions::loader()).is_err());
    }
}
