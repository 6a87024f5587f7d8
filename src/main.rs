//! yoctoclaw's entry point: everything happens in `cli::run`, which returns the exit status.

fn main() {
    std::process::exit(yoctoclaw::cli::main());
}
