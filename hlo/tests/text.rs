//! Data-driven HLO text cases: each is an input and what it must print as (or the error it must
//! give), written by hand from what the text means.

/// Parses `input`; `expect` is either the printed module or `error: ` and the error's message.
/// A successful parse must also be a fixed point: printing, parsing and printing again gives the
/// same text, and parsing the print gives the same proto.
fn check(input: &str, expect: &str) {
    match hlo::text::parse_module(input) {
        Ok(module) => {
            let printed = hlo::text::print_module(&module).unwrap();
            assert_eq!(printed, expect, "\n--- input ---\n{input}");
            let again = hlo::text::parse_module(&printed).unwrap();
            assert_eq!(hlo::encode_module(&again), hlo::encode_module(&module), "{input}");
        }
        Err(e) => assert_eq!(format!("error: {e}"), expect, "\n--- input ---\n{input}"),
    }
}

/// Wraps instructions in a module with one entry computation named `e`.
fn entry(body: &str) -> String {
    format!("HloModule m\n\nENTRY e {{\n{body}}}\n\n")
}

/// How [`entry`] prints: the header carries the entry layout, `(parameters)->result`, that the
/// parser derives when the text has none.
fn printed_entry(layout: &str, body: &str) -> String {
    format!("HloModule m, entry_computation_layout={{{layout}}}\n\nENTRY e {{\n{body}}}\n\n")
}

#[test]
fn old_style_becomes_new_style_and_metadata_is_kept() {
    check(
        r#"HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[4]{0})->f32[4]{0}}, num_partitions=1

%add.1 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0), metadata={op_name="x" source_line=3 unknown_field=7}
  ROOT %m = f32[4]{0} map(f32[4]{0} %p, f32[4]{0} %p), dimensions={0}, to_apply=%add.1, metadata={op_type="mul" op_name="jit(f)/mul" source_file="f.py" source_line=12}
}
"#,
        r#"HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

add.1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p = f32[4]{0} parameter(0), metadata={op_name="x" source_line=3}
  ROOT m = f32[4]{0} map(p, p), dimensions={0}, to_apply=add.1, metadata={op_type="mul" op_name="jit(f)/mul" source_file="f.py" source_line=12}
}

"#,
    );
}

#[test]
fn constants_of_every_kind() {
    check(
        "HloModule m\nENTRY e {\n\
         a = f32[] constant(-inf)\n\
         b = f32[] constant(nan)\n\
         c = pred[] constant(true)\n\
         d = s8[3] constant({-128, 0x10, +127})\n\
         f = u8[] constant(255)\n\
         g = bf16[2] constant({1.00390625, 1.01171875})\n\
         h = f16[] constant(65519)\n\
         i = f64[] constant(1e300)\n\
         j = c64[2] constant({(1, -2), (0.5, 0)})\n\
         k = (s32[], f32[2]) constant((7, {1.5, -0}))\n\
         l = f32[2,3]{0,1} constant({ { 1, 2, 3 }, { 4, 5, 6 } })\n\
         n = f32[0] constant({})\n\
         o = f32[2,0] constant({ {}, {} })\n\
         q = f8e4m3fn[2] constant({448, 500})\n\
         r = s64[] constant(-9223372036854775808)\n\
         ROOT t = u16[2] constant({0, 65535})\n}\n",
        // bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and goes to even (1); 1 + 3 * 2^-8 goes
        // up to 1 + 2^-6 = 1.015625, written with bf16's 4 significant digits as XLA does. f16: 65519 is below the halfway point 65520, so it stays finite.
        // f8e4m3fn: 500 is past 448 + half a step (464), and the format has no infinity.
        "HloModule m, entry_computation_layout={()->u16[2]{0}}\n\nENTRY e {\n  \
         a = f32[] constant(-inf)\n  \
         b = f32[] constant(nan)\n  \
         c = pred[] constant(true)\n  \
         d = s8[3]{0} constant({-128, 16, 127})\n  \
         f = u8[] constant(255)\n  \
         g = bf16[2]{0} constant({1, 1.016})\n  \
         h = f16[] constant(65504)\n  \
         i = f64[] constant(1e+300)\n  \
         j = c64[2]{0} constant({(1, -2), (0.5, 0)})\n  \
         k = (s32[], f32[2]{0}) constant((7, {1.5, -0}))\n  \
         l = f32[2,3]{0,1} constant({ { 1, 2, 3 }, { 4, 5, 6 } })\n  \
         n = f32[0]{0} constant({})\n  \
         o = f32[2,0]{1,0} constant({ {}, {} })\n  \
         q = f8e4m3fn[2]{0} constant({448, nan})\n  \
         r = s64[] constant(-9223372036854775808)\n  \
         ROOT t = u16[2]{0} constant({0, 65535})\n}\n\n",
    );
}

