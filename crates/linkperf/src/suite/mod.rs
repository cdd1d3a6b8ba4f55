//! `linkperf suite`: runs the tests of a profile one after the other, each as a child process of this
//! binary printing JSON (so a test that fails or is killed takes nothing else with it), and prints the
//! profile's tables from their results. Each child keeps its run in the results database itself.

pub mod profile;

use std::io::Write;
use std::process::{Command, ExitCode, Stdio};

use anyhow::Context;
use linkperf_core::datasheet::{by_size_table, datasheet_rows, DatasheetRow, Table};
use linkperf_core::{RunResult, RunStatus};
use linkperf_report::datasheet::{write_tables, DatasheetFormat};

use crate::args::suite::SuiteArgs;
use crate::exit::UsageError;
use profile::{Profile, Section};

/// Runs the suite; exit 1 if a test failed or the user stopped it (the tables then hold what was measured).
pub fn run(args: SuiteArgs) -> anyhow::Result<ExitCode> {
    if args.list_studies {
        for (name, _) in profile::BUILT_IN {
            let profile = Profile::built_in(name)?;
            println!("{name:<18} {}: {}", profile.title, profile.description);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.target.unix.is_some() {
        return Err(UsageError("a suite runs Unix-socket tests on this host by itself: leave out --unix".into()).into());
    }
    if args.link.bauds.len() > 1 {
        return run_per_baud(args);
    }
    run_once(args).map(ExitCode::from)
}

/// A list of baud rates on this host's serial ports: the whole suite once per rate, each run labelled
/// `baud:RATE`; the exit code is the worst of the runs'.
fn run_per_baud(args: SuiteArgs) -> anyhow::Result<ExitCode> {
    if args.link.device.is_none() {
        return Err(UsageError(
            "a list of baud rates needs --device: a device server's rate is set on the device, so run the suite once per rate with a label"
                .into(),
        )
        .into());
    }
    if args.json {
        return Err(UsageError("--json prints one suite's document: give one baud rate per run".into()).into());
    }
    let mut worst = crate::exit::SUCCESS;
    for &baud in &args.link.bauds {
        let mut one = args.clone();
        one.link.bauds = vec![baud];
        one.store.labels.push(format!("baud:{baud}"));
        eprintln!("== {baud} baud (labelled baud:{baud})");
        println!("\n{baud} baud");
        let code = run_once(one)?;
        if crate::progress::interrupted() {
            worst = crate::exit::FAILURE;
            break;
        }
        // The codes in order of what they say: 1 (a run failed) over 3 (a gate failed) over 0.
        worst = match (worst, code) {
            (crate::exit::FAILURE, _) | (_, crate::exit::FAILURE) => crate::exit::FAILURE,
            (crate::exit::GATE, _) | (_, crate::exit::GATE) => crate::exit::GATE,
            _ => crate::exit::SUCCESS,
        };
    }
    Ok(ExitCode::from(worst))
}

/// Runs the suite once and returns its exit code.
fn run_once(args: SuiteArgs) -> anyhow::Result<u8> {
    let (profile, name) = load(&args)?;
    let mut runner = Runner::new(&args, &name, &profile)?;
    eprintln!(
        "suite '{}' ({name}): {} test runs; each test announces and bounds its own time",
        profile.title, runner.total
    );
    let tables = runner.tables(&profile);
    let mut out = std::io::stdout().lock();
    if args.json {
        let document = serde_json::json!({ "title": profile.title, "profile": name, "tables": tables });
        serde_json::to_writer_pretty(&mut out, &document)?;
        writeln!(out)?;
    } else {
        let format = if args.markdown { DatasheetFormat::Markdown } else { DatasheetFormat::Table };
        let mut rendered = Vec::new();
        write_tables(&profile.title, &tables, format, &mut rendered)?;
        out.write_all(crate::output::safe_text(&rendered).as_bytes())?;
    }
    out.flush()?;
    if runner.stopped {
        runner.failures.push("the suite was stopped (Ctrl-C); the tables hold what it had measured".into());
    }
    let results: Vec<&RunResult> = runner.results.iter().collect();
    let gated = linkperf_core::gate::check_all(&args.fail_if, &results);
    for failure in &gated {
        eprintln!("gate failed: {}", crate::output::safe_value(&failure.to_string()));
    }
    if runner.failures.is_empty() {
        return Ok(if gated.is_empty() { crate::exit::SUCCESS } else { crate::exit::GATE });
    }
    for failure in &runner.failures {
        eprintln!("error: {}", crate::output::safe_value(failure));
    }
    Ok(crate::exit::FAILURE)
}

/// The profile to run, and its name (for labels).
fn load(args: &SuiteArgs) -> anyhow::Result<(Profile, String)> {
    let (mut profile, name) = match (&args.profile, &args.study) {
        (Some(path), _) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read profile {}", path.display()))?;
            let name = path.file_stem().map_or("profile".into(), |s| s.to_string_lossy().into_owned());
            (Profile::parse(&text, &path.display().to_string())?, name)
        }
        (None, Some(study)) => (Profile::built_in(study)?, study.clone()),
        (None, None) => (Profile::built_in("datasheet")?, "datasheet".to_string()),
    };
    if let Some(repeat) = args.repeat {
        if repeat == 0 {
            return Err(UsageError("--repeat must be at least 1".into()).into());
        }
        profile.repeat = repeat;
        for section in &mut profile.sections {
            if let Section::Datasheet { rows, .. } = section {
                rows.iter_mut().for_each(|r| r.repeat = Some(repeat));
            }
        }
    }
    Ok((profile, name))
}

/// Runs a profile's commands.
struct Runner {
    exe: std::path::PathBuf,
    /// Words added after the host of every network test (port, key file).
    target: Vec<String>,
    host: Option<String>,
    /// Words added to every command (output, database, labels).
    common: Vec<String>,
    /// Options of the link (`--link-rate 250k`, `--max 250k`, ...), added to each command that takes them
    /// and does not give them itself.
    link: Vec<[String; 2]>,
    total: usize,
    done: usize,
    stopped: bool,
    failures: Vec<String>,
    /// What each repetition of each datasheet command gave, by command and repetition: rows that read
    /// different figures of one command (the sustainable and the zero-loss rate of one search) share its runs.
    measured: Vec<((String, u32), Measured)>,
    /// Every run's result, for the suite's gates.
    results: Vec<RunResult>,
}

/// A command's result, unless it measured nothing, and what went wrong, if anything.
type Measured = (Option<RunResult>, Option<String>);

impl Runner {
    fn new(args: &SuiteArgs, name: &str, profile: &Profile) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("cannot find this program's own path to run the tests")?;
        let mut target = vec!["--port".to_string(), args.target.port.to_string()];
        if let Some(key) = &args.target.key_file {
            target.extend(["--key-file".to_string(), key.display().to_string()]);
        }
        let sockets = &args.target.sockets;
        let tos = sockets.tos().map(|t| t.to_string());
        for (option, value) in
            [("--bind", sockets.bind.clone()), ("--bind-dev", sockets.bind_dev.clone()), ("--tos", tos)]
        {
            if let Some(value) = value {
                target.extend([option.to_string(), value]);
            }
        }
        let mut common = vec!["--json".to_string()];
        match args.store.path() {
            Some(path) => common.extend(["--db".to_string(), path.display().to_string()]),
            None => common.push("--no-store".into()),
        }
        for label in std::iter::once(format!("suite:{name}")).chain(args.store.labels.iter().cloned()) {
            common.extend(["--label".to_string(), label]);
        }
        let total = profile
            .sections
            .iter()
            .map(|s| match s {
                Section::Datasheet { rows, .. } => {
                    let mut commands: Vec<(&str, u32)> =
                        rows.iter().map(|r| (r.run.as_str(), r.repeat.unwrap_or(profile.repeat))).collect();
                    // Each command once, with the most repetitions any of its rows asks for.
                    commands.sort_unstable_by(|a, b| a.0.cmp(b.0).then(b.1.cmp(&a.1)));
                    commands.dedup_by(|a, b| a.0 == b.0);
                    commands.iter().map(|(_, repeat)| *repeat as usize).sum()
                }
                Section::BySize { columns, .. } => columns.len(),
                Section::Runs { run, .. } => run.len(),
            })
            .sum();
        Ok(Self {
            exe,
            target,
            host: args.target.host.clone(),
            common,
            link: args.link.options(),
            total,
            done: 0,
            stopped: false,
            failures: Vec::new(),
            measured: Vec::new(),
            results: Vec::new(),
        })
    }

    /// Runs every section (until the user stops the suite) and returns its tables.
    fn tables(&mut self, profile: &Profile) -> Vec<Table> {
        let mut tables = Vec::new();
        for section in &profile.sections {
            if self.stopped {
                break;
            }
            tables.push(match section {
                Section::Datasheet { title, rows } => {
                    let mut out = Vec::new();
                    for row in rows {
                        out.extend(self.datasheet_row(row, profile.repeat));
                    }
                    Table::Datasheet { title: title.clone(), rows: out }
                }
                Section::BySize { title, figure, note, columns } => {
                    let runs: Vec<Option<RunResult>> = columns.iter().map(|c| self.run(&c.run)).collect();
                    let refs: Vec<Option<&RunResult>> = runs.iter().map(Option::as_ref).collect();
                    let headings = columns.iter().map(|c| c.heading.clone()).collect();
                    by_size_table(title, *figure, note, headings, &refs)
                }
                Section::Runs { title, run } => {
                    Table::Runs { title: title.clone(), runs: run.iter().filter_map(|c| self.run(c)).collect() }
                }
            });
        }
        tables
    }

    /// The rows of one datasheet row of the profile: its figures from its repetitions, or, for each row
    /// that could not be measured, a row without figures that says why (and the suite then fails).
    fn datasheet_row(&mut self, row: &profile::Row, repeat: u32) -> Vec<DatasheetRow> {
        let mut problems = Vec::new();
        let mut runs = Vec::new();
        for repetition in 0..row.repeat.unwrap_or(repeat) {
            let key = (row.run.clone(), repetition);
            let (result, problem) = match self.measured.iter().find(|(k, _)| *k == key) {
                Some((_, earlier)) => earlier.clone(),
                None => {
                    let measured = self.run_once(&row.run);
                    self.measured.push((key, measured.clone()));
                    measured
                }
            };
            runs.extend(result);
            problems.extend(problem);
        }
        let unit = row.unit.as_deref().unwrap_or("");
        let mut made = datasheet_rows(&row.test, row.figure, unit, &row.note, &runs);
        if made.is_empty() {
            let reason = match problems.last() {
                Some(problem) => problem.clone(),
                None if self.stopped => "the suite was stopped before it ran".to_string(),
                None => format!("`linkperf {}` gave no result", row.run),
            };
            made.push(DatasheetRow::not_measured(&row.test, &row.note, reason));
        }
        for unmeasured in made.iter().filter(|r| r.reason.is_some()) {
            let reason = unmeasured.reason.as_deref().unwrap_or_default();
            self.failures.push(format!("datasheet row '{}' could not be measured: {reason}", unmeasured.test));
        }
        made
    }

    /// Runs one command; its result, unless it measured nothing. Marks the suite stopped on Ctrl-C.
    fn run(&mut self, command: &str) -> Option<RunResult> {
        self.run_once(command).0
    }

    /// Runs one command: its result, unless it measured nothing, and what went wrong, if anything (also
    /// kept among the suite's failures). The child's stderr is passed on as it comes, and its last error
    /// line kept as the reason.
    fn run_once(&mut self, command: &str) -> (Option<RunResult>, Option<String>) {
        if self.stopped || crate::progress::interrupted() {
            self.stopped = true;
            return (None, None);
        }
        self.done += 1;
        let words = profile::words(command);
        let mut child = Command::new(&self.exe);
        child.arg(words[0]);
        if !profile::is_local(command) {
            child.args(self.host.iter()).args(&self.target);
        }
        let link = self.link_options(&words);
        child.args(&words[1..]).args(&link).args(&self.common).stdout(Stdio::piped()).stderr(Stdio::piped());
        let shown = std::iter::once(command.to_string()).chain(link.iter().cloned()).collect::<Vec<_>>().join(" ");
        eprintln!("[{}/{}] linkperf {shown}", self.done, self.total);
        let (output, said) = match run_passing_stderr(child) {
            Ok(done) => done,
            Err(e) => {
                let problem = format!("`linkperf {shown}` could not start: {e}");
                self.failures.push(problem.clone());
                return (None, Some(problem));
            }
        };
        let result: Option<RunResult> = serde_json::from_slice(&output.stdout).ok();
        if crate::progress::interrupted() {
            self.stopped = true;
        }
        let problem = match (&result, output.status.success()) {
            (Some(_), true) => None,
            (Some(RunResult { status: RunStatus::Partial { error }, .. }), false) => {
                Some(format!("`linkperf {shown}` stopped early ({error}); its rows hold what it measured"))
            }
            _ => Some(format!(
                "`linkperf {shown}` failed ({}){}",
                output.status,
                said.map(|line| format!(": {line}")).unwrap_or_default()
            )),
        };
        self.failures.extend(problem.clone());
        self.results.extend(result.clone());
        (result, problem)
    }

    /// The link options to add to a command: each one it does not give itself and accepts.
    fn link_options(&self, words: &[&str]) -> Vec<String> {
        let mut added: Vec<String> = Vec::new();
        for [flag, value] in &self.link {
            if words.contains(&flag.as_str()) {
                continue;
            }
            let candidate = words.iter().copied().chain(added.iter().map(String::as_str)).chain([flag.as_str(), value]);
            if profile::parses(candidate) {
                added.extend([flag.clone(), value.clone()]);
            }
        }
        added
    }
}

/// Runs a child with its stderr passed on to ours line by line; its output, and its last `error: ` line
/// (without the prefix), if any.
fn run_passing_stderr(mut command: Command) -> std::io::Result<(std::process::Output, Option<String>)> {
    use std::io::BufRead;
    let mut child = command.spawn()?;
    let stderr = child.stderr.take();
    let relay = std::thread::spawn(move || {
        let mut last_error = None;
        for line in stderr.into_iter().flat_map(|s| std::io::BufReader::new(s).lines().map_while(Result::ok)) {
            eprintln!("{line}");
            if let Some(error) = line.strip_prefix("error: ") {
                last_error = Some(error.to_string());
            }
        }
        last_error
    });
    let output = child.wait_with_output()?;
    let said = relay.join().unwrap_or(None);
    Ok((output, said))
}
