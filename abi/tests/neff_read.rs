//! Reading NEFFs: the structural replica of a real NKI matmul NEFF, every header gate, payload
//! damage, and the metadata rules, each with the status libnrt returns.

use std::io::{Read, Write};

use abi::neff::{
    ConstantSpec, GraphSpec, MAX_GRAPHS, MrType, Neff, NeffError, NeffHeader, NeffSpec,
    ReadOptions, SIMULATOR_TARGET_FEATURE_BIT, SIMULATOR_TARGET_MEMBER, Signature, SignatureForm,
    TensorSignature, Var, assemble_neff, npy, write_payload,
};
use abi::status::NrtStatus;

/// The var table of one subgraph of the NKI matmul NEFF (docs/abi-facts.md §5).
fn matmul_vars(graph: &str) -> Vec<Var> {
    let constant = Var {
        alignment: Some(32768),
        file_name: Some("constant0.npy".to_owned()),
        ..Var::new(&format!("{graph}_constant0"), 4, "file").with_size(32768)
    };
    let dge_table = Var { list: Some(vec![1, 2, 3]), ..Var::new("DGETable0", 5, "dge-table") };
    vec![
        Var::new("SB", 0, "state-buffer"),
        Var::new("x", 1, "input").with_size(65536),
        Var::new("y", 2, "input").with_size(65536),
        Var::new("output0", 3, "output").with_size(32768),
        constant,
        dge_table,
    ]
}

fn matmul_spec() -> NeffSpec {
    let mut spec = NeffSpec::new("file.neff");
    spec.header.lnc_size = 2;
    spec.header.feature_bits = 0x209c00;
    spec.header.num_tpb = 1;
    spec.signature = Signature {
        inputs: vec![
            TensorSignature::new("x", "float16", &[128, 256]),
            TensorSignature::new("y", "float16", &[256, 128]),
        ],
        outputs: vec![TensorSignature::new("output0", "float16", &[128, 128])],
    };
    for graph in ["sg00", "sg01"] {
        spec.graphs.push(GraphSpec { name: graph.to_owned(), vars: matmul_vars(graph) });
        let data: Vec<u8> = (0..32768u32).map(|byte| (byte % 251) as u8).collect();
        spec.constants.insert(
            format!("{graph}/constant0.npy"),
            ConstantSpec { descr: "<f2".to_owned(), shape: vec![128, 128], data },
        );
        for engine in ["PE.json", "PE.bin", "Activation.json", "DVE.bin", "tensor_map.json"] {
            spec.extra_members.insert(format!("{graph}/{engine}"), b"{}".to_vec());
        }
    }
    spec.extra_members.insert("info.json".to_owned(), b"{\"unmodelled\": true}".to_vec());
    spec.extra_members.insert("hlo_stats.json".to_owned(), b"{}".to_vec());
    spec.extra_members.insert("debug_info/trace.txt".to_owned(), b"not json".to_vec());
    spec
}

fn loader_with_hash() -> ReadOptions {
    ReadOptions { verify_hash: true, ..ReadOptions::loader() }
}

/// Asserts that reading `bytes` fails with an error matching `is_expected` and `status`.
fn check_error(
    bytes: &[u8],
    options: &ReadOptions,
    status: NrtStatus,
    is_expected: impl Fn(&NeffError) -> bool,
) -> NeffError {
    let error = Neff::parse(bytes, options).expect_err("the file must be refused");
    assert!(is_expected(&error), "unexpected error: {error:?}");
    assert_eq!(error.status(), status, "{error}");
    let message = error.to_string();
    assert_eq!(message, message.trim_end_matches('.'), "messages end without a period");
    error
}

fn gunzip(payload: &[u8]) -> Vec<u8> {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(payload).read_to_end(&mut tar).expect("valid gzip");
    tar
}

fn gzip(tar: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(tar).expect("in memory");
    encoder.finish().expect("in memory")
}

/// A NEFF from raw members, bypassing the spec writer, for hand-made metadata.
fn neff_from_members(members: &[(&str, &[u8])]) -> Vec<u8> {
    let payload = write_payload(2, members).expect("valid members");
    assemble_neff(&NeffHeader::default(), &payload).expect("fits")
}

const KELF_SG00: &[u8] =
    br#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"}],"version":"0.5"}"#;