#[test]
fn convolution_window_and_labels() {
    check(
        &entry(
            "  i = f32[1,5,5,3]{3,2,1,0} parameter(0)\n  k = f32[3,3,3,8]{3,2,1,0} parameter(1)\n  \
             ROOT c = f32[1,2,3,8]{3,2,1,0} convolution(i, k), window={rhs_reversal=0x1 size=3x3 pad=0_1x-1_2 stride=2x1 lhs_dilate=1x2 rhs_dilate=2x1}, dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1, operand_precision={highest,default}\n",
        ),
        &printed_entry(
            "(f32[1,5,5,3]{3,2,1,0}, f32[3,3,3,8]{3,2,1,0})->f32[1,2,3,8]{3,2,1,0}",
            "  i = f32[1,5,5,3]{3,2,1,0} parameter(0)\n  k = f32[3,3,3,8]{3,2,1,0} parameter(1)\n  \
             ROOT c = f32[1,2,3,8]{3,2,1,0} convolution(i, k), window={size=3x3 stride=2x1 pad=0_1x-1_2 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, operand_precision={highest,default}\n",
        ),
    );
}

#[test]
fn data_movement_attributes() {
    check(
        &entry(
            "  x = f32[4,6]{1,0} parameter(0)\n  \
             s = f32[2,2]{1,0} slice(x), slice={[0:4:2], [1:5:2]}\n  \
             u = f32[2,3]{1,0} slice(x), slice={[1:3], [0:3:1]}\n  \
             z = f32[] constant(0)\n  \
             p = f32[7,13]{1,0} pad(x, z), padding=1_2x0_1_2\n  \
             t = f32[6,4]{0,1} transpose(x), dimensions={1,0}\n  \
             io = s32[3,4]{1,0} iota(), iota_dimension=1\n  \
             i = s32[] parameter(1)\n  \
             d = f32[2,2]{1,0} dynamic-slice(x, i, i), dynamic_slice_sizes={2,2}\n  \
             g = s32[<=4,2]{1,0} parameter(2)\n  \
             ROOT r = f32[4,6]{1,0} reverse(x), dimensions={0}\n",
        ),
        &printed_entry(
            "(f32[4,6]{1,0}, s32[], s32[<=4,2]{1,0})->f32[4,6]{1,0}",
            "  x = f32[4,6]{1,0} parameter(0)\n  \
             s = f32[2,2]{1,0} slice(x), slice={[0:4:2], [1:5:2]}\n  \
             u = f32[2,3]{1,0} slice(x), slice={[1:3], [0:3]}\n  \
             z = f32[] constant(0)\n  \
             p = f32[7,13]{1,0} pad(x, z), padding=1_2_0x0_1_2\n  \
             t = f32[6,4]{0,1} transpose(x), dimensions={1,0}\n  \
             io = s32[3,4]{1,0} iota(), iota_dimension=1\n  \
             i = s32[] parameter(1)\n  \
             d = f32[2,2]{1,0} dynamic-slice(x, i, i), dynamic_slice_sizes={2,2}\n  \
             g = s32[<=4,2]{1,0} parameter(2)\n  \
             ROOT r = f32[4,6]{1,0} reverse(x), dimensions={0}\n",
        ),
    );
}

