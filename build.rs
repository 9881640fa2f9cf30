//! Build facts the binary reports in `--version` and in every run record (`build` section):
//!
//! - `CONNSTORM_GIT_COMMIT`: the commit the binary is built from (`git rev-parse --short=12
//!   HEAD`, `-dirty` appended when tracked files differ from it), or `unknown` when the source
//!   is not a git checkout of its own (a release tarball, `cargo install` from a `.crate`).
//!   A checkout *inside* another repository's tree does not count: the top level must be this
//!   crate's directory.
//! - `CONNSTORM_BUILD_FEATURES`: the cargo features of the `connstorm` package enabled in this
//!   build, comma-separated (empty when none); `CONNSTORM_BUILD_FEATURES_SHOWN` the same for
//!   people (`none` when none).
//! - `CONNSTORM_BUILD_TARGET`, `CONNSTORM_BUILD_PROFILE`: target triple and `release`/`debug`.
//! - `CONNSTORM_RUSTC`: `rustc --version` of the compiler (empty if it cannot be run).
use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit of the checkout whose top level is `dir`: 12 hex digits, `-dirty` appended when
/// tracked files differ from it; `"unknown"` when `dir` is not the top level of a git checkout
/// (a tarball, or a tarball unpacked inside some other repository) or git cannot be run.
pub fn git_commit(dir: &Path) -> String {
    if !own_checkout(dir) {
        return "unknown".to_string();
    }
    let Some(commit) = git(dir, &["rev-parse", "--short=12", "HEAD"]) else {
        return "unknown".to_string();
    };
    let dirty =
        git(dir, &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    }
}

/// `dir` is the top level of a git checkout (not merely somewhere inside one).
fn own_checkout(dir: &Path) -> bool {
    git(dir, &["rev-parse", "--show-toplevel"])
        .and_then(|top| std::fs::canonicalize(top).ok())
        .zip(std::fs::canonicalize(dir).ok())
        .is_some_and(|(top, here)| top == here)
}

/// The existing git files whose change can change [`git_commit`]: HEAD, the branch's ref,
/// packed-refs and the index. In a worktree `.git` is a file, so the paths come from git
/// itself. Missing files are left out: cargo would rerun the script on every build.
fn watched_git_files(dir: &Path) -> Vec<PathBuf> {
    if !own_checkout(dir) {
        return Vec::new();
    }
    let mut names = vec![
        "HEAD".to_string(),
        "index".to_string(),
        "packed-refs".to_string(),
    ];
    if let Some(head_ref) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        names.push(head_ref);
    }
    names
        .iter()
        .filter_map(|name| git(dir, &["rev-parse", "--git-path", name]))
        .map(|p| dir.join(p))
        .filter(|p| p.exists())
        .collect()
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!(
        "cargo:rustc-env=CONNSTORM_GIT_COMMIT={}",
        git_commit(&manifest_dir)
    );
    println!("cargo:rerun-if-changed=build.rs");
    for path in watched_git_files(&manifest_dir) {
        println!("cargo:rerun-if-changed={}", path.display());
    }

    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| k.strip_prefix("CARGO_FEATURE_").map(str::to_string))
        .map(|f| f.to_lowercase().replace('_', "-"))
        .collect();
    features.sort();
    println!(
        "cargo:rustc-env=CONNSTORM_BUILD_FEATURES={}",
        features.join(",")
    );
    let shown = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(", ")
    };
    println!("cargo:rustc-env=CONNSTORM_BUILD_FEATURES_SHOWN={shown}");
    println!(
        "cargo:rustc-env=CONNSTORM_BUILD_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );
    println!(
        "cargo:rustc-env=CONNSTORM_BUILD_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=CONNSTORM_RUSTC={rustc_version}");
}