fn with_field(mut file: Vec<u8>, offset: usize, value: u64) -> Vec<u8> {
    file[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
    file
}

/// One row of a var table as `nrtsim inspect` shows it: name, var_id, type, mr_type id, size.
type VarRow<'a> = (&'a str, u32, &'a str, Option<u32>, Option<u64>);

#[test]
fn matmul_replica_reads_back_with_its_var_table_and_signature() {
    let bytes = matmul_spec().to_bytes().expect("valid spec");
    let neff = Neff::parse(&bytes, &loader_with_hash()).expect("valid neff");
    let header = &neff.header;
    assert_eq!(
        (header.pkg_version, header.header_size, header.version_major, header.version_minor),
        (2, 1024, 2, 0)
    );
    assert_eq!(
        (header.num_tpb, header.name.as_str(), header.lnc_size, header.feature_bits),
        (1, "file.neff", 2, 0x209c00)
    );
    assert_eq!(header.data_size as usize, bytes.len() - 1024);
    assert!(neff.hash_ok);

    let names: Vec<&str> = neff.graphs.iter().map(|graph| graph.name.as_str()).collect();
    assert_eq!(names, ["sg00", "sg01"]);
    let sg00 = &neff.graphs[0];
    assert_eq!(sg00.definition, "sg00/def.json");
    let table: Vec<VarRow<'_>> = sg00
        .vars
        .iter()
        .map(|var| {
            (
                var.name.as_str(),
                var.var_id,
                var.kind.as_str(),
                var.mr_type.map(MrType::id),
                var.size,
            )
        })
        .collect();
    assert_eq!(
        table,
        [
            ("SB", 0, "state-buffer", Some(1), None),
            ("x", 1, "input", Some(5), Some(65536)),
            ("y", 2, "input", Some(5), Some(65536)),
            ("output0", 3, "output", Some(6), Some(32768)),
            ("sg00_constant0", 4, "file", Some(3), Some(32768)),
            ("DGETable0", 5, "dge-table", Some(10), None),
        ]
    );
    assert_eq!(sg00.vars, matmul_vars("sg00"));
    assert_eq!(sg00.var("DGETable0").and_then(|var| var.list.clone()), Some(vec![1, 2, 3]));

    let constant = sg00.var("sg00_constant0").expect("constant var");
    let member = neff.var_file(sg00, constant).expect("constant member resolves next to def.json");
    let npy_header = npy::parse_header("sg00/constant0.npy", member.bytes()).expect("valid npy");
    assert_eq!(
        (npy_header.descr.as_str(), npy_header.shape.as_slice()),
        ("<f2", &[128u64, 128][..])
    );

    assert_eq!(neff.signature, matmul_spec().signature);
    for unmodelled in ["info.json", "hlo_stats.json", "debug_info/trace.txt", "sg01/PE.bin"] {
        assert!(neff.members.contains_key(unmodelled), "{unmodelled} is listed");
    }
}

#[test]
fn matmul_replica_is_a_pax_tar_owned_by_nobody_with_mtime_zero() {
    let bytes = matmul_spec().to_bytes().expect("valid spec");
    let tar = gunzip(&bytes[1024..]);
    assert_eq!(tar[156], b'x', "the first entry is a PAX extended header");
    let mut archive = tar::Archive::new(tar.as_slice());
    let mut names = Vec::new();
    for entry in archive.entries().expect("tar") {
        let entry = entry.expect("entry");
        let header = entry.header();
        assert_eq!(header.username().ok().flatten(), Some("nobody"));
        assert_eq!(header.groupname().ok().flatten(), Some("nobody"));
        assert_eq!(header.mtime().ok(), Some(0));
        names.push(String::from_utf8_lossy(&entry.path_bytes()).into_owned());
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "members are sorted");
    assert_eq!(
        bytes,
        matmul_spec().to_bytes().expect("valid spec"),
        "re-writing gives the same bytes"
    );
}

#[test]
fn package_version_one_is_a_plain_tar_with_sha256() {
    let mut spec = matmul_spec();
    spec.header.pkg_version = 1;
    let bytes = spec.to_bytes().expect("valid spec");
    assert_eq!(&bytes[1024 + 257..1024 + 262], b"ustar", "the payload is an uncompressed tar");
    let neff = Neff::parse(&bytes, &loader_with_hash()).expect("valid neff");
    assert!(neff.hash_ok);
    assert_eq!(neff.graphs[1].vars, matmul_vars("sg01"));
}

#[test]
fn header_gates_map_to_libnrt_statuses() {
    let valid = matmul_spec().to_bytes().expect("valid spec");
    let options = ReadOptions::default();
    let unsupported = NrtStatus::UnsupportedNeffVersion;

    check_error(&valid[..1023], &options, NrtStatus::Invalid, |error| {
        matches!(error, NeffError::TooShort { n_bytes: 1023 })
    });
    for pkg_version in [0, 3, u64::MAX] {
        let file = with_field(valid.clone(), 0x000, pkg_version);
        check_error(&file, &options, unsupported, |error| {
            matches!(error, NeffError::UnsupportedPackageVersion { .. })
        });
    }
    let file = with_field(valid.clone(), 0x018, 3);
    check_error(&file, &options, unsupported, |error| {
        matches!(error, NeffError::UnsupportedVersionMajor { version_major: 3 })
    });
    for bit in [27, 40, 62] {
        let file = with_field(valid.clone(), 0x220, 0x209c00 | (1 << bit));
        check_error(
            &file,
            &options,
            unsupported,
            |error| matches!(error, NeffError::ForbiddenFeatureBits { forbidden, .. } if *forbidden == 1 << bit),
        );
    }
    // The feature-bit gate applies to major version 2 only, and bit 63 is outside the mask.
    let major_one = with_field(with_field(valid.clone(), 0x018, 1), 0x220, 1 << 40);
    Neff::parse(&major_one, &options).expect("major 1 ignores feature bits");
    let top_bit = with_field(valid.clone(), 0x220, 1 << 63);
    Neff::parse(&top_bit, &options).expect("bit 63 is not forbidden");

    let file = with_field(valid.clone(), 0x008, valid.len() as u64);
    check_error(&file, &options, NrtStatus::Invalid, |error| {
        matches!(error, NeffError::HeaderSizeTooLarge { .. })
    });
    for data_size in [(valid.len() - 1024 + 1) as u64, u64::MAX] {
        let file = with_field(valid.clone(), 0x010, data_size);
        check_error(&file, &options, NrtStatus::Invalid, |error| {
            matches!(error, NeffError::DataSizeTooLarge { .. })
        });
    }
}

#[test]
fn payload_damage_is_invalid() {
    let valid = matmul_spec().to_bytes().expect("valid spec");
    let options = ReadOptions::default();
    let is_corrupt = |error: &NeffError| matches!(error, NeffError::CorruptPayload { .. });

    let payload_len = valid.len() - 1024;
    let truncated =
        with_field(valid[..1024 + payload_len / 2].to_vec(), 0x010, (payload_len / 2) as u64);
    check_error(&truncated, &options, NrtStatus::Invalid, is_corrupt);

    let mut bad_deflate = valid.clone();
    bad_deflate[1024 + 10] ^= 0xff;
    bad_deflate[1024 + 11] ^= 0xff;
    check_error(&bad_deflate, &options, NrtStatus::Invalid, is_corrupt);

    let mut bad_crc = valid.clone();
    let crc_at = valid.len() - 8;
    bad_crc[crc_at] ^= 0x01;
    check_error(&bad_crc, &options, NrtStatus::Invalid, is_corrupt);

    let not_gzip = assemble_neff(&NeffHeader::default(), b"plain text, not gzip").expect("fits");
    check_error(&not_gzip, &options, NrtStatus::Invalid, is_corrupt);
}

#[test]
fn wrong_hash_fails_only_when_verification_is_on() {
    let mut file = matmul_spec().to_bytes().expect("valid spec");
    file[0x0AC] ^= 0xff;
    let neff = Neff::parse(&file, &ReadOptions::default()).expect("hash not checked by default");
    assert!(!neff.hash_ok);
    let error = check_error(&file, &loader_with_hash(), NrtStatus::Invalid, |error| {
        matches!(error, NeffError::HashMismatch { algorithm: "md5", .. })
    });
    assert!(error.to_string().contains("md5"), "{error}");
}

#[test]
fn stored_md5_is_byte_swapped_per_word() {
    let file = matmul_spec().to_bytes().expect("valid spec");
    let plain: Vec<u8> = {
        use md5::Digest;
        md5::Md5::digest(&file[1024..]).to_vec()
    };
    let stored = &file[0x0AC..0x0AC + 16];
    for word in 0..4 {
        let mut swapped = plain[word * 4..word * 4 + 4].to_vec();
        swapped.reverse();
        assert_eq!(&stored[word * 4..word * 4 + 4], swapped.as_slice());
    }
}

/// A gzip tar whose single entry has `raw_name` written verbatim into the header.
fn payload_with_raw_name(raw_name: &[u8], entry_type: tar::EntryType) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.as_old_mut().name[..raw_name.len()].copy_from_slice(raw_name);
    header.set_entry_type(entry_type);
    header.set_size(2);
    header.set_mode(0o644);
    header.set_cksum();
    builder.append(&header, &b"{}"[..]).expect("in memory");
    gzip(&builder.into_inner().expect("in memory"))
}

