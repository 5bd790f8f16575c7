// The built-in rules are embedded with include_dir!, which cargo does not track on stable:
// rebuild whenever a rule file changes.
fn main() {
    println!("cargo:rerun-if-changed=rules");
}