#[test]
fn gather_scatter_sort_and_collectives() {
    // `less` repeats `add`'s parameter names, which become `a.1` and `b.1` (one namespace per
    // module, as XLA has it).
    let module = "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n\
        less {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT l = pred[] compare(a, b), direction=LT, type=TOTALORDER\n}\n\n\
        ENTRY e {\n  x = f32[5,3]{1,0} parameter(0)\n  i = s32[2,1]{1,0} parameter(1)\n  \
        g = f32[2,3]{1,0} gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}, indices_are_sorted=true\n  \
        u = f32[2,3]{1,0} parameter(2)\n  \
        sc = f32[5,3]{1,0} scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=add\n  \
        so = f32[5,3]{1,0} sort(x), dimensions={1}, is_stable=true, to_apply=less\n  \
        ar = f32[5,3]{1,0} all-reduce(x), channel_id=3, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add\n  \
        ag = f32[10,3]{1,0} all-gather(x), dimensions={0}, replica_groups=[2,2]<=[2,2]T(1,0)\n  \
        a2 = f32[5,3]{1,0} all-to-all(x), dimensions={1}, replica_groups=[1,4]<=[4]\n  \
        cp = f32[5,3]{1,0} collective-permute(x), source_target_pairs={{0,1},{1,0}}, channel_id=1\n  \
        tk = (f32[5,2]{1,0}, s32[5,2]{1,0}) topk(x), k=2, largest=true\n  \
        rp = f32[5,3]{1,0} reduce-precision(x), exponent_bits=5, mantissa_bits=10\n  \
        ROOT cc = f32[5,3]{1,0} custom-call(x), custom_call_target=\"my\\\"target\", backend_config=\"a\\nb\", frontend_attributes={_xla_k=\"v\",a=\"b\"}, sharding={devices=[2,1]0,1}, api_version=API_VERSION_STATUS_RETURNING, some_future_attribute={x={y}}\n}\n";
    check(
        module,
        "HloModule m, entry_computation_layout={(f32[5,3]{1,0}, s32[2,1]{1,0}, f32[2,3]{1,0})->f32[5,3]{1,0}}\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n\
        less {\n  a.1 = f32[] parameter(0)\n  b.1 = f32[] parameter(1)\n  ROOT l = pred[] compare(a.1, b.1), direction=LT, type=TOTALORDER\n}\n\n\
        ENTRY e {\n  x = f32[5,3]{1,0} parameter(0)\n  i = s32[2,1]{1,0} parameter(1)\n  \
        g = f32[2,3]{1,0} gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}, indices_are_sorted=true\n  \
        u = f32[2,3]{1,0} parameter(2)\n  \
        sc = f32[5,3]{1,0} scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=add\n  \
        so = f32[5,3]{1,0} sort(x), dimensions={1}, is_stable=true, to_apply=less\n  \
        ar = f32[5,3]{1,0} all-reduce(x), channel_id=3, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add\n  \
        ag = f32[10,3]{1,0} all-gather(x), dimensions={0}, replica_groups=[2,2]<=[2,2]T(1,0)\n  \
        a2 = f32[5,3]{1,0} all-to-all(x), dimensions={1}, replica_groups=[1,4]<=[4]\n  \
        cp = f32[5,3]{1,0} collective-permute(x), channel_id=1, source_target_pairs={{0,1},{1,0}}\n  \
        tk = (f32[5,2]{1,0}, s32[5,2]{1,0}) topk(x), k=2, largest=true\n  \
        rp = f32[5,3]{1,0} reduce-precision(x), exponent_bits=5, mantissa_bits=10\n  \
        ROOT cc = f32[5,3]{1,0} custom-call(x), custom_call_target=\"my\\\"target\", backend_config=\"a\\nb\", frontend_attributes={\"_xla_k\"=\"v\",\"a\"=\"b\"}\n}\n\n",
    );
}