#[test]
fn absolute_and_parent_member_names_are_refused() {
    for raw_name in [&b"../evil.json"[..], b"/etc/passwd", b"sg00/../../x", b"./../x"] {
        for entry_type in [tar::EntryType::Regular, tar::EntryType::Symlink] {
            let file =
                assemble_neff(&NeffHeader::default(), &payload_with_raw_name(raw_name, entry_type))
                    .expect("fits");
            check_error(
                &file,
                &ReadOptions::default(),
                NrtStatus::Invalid,
                |error| matches!(error, NeffError::UnsafeMemberName { name } if name.as_bytes() == raw_name),
            );
        }
    }
}

#[test]
fn decompression_limit_is_enforced_with_an_error_that_says_so() {
    let mut spec = matmul_spec();
    spec.extra_members.insert("big.bin".to_owned(), vec![0; 300_000]);
    let file = spec.to_bytes().expect("valid spec");
    let tar_len = gunzip(&file[1024..]).len() as u64;

    let exact = ReadOptions { max_payload_bytes: tar_len, ..ReadOptions::default() };
    Neff::parse(&file, &exact).expect("a payload of exactly the limit is read");

    for max_payload_bytes in [tar_len - 1, 200_000, 1000, 0] {
        let options = ReadOptions { max_payload_bytes, ..ReadOptions::default() };
        let error = check_error(
            &file,
            &options,
            NrtStatus::Invalid,
            |error| matches!(error, NeffError::PayloadTooLarge { limit } if *limit == max_payload_bytes),
        );
        assert!(error.to_string().contains("decompression limit"), "{error}");
    }
}

