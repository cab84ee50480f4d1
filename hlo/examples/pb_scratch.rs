//! scratch
fn main() {
    let bytes = std::fs::read(std::env::args().nth(1).unwrap()).unwrap();
    let m = hlo::decode_module(&bytes).unwrap();
    match hlo::text::print_module(&m) {
        Ok(t) => print!("{t}"),
        Err(e) => eprintln!("error: {e}"),
    }
}
