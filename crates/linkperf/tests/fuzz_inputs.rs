//! Every committed fuzz input, replayed on stable Rust through the fuzz targets' own checks (fuzz/src/lib.rs,
//! included here as a module): the seed corpus of each target (`fuzz/seeds/TARGET/`), its findings
//! (`fuzz/findings/TARGET/`, fixed ones kept as regressions) and, when a developer has fuzzed locally, the
//! corpus libFuzzer grew (`fuzz/corpus/TARGET/`, not committed). An input fails when its check panics:
//! a decoder panicked, or the property the target checks (a round trip, a typed refusal, a bound) broke.
//! CI runs this with the other tests; the fuzzing itself (nightly, cargo-fuzz) is `fuzz/run.sh`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[path = "../../../fuzz/src/lib.rs"]
mod fuzz;

/// The fuzz workspace.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted (none when it does not exist).
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

/// Runs `check` on every file under `kind/TARGET/` of every target; returns how many ran and the failures.
fn replay(kind: &str) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for (target, check) in fuzz::TARGETS {
        for path in inputs(&fuzz_dir().join(kind).join(target)) {
            let data = std::fs::read(&path).unwrap();
            ran += 1;
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("{target}: {}: {why}", path.display()));
            }
        }
    }
    (ran, failures)
}

#[test]
fn every_target_has_seeds_and_every_seed_and_corpus_input_passes_its_check() {
    for (target, _) in fuzz::TARGETS {
        let seeds = inputs(&fuzz_dir().join("seeds").join(target));
        assert!(!seeds.is_empty(), "no seeds for the fuzz target {target} in fuzz/seeds/{target}/");
    }
    let (ran, failures) = replay("seeds");
    eprintln!("{ran} seeds replayed");
    assert!(failures.is_empty(), "seeds failing their target's check:\n{}", failures.join("\n"));
    // Not committed: present only where someone ran fuzz/run.sh; then every input it kept must pass too.
    let (ran, failures) = replay("corpus");
    eprintln!("{ran} inputs of a local corpus replayed");
    assert!(failures.is_empty(), "corpus inputs failing their target's check:\n{}", failures.join("\n"));
}

#[test]
fn every_finding_is_fixed_and_stays_fixed() {
    let (ran, failures) = replay("findings");
    eprintln!("{ran} findings replayed");
    assert!(ran > 0, "fuzz/findings/ holds the inputs that once failed; none found");
    assert!(failures.is_empty(), "findings failing their target's check again:\n{}", failures.join("\n"));
}

#[test]
fn every_fuzz_target_is_listed_and_calls_its_check() {
    // A target added to fuzz/Cargo.toml but not to `TARGETS` would never be replayed here.
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    let declared: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .filter(|name| *name != "linkperf-fuzz")
        .collect();
    let listed: Vec<&str> = fuzz::TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(declared, listed, "fuzz/Cargo.toml's [[bin]] targets and fuzz::TARGETS");
    for name in listed {
        let source = std::fs::read_to_string(fuzz_dir().join(format!("fuzz_targets/{name}.rs"))).unwrap();
        assert!(source.contains(&format!("linkperf_fuzz::{name}(data)")), "fuzz_targets/{name}.rs calls its check");
    }
}