#[test]
fn a_gzip_bomb_stops_at_the_limit() {
    // 16 MiB of zeros compress to a few KiB; the reader must stop after the 1 MiB budget.
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_path("bomb.bin").expect("short name");
    header.set_size(16 << 20);
    header.set_cksum();
    builder.append(&header, std::io::repeat(0).take(16 << 20)).expect("in memory");
    let payload = gzip(&builder.into_inner().expect("in memory"));
    assert!(payload.len() < 1 << 20, "the bomb is small");
    let file = assemble_neff(&NeffHeader::default(), &payload).expect("fits");
    let options = ReadOptions { max_payload_bytes: 1 << 20, ..ReadOptions::default() };
    check_error(
        &file,
        &options,
        NrtStatus::Invalid,
        |error| matches!(error, NeffError::PayloadTooLarge { limit } if *limit == 1 << 20),
    );
}

#[test]
fn declared_entry_size_beyond_the_budget_is_refused_before_reading() {
    // A tar header that claims 1 TiB, followed by almost nothing.
    let mut header = tar::Header::new_gnu();
    header.set_path("huge.bin").expect("short name");
    header.set_size(1 << 40);
    header.set_cksum();
    let file = assemble_neff(&NeffHeader::default(), &gzip(header.as_bytes())).expect("fits");
    check_error(&file, &ReadOptions::default(), NrtStatus::Invalid, |error| {
        matches!(error, NeffError::PayloadTooLarge { .. })
    });
}

#[test]
fn gnu_tar_with_long_names_dot_slash_and_directories_is_read() {
    let spec = matmul_spec();
    let pax = spec.to_bytes().expect("valid spec");
    let original = Neff::parse(&pax, &ReadOptions::loader()).expect("valid neff");
    let long_name = format!("debug_info/{}/trace.json", "d".repeat(120));
    let mut builder = tar::Builder::new(Vec::new());
    let mut dir = tar::Header::new_gnu();
    dir.set_path("./sg00/").expect("short name");
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_size(0);
    dir.set_cksum();
    builder.append(&dir, std::io::empty()).expect("in memory");
    for (name, member) in &original.members {
        let mut header = tar::Header::new_gnu();
        header.set_size(member.size());
        header.set_mode(0o644);
        builder.append_data(&mut header, format!("./{name}"), member.bytes()).expect("in memory");
    }
    let mut header = tar::Header::new_gnu();
    header.set_size(2);
    builder.append_data(&mut header, &long_name, &b"{}"[..]).expect("GNU long name");
    let payload = gzip(&builder.into_inner().expect("in memory"));
    let file = assemble_neff(&original.header, &payload).expect("fits");

    let neff = Neff::parse(&file, &ReadOptions::loader()).expect("GNU tar reads");
    assert!(neff.members.contains_key(&long_name), "long name resolved");
    assert!(!neff.members.keys().any(|name| name.starts_with("./") || name.ends_with('/')));
    assert_eq!(neff.graphs, original.graphs);
    assert_eq!(neff.signature, original.signature);
}