#[test]
fn control_flow_calls_in_xla_order() {
    // `f` repeats `t`'s parameter name, which becomes `p.1`.
    let module = "HloModule m\n\nt {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n\n\
        f {\n  p = f32[] parameter(0)\n  ROOT c = f32[] copy(p)\n}\n\n\
        ENTRY e {\n  b = pred[] parameter(0)\n  x = f32[] parameter(1)\n  k = s32[] parameter(2)\n  \
        c1 = f32[] conditional(b, x, x), false_computation=f, true_computation=t\n  \
        c2 = f32[] conditional(k, x, x, x), branch_computations={t, f, t}\n  \
        w = f32[] while(x), body=t, condition=f, control-predecessors={c1, c2}\n  \
        ROOT r = f32[] call(w), to_apply=t\n}\n";
    check(
        module,
        "HloModule m, entry_computation_layout={(pred[], f32[], s32[])->f32[]}\n\nt {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n\n\
        f {\n  p.1 = f32[] parameter(0)\n  ROOT c = f32[] copy(p.1)\n}\n\n\
        ENTRY e {\n  b = pred[] parameter(0)\n  x = f32[] parameter(1)\n  k = s32[] parameter(2)\n  \
        c1 = f32[] conditional(b, x, x), true_computation=t, false_computation=f\n  \
        c2 = f32[] conditional(k, x, x, x), branch_computations={t, f, t}\n  \
        w = f32[] while(x), condition=f, body=t, control-predecessors={c1, c2}\n  \
        ROOT r = f32[] call(w), to_apply=t\n}\n\n",
    );
    let m = hlo::text::parse_module(module).unwrap();
    let e = &m.computations[2];
    // t is computation 0 and f is 1: while is [body, condition], conditional [true, false].
    assert_eq!(e.instructions[3].called_computation_ids, vec![0, 1]);
    assert_eq!(e.instructions[4].called_computation_ids, vec![0, 1, 0]);
    assert_eq!(e.instructions[5].called_computation_ids, vec![0, 1]);
}

#[test]
fn layouts_with_tiles_and_memory_spaces() {
    check(
        &entry(
            "  ROOT x = f32[8,128]{1,0:T(8,128)(2,1)S(1)} parameter(0)\n  y = bf16[4]{0:E(16)} parameter(1)\n",
        ),
        &printed_entry(
            "(f32[8,128]{1,0:T(8,128)(2,1)S(1)}, bf16[4]{0:E(16)})->f32[8,128]{1,0:T(8,128)(2,1)S(1)}",
            "  ROOT x = f32[8,128]{1,0:T(8,128)(2,1)S(1)} parameter(0)\n  y = bf16[4]{0:E(16)} parameter(1)\n",
        ),
    );
}

