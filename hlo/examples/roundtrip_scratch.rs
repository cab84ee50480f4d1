//! scratch
fn main() {
    let src = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    match hlo::text::parse_module(&src) {
        Ok(m) => {
            let t = hlo::text::print_module(&m).unwrap();
            print!("{t}");
            let m2 = hlo::text::parse_module(&t).unwrap();
            assert!(hlo::encode_module(&m) == hlo::encode_module(&m2), "differ");
            eprintln!("ok: stable");
        }
        Err(e) => eprintln!("error: {e}"),
    }
}