fn spec_with_vars(vars: Vec<Var>) -> NeffSpec {
    let mut spec = NeffSpec::new("vars.neff");
    spec.graphs.push(GraphSpec { name: "sg00".to_owned(), vars });
    spec
}

#[test]
fn non_dense_var_ids_say_which_are_missing_or_repeated() {
    let vars = vec![
        Var::new("a", 0, "input"),
        Var::new("b", 2, "output"),
        Var::new("c", 2, "tmp-buf"),
        Var::new("d", 7, "tmp-buf"),
    ];
    let file = spec_with_vars(vars).to_bytes().expect("writer does not check invariants");
    let error = check_error(&file, &ReadOptions::loader(), NrtStatus::Invalid, |error| {
        matches!(error, NeffError::VarIdsNotDense { graph, count: 4, missing, repeated, out_of_range }
            if graph == "sg00" && missing == &[1, 3] && repeated == &[2] && out_of_range == &[7])
    });
    assert!(error.to_string().contains("missing [1, 3]"), "{error}");
}

#[test]
fn a_neff_without_outputs_is_invalid() {
    let file = spec_with_vars(vec![Var::new("a", 0, "input"), Var::new("b", 1, "tmp-buf")])
        .to_bytes()
        .expect("valid spec");
    check_error(&file, &ReadOptions::default(), NrtStatus::Invalid, |error| {
        matches!(error, NeffError::NoOutputs)
    });
    let no_graphs = NeffSpec::new("empty.neff").to_bytes().expect("valid spec");
    check_error(&no_graphs, &ReadOptions::default(), NrtStatus::Invalid, |error| {
        matches!(error, NeffError::NoOutputs)
    });
}

#[test]
fn unknown_var_type_is_an_error_for_the_loader_and_listed_for_inspection() {
    let vars = vec![Var::new("out", 0, "output"), Var::new("sem", 1, "semaphore")];
    assert_eq!(vars[1].mr_type, None);
    let file = spec_with_vars(vars).to_bytes().expect("valid spec");
    let error = check_error(
        &file,
        &ReadOptions::loader(),
        NrtStatus::Invalid,
        |error| matches!(error, NeffError::UnknownVarType { graph, var, var_type } if graph == "sg00" && var == "sem" && var_type == "semaphore"),
    );
    assert!(error.to_string().contains("\"semaphore\""), "{error}");
    let neff = Neff::parse(&file, &ReadOptions::default()).expect("lenient mode lists it");
    let sem = neff.graphs[0].var("sem").expect("listed");
    assert_eq!((sem.kind.as_str(), sem.mr_type), ("semaphore", None));
}

#[test]
fn comment_keys_and_unknown_fields_are_ignored() {
    let def_json = br##"{"#note":"top-level comment","var":{"#comment":{"type":"nonsense"},
        "out":{"type":"output","var_id":0,"size":4,"future_field":[1,2]}},"extra":{"a":1}}"##;
    let file = neff_from_members(&[("kelf-0.json", KELF_SG00), ("sg00/def.json", def_json)]);
    let neff = Neff::parse(&file, &ReadOptions::loader()).expect("comments are ignored");
    assert_eq!(neff.graphs[0].vars, vec![Var::new("out", 0, "output").with_size(4)]);
    assert_eq!(neff.signature, Signature::default(), "no neff.json gives an empty signature");
}