#[test]
fn errors_say_where_and_what() {
    check("", "error: 1:1: expected `HloModule`, found end of input");
    check("HloModul m", "error: 1:1: expected `HloModule`, found `HloModul`");
    check(&entry("  x = f32[2] frobnicate(y)\n"), "error: 4:14: unknown opcode `frobnicate`");
    check(&entry("  x = f32[2] negate(y)\n"), "error: 4:21: instruction `y` is not defined");
    check(
        &entry("  x = f32[] call(), to_apply=nowhere\n"),
        "error: 4:30: computation `nowhere` is not defined",
    );
    check(
        &entry("  x = f32[] constant(1)\n  x = f32[] constant(2)\n"),
        "error: 5:3: instruction `x` is defined twice",
    );
    check(
        &entry("  x = f32[2] constant({...})\n"),
        "error: 4:23: the constant's values were elided by the printer (`{...}`); print with large constants",
    );
    check(
        &entry("  x = f32[3] constant({1, 2})\n"),
        "error: 4:28: expected `,` and element 2 of 3, found `}`",
    );
    check(&entry("  x = s8[] constant(300)\n"), "error: 4:21: 300 is out of range for s8");
    check(
        &entry("  x = f32[?] parameter(0)\n"),
        "error: 4:11: unbounded dynamic dimensions (`?`) are not supported",
    );
    check(
        &entry("  x = f32[2 parameter(0)\n"),
        "error: 4:13: expected `,` or `]` in the dimensions, found `parameter`",
    );
    check(
        &entry("  ROOT x = f32[] parameter(0)\n  ROOT y = f32[] parameter(1)\n"),
        "error: 5:8: a second ROOT instruction `y` in computation `e`; it has one",
    );
    check(
        &entry("  x = f32[] parameter(1)\n"),
        "error: 4:3: expected parameter number 0 in computation `e`, found 1",
    );
    check(
        &entry("  x = f32[] negate(x), dimensions={1}, dimensions={2}\n"),
        "error: 4:40: attribute `dimensions` is defined twice",
    );
    check(
        &entry("  x = f32[1,1,1] convolution(x, x), dim_labels=bf0_oi0->bfq\n"),
        "error: 4:48: dim_labels `bf0_oi0->bfq`: `q` in `bfq` is not b, f or a spatial index below 1",
    );
    check(
        "HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n",
        "error: 4:1: expected an instruction or the `}` closing computation `e`, found end of input",
    );
    check("HloModule m\nENTRY e {\n}\n", "error: 3:1: computation `e` has no instructions");
    check(
        "HloModule m\nENTRY e {\n  ROOT x = f32[] parameter(0)\n}\nENTRY f {\n  ROOT x = f32[] parameter(0)\n}\n",
        "error: 5:7: a second ENTRY computation `f`; a module has one",
    );
    check(
        "HloModule m\nc {\n  ROOT x = f32[] parameter(0)\n}\nc {\n  ROOT x = f32[] parameter(0)\n}\n",
        "error: 5:1: computation `c` is defined twice",
    );
    let deep = format!(
        "HloModule m\nENTRY e {{\n  x = {}f32[]{} parameter(0)\n}}\n",
        "(".repeat(100),
        ")".repeat(100)
    );
    check(&deep, "error: 3:72: nesting deeper than 64 levels");
}

#[test]
fn header_attributes_fusion_and_raw_backend_config() {
    check(
        "// A comment before the module.\n\
         HloModule m, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {0}) }, frontend_attributes={k=\"v\"}, replica_count=2\n\n\
         %fused (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n  ROOT %n = f32[2]{0} negate(f32[2]{0} %p)\n}\n\n\
         main {\n  x = f32[2]{0} parameter(0)\n  y = (f32[2]{0}) parameter(1) /* a comment inside */\n  \
         f = f32[2]{0} fusion(x), kind=kLoop, calls=%fused, backend_config={\"outer\": {\"inner\": [1, 2]}}\n  \
         ROOT t = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}) tuple(f, f, f, f, f, x), replica_groups={}\n}\n",
        // Without ENTRY the last computation is the entry; the raw JSON backend config is kept
        // as bytes and printed quoted.
        "HloModule m, entry_computation_layout={(f32[2]{0}, (f32[2]{0}))->(f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0})}, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {0}) }, frontend_attributes={\"k\"=\"v\"}\n\n\
         fused {\n  p = f32[2]{0} parameter(0)\n  ROOT n = f32[2]{0} negate(p)\n}\n\n\
         ENTRY main {\n  x = f32[2]{0} parameter(0)\n  y = (f32[2]{0}) parameter(1)\n  \
         f = f32[2]{0} fusion(x), kind=kLoop, calls=fused, backend_config=\"{\\\"outer\\\": {\\\"inner\\\": [1, 2]}}\"\n  \
         ROOT t = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0}) tuple(f, f, f, f, f, x)\n}\n\n",
    );
    let m = hlo::text::parse_module("HloModule m, input_output_alias={ {0}: (1, {}, must-alias) }\nENTRY e {\n  ROOT x = f32[] parameter(0)\n}\n").unwrap();
    let alias = &m.input_output_alias.unwrap().entries[0];
    assert_eq!(
        (alias.output_shape_index.as_slice(), alias.parameter_number, alias.kind),
        (&[0][..], 1, hlo::proto::Kind::MustAlias as i32)
    );
}

