//! Small modules whose protos are written out by hand from what their text means.

use hlo::proto::{
    ConvolutionDimensionNumbers, DotDimensionNumbers, HloComputationProto, HloInstructionProto,
    HloModuleProto, LayoutProto, PrecisionConfig, PrimitiveType, ProgramShapeProto, ShapeProto,
    Window, WindowDimension,
};

fn array(ty: PrimitiveType, dims: &[i64]) -> ShapeProto {
    ShapeProto {
        element_type: ty.into(),
        dimensions: dims.to_vec(),
        tuple_shapes: vec![],
        layout: (!dims.is_empty()).then(|| LayoutProto {
            minor_to_major: (0..dims.len() as i64).rev().collect(),
            ..Default::default()
        }),
        is_dynamic_dimension: vec![false; dims.len()],
    }
}

fn tuple(elements: Vec<ShapeProto>) -> ShapeProto {
    ShapeProto {
        element_type: PrimitiveType::Tuple.into(),
        tuple_shapes: elements,
        ..Default::default()
    }
}

fn instr(
    name: &str,
    opcode: &str,
    id: i64,
    shape: ShapeProto,
    operands: &[i64],
) -> HloInstructionProto {
    HloInstructionProto {
        name: name.into(),
        opcode: opcode.into(),
        id,
        shape: Some(shape),
        operand_ids: operands.to_vec(),
        ..Default::default()
    }
}

fn param(name: &str, number: i64, id: i64, shape: ShapeProto) -> HloInstructionProto {
    HloInstructionProto { parameter_number: number, ..instr(name, "parameter", id, shape, &[]) }
}

fn computation(
    name: &str,
    id: i64,
    root: i64,
    instructions: Vec<HloInstructionProto>,
) -> HloComputationProto {
    let params: Vec<&HloInstructionProto> =
        instructions.iter().filter(|i| i.opcode == "parameter").collect();
    let program_shape = ProgramShapeProto {
        parameters: params.iter().map(|p| p.shape.clone().unwrap()).collect(),
        result: instructions.iter().find(|i| i.id == root).and_then(|i| i.shape.clone()),
        parameter_names: params.iter().map(|p| p.name.clone()).collect(),
    };
    HloComputationProto {
        name: name.into(),
        id,
        root_id: root,
        instructions,
        program_shape: Some(program_shape),
        ..Default::default()
    }
}

/// A module; its host program shape is the entry computation's, parameters named `p0, p1, ...`,
/// as XLA's parser writes it for text without `entry_computation_layout` (the modules here give
/// every array its layout, so the shapes are the same).
fn module(name: &str, entry: i64, computations: Vec<HloComputationProto>) -> HloModuleProto {
    let mut host = computations[entry as usize].program_shape.clone().unwrap();
    host.parameter_names = (0..host.parameters.len()).map(|k| format!("p{k}")).collect();
    HloModuleProto {
        name: name.into(),
        entry_computation_name: computations[entry as usize].name.clone(),
        entry_computation_id: entry,
        computations,
        host_program_shape: Some(host),
        ..Default::default()
    }
}

fn assert_parses_to(src: &str, expected: &HloModuleProto) {
    let parsed = hlo::text::parse_module(src).unwrap();
    assert_eq!(&parsed, expected);
}

const F32: PrimitiveType = PrimitiveType::F32;

#[test]
fn add() {
    let src = "HloModule add\nENTRY e {\n  x = f32[2]{0} parameter(0)\n  y = f32[2]{0} parameter(1)\n  ROOT s = f32[2]{0} add(x, y)\n}\n";
    let expected = module(
        "add",
        0,
        vec![computation(
            "e",
            0,
            2,
            vec![
                param("x", 0, 0, array(F32, &[2])),
                param("y", 1, 1, array(F32, &[2])),
                instr("s", "add", 2, array(F32, &[2]), &[0, 1]),
            ],
        )],
    );
    assert_parses_to(src, &expected);
}