#[test]
fn malformed_metadata_names_the_member() {
    let cases: [(&str, &[u8], &str); 5] = [
        ("sg00/def.json", b"{not json", "sg00/def.json"),
        (
            "sg00/def.json",
            br#"{"var":{"out":{"type":"output","var_id":"zero"}}}"#,
            "var.out.var_id",
        ),
        ("sg00/def.json", br#"{"var":{"out":{"var_id":0}}}"#, "var.out.type"),
        ("neff.json", br#"{"nodes":[{"name":"x"}],"arg_nodes":[5]}"#, "arg_nodes"),
        (
            "neff.json",
            br#"{"metadata":{"signatures":{"default":{"inputs":{"x":{"id":0,"shape":"128"}}}}}}"#,
            "shape",
        ),
    ];
    let good_def: &[u8] = br#"{"var":{"out":{"type":"output","var_id":0}}}"#;
    for (member, bytes, mentioned) in cases {
        let def_json = if member == "sg00/def.json" { bytes } else { good_def };
        let mut members = vec![("kelf-0.json", KELF_SG00), ("sg00/def.json", def_json)];
        if member == "neff.json" {
            members.push(("neff.json", bytes));
        }
        let file = neff_from_members(&members);
        let error = check_error(
            &file,
            &ReadOptions::default(),
            NrtStatus::Invalid,
            |error| matches!(error, NeffError::InvalidJson { member: named, .. } | NeffError::MalformedField { member: named, .. } if named == member),
        );
        assert!(error.to_string().contains(mentioned), "{error}");
    }
    let missing = neff_from_members(&[("kelf-0.json", KELF_SG00)]);
    check_error(
        &missing,
        &ReadOptions::default(),
        NrtStatus::Invalid,
        |error| matches!(error, NeffError::MissingMember { member, referenced_by } if member == "sg00/def.json" && referenced_by == "kelf-0.json"),
    );
}

#[test]
fn both_signature_forms_read_the_same() {
    let mut spec = matmul_spec();
    let forms = [
        SignatureForm::GraphOnly,
        SignatureForm::MetadataOnly,
        SignatureForm::Both,
        SignatureForm::Compiled,
    ];
    for form in forms {
        spec.signature_form = form;
        let neff = Neff::parse(&spec.to_bytes().expect("valid spec"), &ReadOptions::default())
            .expect("valid neff");
        assert_eq!(neff.signature, spec.signature, "{form:?}");
    }
    // A hand-made old-form neff.json without node_row_ptr, outputs taken from `heads`.
    let neff_json = br#"{"nodes":[{"name":"a","op":"null"},{"name":"b","op":"null"},{"name":"out","op":"neff"}],
        "arg_nodes":[1,0],"heads":[[2,0,0]],
        "attrs":{"shape":["list_shape",[[1],[2,3],[4]]],"dltype":["list_str",["int32","float32","bfloat16"]]}}"#;
    let def_json: &[u8] = br#"{"var":{"out":{"type":"output","var_id":0}}}"#;
    let file = neff_from_members(&[
        ("kelf-0.json", KELF_SG00),
        ("neff.json", neff_json),
        ("sg00/def.json", def_json),
    ]);
    let neff = Neff::parse(&file, &ReadOptions::default()).expect("valid neff");
    assert_eq!(
        neff.signature.inputs,
        [TensorSignature::new("b", "float32", &[2, 3]), TensorSignature::new("a", "int32", &[1])]
    );
    assert_eq!(neff.signature.outputs, [TensorSignature::new("out", "bfloat16", &[4])]);
}

#[test]
fn writer_refuses_what_it_cannot_encode() {
    let duplicate = spec_with_vars(vec![Var::new("a", 0, "output"), Var::new("a", 1, "input")]);
    assert!(matches!(duplicate.to_bytes(), Err(NeffError::InvalidSpec { .. })));
    let comment = spec_with_vars(vec![Var::new("#a", 0, "output")]);
    assert!(matches!(comment.to_bytes(), Err(NeffError::InvalidSpec { .. })));
    let mut collision = matmul_spec();
    collision.extra_members.insert("neff.json".to_owned(), b"{}".to_vec());
    assert!(matches!(collision.to_bytes(), Err(NeffError::DuplicateMember { .. })));
    let mut traversal = matmul_spec();
    traversal.extra_members.insert("../x".to_owned(), Vec::new());
    assert!(matches!(traversal.to_bytes(), Err(NeffError::UnsafeMemberName { .. })));
    let mut long_name = matmul_spec();
    long_name.header.name = "n".repeat(256);
    assert!(matches!(long_name.to_bytes(), Err(NeffError::InvalidSpec { .. })));
}

#[test]
fn uuid_is_derived_from_the_name() {
    let first = matmul_spec().to_bytes().expect("valid spec");
    let mut renamed = matmul_spec();
    renamed.header.name = "other.neff".to_owned();
    let second = renamed.to_bytes().expect("valid spec");
    let uuid = |file: &[u8]| NeffHeader::parse(file).expect("valid").uuid;
    assert_ne!(uuid(&first), [0; 16]);
    assert_ne!(uuid(&first), uuid(&second));
    assert_eq!(uuid(&first), uuid(&matmul_spec().to_bytes().expect("valid spec")));
}

/// A kelf file of `n_entries` graph entries cycling over `n_distinct` definitions.
fn kelf_with_entries(n_entries: usize, n_distinct: usize) -> Vec<u8> {
    let entries: Vec<String> = (0..n_entries)
        .map(|i| {
            let graph = i % n_distinct;
            format!(r#"{{"definition":"sg{graph:02}/def.json","name":"sg{graph:02}"}}"#)
        })
        .collect();
    format!(r#"{{"graphs":[{}],"version":"0.5"}}"#, entries.join(",")).into_bytes()
}

/// 100 000 graph entries naming two definitions are two graphs, found in linear time (the time
/// is printed for the record, not asserted); 100 000 distinct definitions are refused by the
/// graph cap before any of them is looked up.
#[test]
fn a_hundred_thousand_kelf_entries_are_deduplicated_and_capped() {
    let def_json: &[u8] = br#"{"var":{"out":{"type":"output","var_id":0,"size":4}}}"#;
    let repeated = kelf_with_entries(100_000, 2);
    let file = neff_from_members(&[
        ("kelf-0.json", &repeated),
        ("sg00/def.json", def_json),
        ("sg01/def.json", def_json),
    ]);
    let start = std::time::Instant::now();
    let neff = Neff::parse(&file, &ReadOptions::loader()).expect("two graphs");
    println!("100k kelf entries over 2 definitions: parsed in {:?}", start.elapsed());
    let names: Vec<&str> = neff.graphs.iter().map(|graph| graph.name.as_str()).collect();
    assert_eq!(names, ["sg00", "sg01"]);

    let distinct = kelf_with_entries(100_000, 100_000);
    let file = neff_from_members(&[("kelf-0.json", &distinct), ("sg00/def.json", def_json)]);
    let start = std::time::Instant::now();
    let error = check_error(
        &file,
        &ReadOptions::loader(),
        NrtStatus::Invalid,
        |error| matches!(error, NeffError::TooManyGraphs { limit } if *limit == MAX_GRAPHS),
    );
    println!("100k distinct kelf entries: refused in {:?}", start.elapsed());
    assert!(error.to_string().contains(&format!("at most {MAX_GRAPHS}")), "{error}");
}

/// `neff.json` as neuronx-cc 2.23 writes it (see `tests/data/README.md`).
const NEURONX_CC_NEFF_JSON: &str = include_str!("data/neuronx_cc_2_23_neff.json");

/// The kelf file and def.json members of the two-subgraph matmul around `neff_json`.
fn neuronx_cc_layout_neff(neff_json: &str) -> Vec<u8> {
    let kelf: &[u8] = br#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"},
        {"definition":"sg01/def.json","name":"sg01"}],"version":"0.5","target":"cayman"}"#;
    let def_json: &[u8] = br#"{"var":{"SB":{"type":"state-buffer","var_id":0},
        "x":{"type":"input","var_id":1,"size":65536},"y":{"type":"input","var_id":2,"size":65536},
        "output0":{"type":"output","var_id":3,"size":32768}}}"#;
    neff_from_members(&[
        ("kelf-0.json", kelf),
        ("neff.json", neff_json.as_bytes()),
        ("sg00/def.json", def_json),
        ("sg01/def.json", def_json),
    ])
}