/// A name that is a keyword of the text form (`ROOT`, `ENTRY`) is written with XLA's `%`, which
/// XLA's parser reads as the name (jax 0.10.2 parses `%ROOT {` and `ROOT %ROOT = ...`, and
/// refuses a bare `ROOT {` with "expects name"); so it prints in the form that parses back, and
/// bare it is refused.
#[test]
fn keyword_names_are_written_with_a_percent_sign() {
    let printed = "HloModule %ENTRY, entry_computation_layout={(f32[])->f32[]}\n\n\
        %ROOT {\n  ROOT %ROOT = f32[] parameter(0)\n}\n\n\
        ENTRY e {\n  %ENTRY = f32[] parameter(0)\n  ROOT c = f32[] call(%ENTRY), to_apply=%ROOT\n}\n\n";
    check(printed, printed);
    check(
        "HloModule m\n\nROOT {\n  ROOT a = f32[] parameter(0)\n}\n",
        "error: 3:1: expected a computation name (or `ENTRY`), found the keyword `ROOT`; write a name that is a keyword as `%ROOT`",
    );
    check(
        "HloModule m\n\nENTRY e {\n  ROOT ROOT = f32[] parameter(0)\n}\n",
        "error: 4:8: expected an instruction name, found the keyword `ROOT`; write a name that is a keyword as `%ROOT`",
    );
}

/// A constant's shape carries a layout, scalars included (an empty one; XLA's reader requires
/// it), while a program shape's scalar has none, as the text `()->f32[]` reads. The entry layout
/// derived from a constant root follows the program-shape rule, so parsing the print gives the
/// module back (fuzz finding: the empty layout appeared in the derived shape, then vanished).
#[test]
fn a_constant_entry_root_is_a_fixed_point() {
    check(
        &entry("  ROOT c = f32[] constant(1)\n"),
        &printed_entry("()->f32[]", "  ROOT c = f32[] constant(1)\n"),
    );
    check(
        &entry("  ROOT k = (s32[], f32[2]) constant((7, {1.5, -0}))\n"),
        &printed_entry(
            "()->(s32[], f32[2]{0})",
            "  ROOT k = (s32[], f32[2]{0}) constant((7, {1.5, -0}))\n",
        ),
    );
}

/// XLA's proto reader refuses an instruction name used twice in a module, while the text scopes
/// names to their computation; so the parser renames as XLA's parser does (the second `x`
/// becomes `x.1`), and the printer writes the names the parser gives. `text_xla.rs` holds the
/// names to XLA's parse of the same text.
#[test]
fn names_repeated_across_computations_are_made_unique_as_xla_does() {
    let text = "HloModule m\n\nf {\n  x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)\n}\n\n\
                ENTRY e {\n  x = f32[] parameter(0)\n  y.1 = f32[] negate(x)\n  ROOT y = f32[] call(y.1), to_apply=f\n}\n";
    let module = hlo::load_module(text.as_bytes()).unwrap();
    let encoded = hlo::decode_module(&hlo::encode_module(&module)).unwrap();
    let names: Vec<&str> = encoded
        .computations
        .iter()
        .flat_map(|c| &c.instructions)
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(names, ["x", "y", "x.1", "y.1", "y.2"]);
    check(
        text,
        "HloModule m, entry_computation_layout={(f32[])->f32[]}\n\nf {\n  x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)\n}\n\n\
         ENTRY e {\n  x.1 = f32[] parameter(0)\n  y.1 = f32[] negate(x.1)\n  ROOT y.2 = f32[] call(y.1), to_apply=f\n}\n\n",
    );
}