#[test]
fn batched_dot_with_dimension_numbers() {
    let src = "HloModule d\nENTRY e {\n  a = f32[2,3,4]{2,1,0} parameter(0)\n  b = f32[2,4,5]{2,1,0} parameter(1)\n  \
        ROOT d = f32[2,3,5]{2,1,0} dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n}\n";
    let mut dot = instr("d", "dot", 2, array(F32, &[2, 3, 5]), &[0, 1]);
    dot.dot_dimension_numbers = Some(Box::new(DotDimensionNumbers {
        lhs_contracting_dimensions: vec![2],
        rhs_contracting_dimensions: vec![1],
        lhs_batch_dimensions: vec![0],
        rhs_batch_dimensions: vec![0],
    }));
    // No precision written means DEFAULT for both operands, as XLA's parser records it.
    dot.precision_config =
        Some(Box::new(PrecisionConfig { operand_precision: vec![0, 0], algorithm: 0 }));
    let expected = module(
        "d",
        0,
        vec![computation(
            "e",
            0,
            2,
            vec![
                param("a", 0, 0, array(F32, &[2, 3, 4])),
                param("b", 1, 1, array(F32, &[2, 4, 5])),
                dot,
            ],
        )],
    );
    assert_parses_to(src, &expected);
}

#[test]
fn convolution_with_window_and_dim_labels() {
    // NCHW input, OIHW kernel, 3x3 window, stride 2, padding 1 on each side of both spatial dims.
    let src = "HloModule c\nENTRY e {\n  i = f32[1,3,8,8]{3,2,1,0} parameter(0)\n  k = f32[4,3,3,3]{3,2,1,0} parameter(1)\n  \
        ROOT c = f32[1,4,4,4]{3,2,1,0} convolution(i, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n}\n";
    let window_dim = WindowDimension {
        size: 3,
        stride: 2,
        padding_low: 1,
        padding_high: 1,
        window_dilation: 1,
        base_dilation: 1,
        window_reversal: false,
    };
    let mut conv = instr("c", "convolution", 2, array(F32, &[1, 4, 4, 4]), &[0, 1]);
    conv.window = Some(Window { dimensions: vec![window_dim; 2] });
    conv.convolution_dimension_numbers = Some(Box::new(ConvolutionDimensionNumbers {
        input_batch_dimension: 0,
        input_feature_dimension: 1,
        input_spatial_dimensions: vec![2, 3],
        kernel_input_feature_dimension: 1,
        kernel_output_feature_dimension: 0,
        kernel_spatial_dimensions: vec![2, 3],
        output_batch_dimension: 0,
        output_feature_dimension: 1,
        output_spatial_dimensions: vec![2, 3],
    }));
    conv.feature_group_count = 1;
    conv.batch_group_count = 1;
    conv.precision_config =
        Some(Box::new(PrecisionConfig { operand_precision: vec![0, 0], algorithm: 0 }));
    let expected = module(
        "c",
        0,
        vec![computation(
            "e",
            0,
            2,
            vec![
                param("i", 0, 0, array(F32, &[1, 3, 8, 8])),
                param("k", 1, 1, array(F32, &[4, 3, 3, 3])),
                conv,
            ],
        )],
    );
    assert_parses_to(src, &expected);
}