/// An empty metadata `outputs` defers to the graph form; the compiled node's `output_names`
/// name the heads, and the output two subgraphs share is listed once. `output_names` is read
/// from the node's `attrs` or from the node itself.
#[test]
fn outputs_of_a_neuronx_cc_neff_come_from_the_graph_form_named_by_output_names() {
    let expected_inputs = [
        TensorSignature::new("x", "float16", &[128, 256]),
        TensorSignature::new("y", "float16", &[256, 128]),
    ];
    let expected_outputs = [TensorSignature::new("output0", "float16", &[128, 128])];
    let node_level = NEURONX_CC_NEFF_JSON.replace(
        r#""attrs": {"num_inputs": "2", "num_outputs": "2", "output_names": ["output0", "output0"]}"#,
        r#""output_names": ["output0", "output0"], "attrs": {"num_outputs": "2"}"#,
    );
    assert_ne!(node_level, NEURONX_CC_NEFF_JSON, "the variant moves output_names");
    for neff_json in [NEURONX_CC_NEFF_JSON, &node_level] {
        let neff = Neff::parse(&neuronx_cc_layout_neff(neff_json), &ReadOptions::loader())
            .expect("valid neff");
        assert_eq!(neff.signature.inputs, expected_inputs);
        assert_eq!(neff.signature.outputs, expected_outputs);
    }
    // Output names that are not strings are malformed, named by their path.
    let bad = NEURONX_CC_NEFF_JSON.replace(r#"["output0", "output0"]"#, "[1, 2]");
    let error = check_error(
        &neuronx_cc_layout_neff(&bad),
        &ReadOptions::loader(),
        NrtStatus::Invalid,
        |error| matches!(error, NeffError::MalformedField { .. }),
    );
    assert!(error.to_string().contains("nodes[2].attrs.output_names[0]"), "{error}");
}

/// The member limit: a NEFF with exactly as many members as the limit is read, one more is
/// [`NeffError::TooManyMembers`].
#[test]
fn members_at_the_limit_are_read_and_one_more_is_refused() {
    let bytes = matmul_spec().to_bytes().expect("valid spec");
    let n_members = Neff::parse(&bytes, &ReadOptions::default()).expect("readable").members.len();
    let at = ReadOptions { max_members: n_members, ..ReadOptions::default() };
    assert!(Neff::parse(&bytes, &at).is_ok());
    let below = ReadOptions { max_members: n_members - 1, ..ReadOptions::default() };
    let error = check_error(
        &bytes,
        &below,
        NrtStatus::Invalid,
        |error| matches!(error, NeffError::TooManyMembers { limit } if *limit == n_members - 1),
    );
    assert!(error.to_string().contains("the member limit"), "{error}");
}

/// The variable limit counts every graph's table: at the total the NEFF is read, one below it
/// is [`NeffError::TooManyVars`] naming the graph that passed it.
#[test]
fn vars_at_the_limit_are_read_and_one_more_is_refused() {
    let bytes = matmul_spec().to_bytes().expect("valid spec");
    let n_vars = 2 * matmul_vars("sg00").len();
    let at = ReadOptions { max_vars: n_vars, ..ReadOptions::default() };
    assert_eq!(Neff::parse(&bytes, &at).map(|neff| neff.graphs.len()).ok(), Some(2));
    let below = ReadOptions { max_vars: n_vars - 1, ..ReadOptions::default() };
    check_error(&bytes, &below, NrtStatus::Invalid, |error| {
        matches!(error, NeffError::TooManyVars { graph, count, limit }
            if graph == "sg01" && *count == n_vars && *limit == n_vars - 1)
    });
}

/// The defaults are far above a real NEFF's counts and bound a hostile one.
#[test]
fn the_default_count_limits_are_the_documented_ones() {
    let options = ReadOptions::default();
    assert_eq!((options.max_members, options.max_vars), (65_536, 100_000));
    assert_eq!(ReadOptions::loader().max_vars, 100_000);
}

#[test]
fn the_simulator_target_bit_is_accepted_only_with_its_member() {
    // Bit 62 lies in the range a version-2 loader refuses.
    assert_eq!(SIMULATOR_TARGET_FEATURE_BIT, 1 << 62);
    assert_ne!(SIMULATOR_TARGET_FEATURE_BIT & abi::neff::FORBIDDEN_FEATURE_BITS_V2, 0);
    let mut spec = matmul_spec();
    spec.header.feature_bits = 0x209c00 | (1 << 62);
    let without = spec.to_bytes().unwrap();
    let error = Neff::parse(&without, &ReadOptions::loader()).unwrap_err();
    assert_eq!(
        error,
        NeffError::ForbiddenFeatureBits { feature_bits: 0x209c00 | (1 << 62), forbidden: 1 << 62 }
    );
    assert_eq!(error.status(), NrtStatus::UnsupportedNeffVersion);

    spec.extra_members.insert(SIMULATOR_TARGET_MEMBER.to_owned(), b"{}".to_vec());
    let with = spec.to_bytes().unwrap();
    let neff = Neff::parse(&with, &ReadOptions::loader()).unwrap();
    assert!(neff.header.is_simulator_target());
    // The member does not excuse any other forbidden bit.
    spec.header.feature_bits |= 1 << 40;
    let error = Neff::parse(&spec.to_bytes().unwrap(), &ReadOptions::loader()).unwrap_err();
    assert!(
        matches!(error, NeffError::ForbiddenFeatureBits { forbidden, .. } if forbidden == 1 << 40)
    );
    // A version-1 format has no feature-bit gate, and no mark.
    let mut spec = matmul_spec();
    spec.header.version_major = 1;
    spec.header.feature_bits = 1 << 62;
    let neff = Neff::parse(&spec.to_bytes().unwrap(), &ReadOptions::loader()).unwrap();
    assert!(!neff.header.is_simulator_target());
}
