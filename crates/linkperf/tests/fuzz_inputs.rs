//! Every committed fuzz input, replayed on stable Rust through the fuzz targets' own checks (fuzz/src/lib.rs,
//! included here as a module): the seed corpus of each target (`fuzz/seeds/TARGET/`), its findings
//! (`fuzz/findings/TARGET/`, fixed ones kept as regressions) and, when a developer has fuzzed locally, the
//! corpus libFuzzer grew (`fuzz/corpus/TARGET/`, not committed). An input fails when its check panics:
//! a decoder panicked, or the property the target checks (a round trip, a typed refusal, a bound) broke.
//! CI runs this with the other tests, with a short unguided run of mutated seeds; the coverage-guided
//! fuzzing (nightly, cargo-fuzz) is `fuzz/run.sh`.

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

/// Runs `check` on `data`: the panic's message if it panicked.
fn run_check(check: fn(&[u8]), data: &[u8]) -> Option<String> {
    let panic = catch_unwind(AssertUnwindSafe(|| check(data))).err()?;
    Some(
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    )
}

/// Runs `check` on every file under `kind/TARGET/` of every target; returns how many ran and the failures.
fn replay(kind: &str) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for (target, check) in fuzz::TARGETS {
        for path in inputs(&fuzz_dir().join(kind).join(target)) {
            let data = std::fs::read(&path).unwrap();
            ran += 1;
            if let Some(why) = run_check(check, &data) {
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

/// A small generator (xorshift64*): the mutations need no quality beyond spreading.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `seed` changed the way fuzzers change inputs: bits flipped, bytes set to edge values, inserted, removed,
/// a run repeated, the input cut short, or spliced with another seed.
fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(data.len() + 1);
        let last = data.len().saturating_sub(1);
        match rng.below(7) {
            0 if !data.is_empty() => data[at.min(last)] ^= 1 << rng.below(8),
            1 if !data.is_empty() => data[at.min(last)] = [0, 0xff, 0x7f, 0x80, b'9', b'-'][rng.below(6)],
            2 => data.insert(at, rng.next() as u8),
            3 if at < data.len() => {
                data.remove(at);
            }
            4 => {
                let end = (at + 1 + rng.below(16)).min(data.len());
                let run = data[at.min(end)..end].to_vec();
                data.splice(at..at, run);
            }
            5 => data.truncate(at),
            _ => {
                let from = rng.below(other.len() + 1);
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
        }
    }
    data
}

/// A short, unguided fuzz run on stable Rust in every test run: each target's seeds mutated five thousand
/// times. The seed of the mutations changes every run and is printed; LINKPERF_FUZZ_SEED=N repeats one.
/// The coverage-guided runs are `fuzz/run.sh` (nightly).
#[test]
fn five_thousand_mutations_of_every_targets_seeds_pass_their_checks() {
    let seed = std::env::var("LINKPERF_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1
    });
    eprintln!("mutation seed {seed} (LINKPERF_FUZZ_SEED={seed} repeats this run)");
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    for (target, check) in fuzz::TARGETS {
        let seeds: Vec<Vec<u8>> =
            inputs(&fuzz_dir().join("seeds").join(target)).iter().map(|path| std::fs::read(path).unwrap()).collect();
        for _ in 0..5000 {
            let (a, b) = (&seeds[rng.below(seeds.len())], &seeds[rng.below(seeds.len())]);
            let data = mutate(&mut rng, a, b);
            if let Some(why) = run_check(check, &data) {
                failures.push(format!("{target}: {data:?}: {why}"));
                break;
            }
        }
    }
    assert!(failures.is_empty(), "seed {seed}: inputs failing their target's check:\n{}", failures.join("\n"));
}
