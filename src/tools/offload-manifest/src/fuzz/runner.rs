//! Many mutants through the device pass, on several threads: [`run`] counts their outcomes
//! into a [`Report`] and saves the defects; [`render`] writes the report as text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::device::{DevicePass, KernelChange, Outcome};
use super::mutate::{Mutation, mutant};

/// The numbers of a run.
#[derive(Default, Debug)]
pub struct Report {
    /// How many mutants had each outcome.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Per mutation kind: how many mutants applied it, and the outcomes of those.
    pub by_mutation: BTreeMap<Mutation, BTreeMap<Outcome, u64>>,
    /// The indices of the mutants that were defects (sorted when the run ends).
    pub defects: Vec<u64>,
    /// The accepted mutants whose image was checked, by how their kernels compare with the
    /// seed's: each mutant's index and mutations.
    pub accepted: BTreeMap<KernelChange, Vec<(u64, Vec<Mutation>)>>,
}

impl Report {
    /// Counts mutant `index`, made by `mutations`, whose outcome is `outcome`; `kernels` are
    /// its image's, when the image was checked, and are compared with `seed_kernels`.
    fn record(
        &mut self,
        index: u64,
        mutations: Vec<Mutation>,
        outcome: Outcome,
        kernels: Option<BTreeSet<String>>,
        seed_kernels: &BTreeSet<String>,
    ) {
        *self.outcomes.entry(outcome).or_default() += 1;
        let mut kinds = mutations.clone();
        kinds.sort();
        kinds.dedup();
        for m in kinds {
            *self.by_mutation.entry(m).or_default().entry(outcome).or_default() += 1;
        }
        if outcome.is_defect() {
            self.defects.push(index);
        }
        if let (Outcome::Accepted, Some(kernels)) = (outcome, kernels) {
            let change = if kernels == *seed_kernels {
                KernelChange::Same
            } else if kernels.is_subset(seed_kernels) {
                KernelChange::Fewer
            } else {
                KernelChange::Renamed
            };
            self.accepted.entry(change).or_default().push((index, mutations));
        }
    }
}

/// Runs mutants `first..first + count` of `seed_manifest` with `seed` through `pass`, on `jobs`
/// threads, each in its own folder under `work`. Defects are saved as
/// `<work>/defects/<index>.json` with `<index>.stderr`.
pub fn run(
    pass: &DevicePass,
    seed_kernels: &BTreeSet<String>,
    seed_manifest: &Value,
    seed: u64,
    first: u64,
    count: u64,
    jobs: usize,
    work: &Path,
) -> std::io::Result<Report> {
    let next = AtomicU64::new(first);
    let report = Mutex::new(Report::default());
    let done = AtomicU64::new(0);
    let defects = work.join("defects");
    std::fs::create_dir_all(&defects)?;
    std::thread::scope(|scope| -> std::io::Result<()> {
        let mut workers = Vec::new();
        for job in 0..jobs.max(1) {
            let dir = work.join(format!("job{job}"));
            std::fs::create_dir_all(&dir)?;
            let (next, report, done, defects) = (&next, &report, &done, &defects);
            workers.push(scope.spawn(move || -> std::io::Result<()> {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= first + count {
                        return Ok(());
                    }
                    let (text, mutations) = mutant(seed_manifest, seed, index);
                    let (outcome, stderr, kernels) = pass.run(&dir, &text)?;
                    if outcome.is_defect() {
                        std::fs::write(defects.join(format!("{index}.json")), &text)?;
                        std::fs::write(
                            defects.join(format!("{index}.stderr")),
                            format!("{outcome:?} after {mutations:?}\n{stderr}"),
                        )?;
                    }
                    let mut report = report.lock().unwrap();
                    report.record(index, mutations, outcome, kernels, seed_kernels);
                    let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if finished % 500 == 0 {
                        eprintln!(
                            "fuzz: {finished}/{count} mutants, {} defects",
                            report.defects.len()
                        );
                    }
                }
            }));
        }
        for worker in workers {
            worker.join().unwrap()?;
        }
        Ok(())
    })?;
    let mut report = report.into_inner().unwrap();
    report.defects.sort();
    report.accepted.values_mut().for_each(|mutants| mutants.sort());
    Ok(report)
}

/// The report as text: totals, then one line per mutation kind.
pub fn render(report: &Report, seed: u64, first: u64, count: u64) -> String {
    let line = |outcomes: &BTreeMap<Outcome, u64>| {
        outcomes.iter().map(|(o, n)| format!("{o:?} {n}")).collect::<Vec<_>>().join(", ")
    };
    let mut out = format!(
        "fuzz: seed {seed}, mutants {first}..{}: {}\n",
        first + count,
        line(&report.outcomes)
    );
    for (mutation, outcomes) in &report.by_mutation {
        out.push_str(&format!("  {mutation:?}: {}\n", line(outcomes)));
    }
    for (change, mutants) in &report.accepted {
        let why = match change {
            KernelChange::Same => "the seed's kernels: nothing the image depends on changed",
            KernelChange::Fewer => "fewer kernels: the mutant lists fewer",
            KernelChange::Renamed => "kernels of other names: the mutant names them so",
        };
        let list: Vec<String> =
            mutants.iter().map(|(index, mutations)| format!("{index} {mutations:?}")).collect();
        out.push_str(&format!(
            "fuzz: accepted, image linked, {why} ({}): {}\n",
            mutants.len(),
            list.join(", ")
        ));
    }
    if report.defects.is_empty() {
        out.push_str("fuzz: no defects\n");
    } else {
        out.push_str(&format!(
            "fuzz: {} defects, mutants {:?}\n",
            report.defects.len(),
            report.defects
        ));
    }
    out
}