#[test]
fn while_loop_calls_body_then_condition() {
    let src = "HloModule w\n\ncond {\n  p = (s32[]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
        n = s32[] constant(10)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n\n\
        body {\n  p = (s32[]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  one = s32[] constant(1)\n  \
        next = s32[] add(i, one)\n  ROOT t = (s32[]) tuple(next)\n}\n\n\
        ENTRY e {\n  z = s32[] constant(0)\n  t = (s32[]) tuple(z)\n  ROOT w = (s32[]) while(t), condition=cond, body=body\n}\n";
    let s32 = || array(PrimitiveType::S32, &[]);
    let state = || tuple(vec![s32()]);
    // A constant's shape and its literal's have a layout even for a scalar (empty): XLA's
    // reader requires one.
    let laid_out_s32 = || ShapeProto { layout: Some(LayoutProto::default()), ..s32() };
    let literal = |v: i32| hlo::proto::LiteralProto {
        shape: Some(laid_out_s32()),
        s32s: vec![v],
        ..Default::default()
    };
    let c1 = 1 << 32;
    let c2 = 2 << 32;
    let mut gte = instr("i", "get-tuple-element", 1, s32(), &[0]);
    gte.tuple_index = 0;
    let mut ten = instr("n", "constant", 2, laid_out_s32(), &[]);
    ten.literal = Some(Box::new(literal(10)));
    let mut lt = instr("lt", "compare", 3, array(PrimitiveType::Pred, &[]), &[1, 2]);
    lt.comparison_direction = "LT".into();
    lt.comparison_type = "SIGNED".into();
    let mut one = instr("one", "constant", c1 + 2, laid_out_s32(), &[]);
    one.literal = Some(Box::new(literal(1)));
    let mut zero = instr("z", "constant", c2, laid_out_s32(), &[]);
    zero.literal = Some(Box::new(literal(0)));
    let mut w = instr("w", "while", c2 + 2, state(), &[c2 + 1]);
    // Names are one namespace in the module: body's `p` and `i` and the entry's `t` repeat
    // earlier names and become `p.1`, `i.1` and `t.1`, as XLA's parser names them.
    w.called_computation_ids = vec![1, 0];
    let expected = module(
        "w",
        2,
        vec![
            computation("cond", 0, 3, vec![param("p", 0, 0, state()), gte, ten, lt]),
            computation(
                "body",
                1,
                c1 + 4,
                vec![
                    param("p.1", 0, c1, state()),
                    instr("i.1", "get-tuple-element", c1 + 1, s32(), &[c1]),
                    one,
                    instr("next", "add", c1 + 3, s32(), &[c1 + 1, c1 + 2]),
                    instr("t", "tuple", c1 + 4, state(), &[c1 + 3]),
                ],
            ),
            computation(
                "e",
                2,
                c2 + 2,
                vec![zero, instr("t.1", "tuple", c2 + 1, state(), &[c2]), w],
            ),
        ],
    );
    assert_parses_to(src, &expected);
}

/// Text without `entry_computation_layout` gets the host program shape XLA's parser gives it (and
/// XLA's proto readers require): the entry's parameters in parameter-number order named `p0, p1`,
/// the root's tuple as the result, arrays in the default layout, scalars without one. The entry
/// computation's own program shape keeps the text's names and shapes.
#[test]
fn host_program_shape_is_derived_from_the_entry_when_the_text_has_none() {
    let src = "HloModule h\n\nENTRY e {\n  b = s32[] parameter(1)\n  a = f32[2,3] parameter(0)\n  \
        bt = (s32[]) tuple(b)\n  ROOT t = (f32[2,3], (s32[])) tuple(a, bt)\n}\n";
    let parsed = hlo::text::parse_module(src).unwrap();
    let plain = |ty: PrimitiveType, dims: &[i64]| ShapeProto {
        element_type: ty.into(),
        dimensions: dims.to_vec(),
        is_dynamic_dimension: vec![false; dims.len()],
        ..Default::default()
    };
    let laid_out = |ty: PrimitiveType, dims: &[i64], minor_to_major: &[i64]| ShapeProto {
        layout: Some(LayoutProto { minor_to_major: minor_to_major.to_vec(), ..Default::default() }),
        ..plain(ty, dims)
    };
    let s32 = PrimitiveType::S32;
    let expected = ProgramShapeProto {
        parameters: vec![laid_out(F32, &[2, 3], &[1, 0]), plain(s32, &[])],
        result: Some(tuple(vec![laid_out(F32, &[2, 3], &[1, 0]), tuple(vec![plain(s32, &[])])])),
        parameter_names: vec!["p0".into(), "p1".into()],
    };
    assert_eq!(parsed.host_program_shape.as_ref(), Some(&expected));
    let entry = ProgramShapeProto {
        parameters: vec![plain(F32, &[2, 3]), plain(s32, &[])],
        result: Some(tuple(vec![plain(F32, &[2, 3]), tuple(vec![plain(s32, &[])])])),
        parameter_names: vec!["a".into(), "b".into()],
    };
    assert_eq!(parsed.computations[0].program_shape.as_ref(), Some(&entry));
    // The printer writes it as the entry layout, and that text parses to the same module.
    let printed = hlo::text::print_module(&parsed).unwrap();
    assert!(
        printed.starts_with(
            "HloModule h, entry_computation_layout={(f32[2,3]{1,0}, s32[])->(f32[2,3]{1,0}, (s32[]))}\n"
        ),
        "{printed}"
    );
    assert_eq!(hlo::text::parse_module(&printed).unwrap(), parsed);
}
