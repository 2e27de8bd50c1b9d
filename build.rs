//! Embeds the reference project (plans, expectations, plancheck.toml) and the board's fixture SQL
//! into the binary, so `plancheck demo` and `plancheck fixtures load` work from anywhere.

use std::env;
use std::fs;
use std::path::Path;

fn main() {
    let root = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&root);
    let mut out = String::from(
        "/// (path relative to the project root, contents)\npub static FILES: &[(&str, &str)] = &[\n",
    );
    let mut files = Vec::new();
    for dir in ["plans", "expectations", "fixtures"] {
        println!("cargo:rerun-if-changed={dir}");
        let Ok(entries) = fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".sql") || name.ends_with(".toml") {
                files.push(format!("{dir}/{name}"));
            }
        }
    }
    println!("cargo:rerun-if-changed=plancheck.toml");
    if root.join("plancheck.toml").exists() {
        files.push("plancheck.toml".to_string());
    }
    files.sort();
    for f in files {
        let abs = root.join(&f);
        out.push_str(&format!(
            "    ({f:?}, include_str!({:?})),\n",
            abs.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("embedded.rs");
    fs::write(dest, out).expect("write embedded.rs");
}
