//! `bal-replay project`'s output as a report: its tables (printed by `project` itself too) and
//! charts of measured, predicted and projected throughput, each line marked as what it is.

use crate::research;
use bal_replay_engine::IoDesign;
use bal_replay_model::{ProjectionReport, TARGET_ERROR, Verdict};
use std::fmt::Write;

fn percent(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// A check's on-demand reads, measured against predicted ("-" where the run read nothing on
/// demand or had no profile).
fn reads(c: &bal_replay_model::Check) -> String {
    if c.measured.on_demand_reads > 0.0 {
        format!(
            "{:.0} / {:.0} ({})",
            c.measured.on_demand_reads,
            c.predicted.on_demand_reads,
            percent(c.predicted.on_demand_reads / c.measured.on_demand_reads - 1.0)
        )
    } else {
        "-".into()
    }
}

/// One of a check's figures in seconds, measured / predicted; "-" where both are zero (the
/// workers' run delay of a profile recorded before it was, on enough cores).
fn measured_over_predicted(
    c: &bal_replay_model::Check,
    figure: fn(&bal_replay_model::Measured) -> f64,
) -> String {
    let (m, p) = (figure(&c.measured), figure(&c.predicted));
    if m > 0.0 || p > 0.0 {
        format!("{m:.2} / {p:.2}")
    } else {
        "-".into()
    }
}

/// The design's name in tables and legends.
pub(crate) fn design_name(design: IoDesign) -> &'static str {
    match design {
        IoDesign::Full => "full BAL",
        IoDesign::FullVerify => "full BAL, verifying",
        IoDesign::Batched => "batched I/O",
        IoDesign::Parallel => "parallel I/O",
        IoDesign::Hybrid => "hybrid",
    }
}

/// The projection's tables in Markdown: calibrations, predicted against measured, and the
/// projection onto the target machine next to the research's published figures.
pub fn render_projection_markdown(report: &ProjectionReport) -> String {
    let mut md = String::new();
    measured_on(&mut md, report);
    calibrations_table(&mut md, report);
    if !report.checks.is_empty() {
        // With more than one input, each check names the one its run came from.
        let inputs = report.inputs.len() > 1;
        checks_table(&mut md, report, inputs);
        checks_summary(&mut md, report, inputs);
        if inputs {
            across_inputs(&mut md, report);
        }
    }
    projections_table(&mut md, report);
    md
}

/// The machine the runs were measured on (and the calibrations' legend), and how its workers
/// were started.
fn measured_on(md: &mut String, report: &ProjectionReport) {
    let m = &report.measured_on;
    let _ = writeln!(
        md,
        "Measured on {} cores; disk: {}.\n\nCalibrations (one fitted factor k per one-worker \
         run: a key read waits k x device reads per key x the disk's latency at its depth; \
         \"unexplained\" is what the fit leaves, simulated / measured - 1):\n",
        m.cores, m.disk
    );
    match &m.worker_start {
        Some(cost) => {
            let _ = writeln!(
                md,
                "Workers are started as the engine starts them: one thread starts a batch's \
                 workers one after another, sharing the cores with those already started, at \
                 what starting one cost on this machine ({:.1} µs of CPU to start, {:.1} µs of the \
                 worker's own, {:.1} µs to join; {} threads x {} rounds).\n",
                cost.spawn_ns / 1e3,
                cost.thread_ns / 1e3,
                cost.join_ns / 1e3,
                cost.workers,
                cost.rounds
            );
        }
        None => {
            let _ = writeln!(
                md,
                "Workers all start at once, for nothing (what starting one costs was not \
                 measured).\n"
            );
        }
    }
}

/// One row per calibration, and what a calibration of one run leaves unseen.
fn calibrations_table(md: &mut String, report: &ProjectionReport) {
    let _ = writeln!(
        md,
        "| design | batch | workers | device reads per key | k | fit | unexplained | measured MGas/s | runs (spread) |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for c in &report.calibrations {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.2} | {:.3} | {} | {} | {:.1} | {} |",
            c.design,
            c.batch,
            c.workers,
            c.device_reads_per_key,
            c.calibration.k,
            c.calibration.fit.name(),
            percent(c.calibration.residual),
            c.measured_mgas_per_s,
            runs_and_spread(c)
        );
    }
    if report.calibrations.iter().any(|c| c.runs < 2) {
        let _ = writeln!(
            md,
            "\nA calibration of one run carries that run's noise into every check of its group, \
             unseen: `bench --repeat 3` calibrates on the median run and shows the spread here."
        );
    }
}

/// The inputs, where more than one, and one row per check: predicted against measured.
fn checks_table(md: &mut String, report: &ProjectionReport, inputs: bool) {
    if inputs {
        let _ = writeln!(
            md,
            "\nInputs (each check's run came from one; each calibration from the first that has it):\n"
        );
        for (n, input) in report.inputs.iter().enumerate() {
            let _ = writeln!(md, "{}. {input}", n + 1);
        }
    }
    let _ = write!(
        md,
        "\nPredicted against measured (runs the calibration did not see; error = predicted / \
         measured - 1; \"cores\" is what the run had: the machine's, less what other \
         processes and interrupts used meanwhile):\n\n{}",
        if inputs { "| input " } else { "" }
    );
    let _ = writeln!(
        md,
        "| design | batch | workers | cores | \
         measured MGas/s | predicted MGas/s | error | measured longest txs (s) | predicted \
         (s) | error | on-demand reads, measured / predicted | task CPU, measured / \
         predicted | workers' run delay (s), measured / predicted | error at the run's task \
         CPU | error between the runs' extremes | verdict |\n{}| --- | --- | --- | --- | --- \
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        if inputs { "| --- " } else { "" }
    );
    for c in &report.checks {
        if inputs {
            let _ = write!(md, "| {} ", input_number(c));
        }
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.2} | {:.1} | {:.1} | {} | {:.3} | {:.3} | {} | {} | {} | {} | {} | {} | {} |",
            c.design,
            c.batch,
            c.workers,
            c.cores,
            c.measured.mgas_per_s(c.gas),
            c.predicted.mgas_per_s(c.gas),
            percent(c.throughput_error()),
            c.measured.longest_txs_s,
            c.predicted.longest_txs_s,
            percent(c.longest_error()),
            reads(c),
            c.task_cpu_ratio()
                .map_or("-".to_string(), |r| format!("{r:.2}x")),
            measured_over_predicted(c, |m| m.worker_run_delay_s),
            c.error_at_run_task_cpu.map_or("-".to_string(), percent),
            c.error_range()
                .map_or("-".to_string(), |(low, high)| format!(
                    "{} to {}",
                    percent(low),
                    percent(high)
                )),
            c.verdict().name(),
        );
    }
}

/// The checks summed up: how many are within 15%, which are inside their runs' noise, which
/// miss, and how many are within 15% at their run's own task CPU.
fn checks_summary(md: &mut String, report: &ProjectionReport, inputs: bool) {
    let errors: Vec<f64> = report
        .checks
        .iter()
        .map(|c| c.throughput_error().abs())
        .collect();
    let within = report
        .checks
        .iter()
        .filter(|c| c.verdict() == Verdict::Within)
        .count();
    let worst = errors.iter().copied().fold(0.0, f64::max);
    let _ = writeln!(
        md,
        "\nThroughput: {within} of {} predictions within 15% of the measured run; the worst \
         is off by {:.1}%.",
        errors.len(),
        worst * 100.0
    );
    let (noise, missed) = (
        checks_of_verdict(report, Verdict::InsideNoise, inputs),
        checks_of_verdict(report, Verdict::Miss, inputs),
    );
    if !noise.is_empty() {
        let _ = writeln!(
            md,
            "\nInside the runs' noise ({}): off by more than 15% at the medians, within 15% \
             between some pair of the repeats' extremes (the prediction from the \
             calibration's slowest or fastest repeat against the checked configuration's \
             fastest or slowest), so these repeats cannot tell the error from the host: {}.",
            noise.len(),
            noise.join("; ")
        );
    }
    if !missed.is_empty() {
        misses(md, report, &missed);
    }
    let at_run_cpu: Vec<f64> = report
        .checks
        .iter()
        .filter_map(|c| c.error_at_run_task_cpu)
        .collect();
    if !at_run_cpu.is_empty() {
        let _ = writeln!(
            md,
            "\nAt each run's own task CPU (not a prediction: it takes the held-out run's CPU; \
             it separates the tasks' CPU changing with the workers from the schedule's other \
             terms): {} of {} within 15%.",
            at_run_cpu
                .iter()
                .filter(|e| e.abs() <= TARGET_ERROR)
                .count(),
            at_run_cpu.len()
        );
    }
}

/// Each check of `verdict` named: its configuration, its input where there are several, and
/// its error.
fn checks_of_verdict(report: &ProjectionReport, verdict: Verdict, inputs: bool) -> Vec<String> {
    report
        .checks
        .iter()
        .filter(|c| c.verdict() == verdict)
        .map(|c| {
            format!(
                "{} at batch {}, {} workers{} ({})",
                c.design,
                c.batch,
                c.workers,
                if inputs {
                    format!(", input {}", input_number(c))
                } else {
                    String::new()
                },
                percent(c.throughput_error())
            )
        })
        .collect()
}

/// The misses (`missed`, named), and whether their runs' noise was seen.
fn misses(md: &mut String, report: &ProjectionReport, missed: &[String]) {
    let unrepeated = report
        .checks
        .iter()
        .filter(|c| c.verdict() == Verdict::Miss && c.error_range().is_none())
        .count();
    let _ = writeln!(
        md,
        "\nMisses ({}): off by more than 15% {}: {}.",
        missed.len(),
        if unrepeated == missed.len() {
            "(single runs: `bench --repeat 3` shows whether an error is the host's noise)"
                .to_string()
        } else if unrepeated > 0 {
            format!(
                "between every pair of the repeats' extremes ({unrepeated} of them single \
                 runs, whose noise is unseen)"
            )
        } else {
            "between every pair of the repeats' extremes".to_string()
        },
        missed.join("; ")
    );
}

/// The projection onto the target machine, where there is one, next to the research's
/// published figures, and projected parallel I/O over full BAL.
fn projections_table(md: &mut String, report: &ProjectionReport) {
    let Some(t) = &report.target else {
        return;
    };
    let _ = writeln!(
        md,
        "\nProjection (the model's output, not a measurement) onto {} cores at {:.2}x the \
         profiled machine's core speed; disk: {}{}{}:\n\n| design | batch | threads | \
         projected MGas/s | projected longest txs (s) | research, published (MGas/s) |\n| \
         --- | --- | --- | --- | --- | --- |",
        t.cores,
        t.cpu_speed,
        t.disk,
        t.read_cpu_ns.map_or(String::new(), |ns| format!(
            "; a key read costs {:.1} µs of CPU",
            ns / 1e3
        )),
        t.readers
            .map_or(String::new(), |n| format!("; {n} prefetch readers")),
    );
    for p in &report.projections {
        let published = research::throughput(p.design, p.batch, p.workers)
            .map_or("-".to_string(), |v| format!("{v:.0}"));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.1} | {:.3} | {published} |",
            p.design,
            p.batch,
            p.workers,
            p.predicted.mgas_per_s(p.gas),
            p.predicted.longest_txs_s,
        );
    }
    let ratios = parallel_over_full(report);
    if !ratios.is_empty() {
        let _ = writeln!(
            md,
            "\nProjected parallel I/O / full BAL (the research: 0.78 at 16 threads, batch \
             50):\n\n| batch | threads | parallel / full |\n| --- | --- | --- |"
        );
        for (batch, workers, ratio) in ratios {
            let _ = writeln!(md, "| {batch} | {workers} | {ratio:.2} |");
        }
    }
}

/// Projected parallel I/O over full BAL throughput, per batch size and worker count.
pub fn parallel_over_full(report: &ProjectionReport) -> Vec<(usize, usize, f64)> {
    let mgas = |design, batch, workers| {
        report
            .projections
            .iter()
            .find(|p| p.design == design && p.batch == batch && p.workers == workers)
            .map(|p| p.predicted.mgas_per_s(p.gas))
    };
    report
        .projections
        .iter()
        .filter(|p| p.design == IoDesign::Parallel)
        .filter_map(|p| {
            let full = mgas(IoDesign::Full, p.batch, p.workers).filter(|f| *f > 0.0)?;
            Some((p.batch, p.workers, p.predicted.mgas_per_s(p.gas) / full))
        })
        .collect()
}

/// Each configuration checked in more than one input, its error in each: an error that repeats
/// from one bench to the next is the model's, one that moves is the host's.
fn across_inputs(md: &mut String, report: &ProjectionReport) {
    let n = report.inputs.len();
    let mut rows: Vec<(&bal_replay_model::Check, Vec<Option<f64>>)> = Vec::new();
    for c in &report.checks {
        let same = |r: &&bal_replay_model::Check| {
            (r.design, r.batch, r.workers) == (c.design, c.batch, c.workers)
        };
        let i = match rows.iter().position(|(r, _)| same(r)) {
            Some(i) => i,
            None => {
                rows.push((c, vec![None; n]));
                rows.len() - 1
            }
        };
        if let Some(slot) = c.input.and_then(|input| rows[i].1.get_mut(input)) {
            *slot = Some(c.throughput_error());
        }
    }
    rows.retain(|(_, errors)| errors.iter().flatten().count() > 1);
    if rows.is_empty() {
        return;
    }
    let numbers: Vec<String> = (1..=n).map(|i| format!("input {i}")).collect();
    let _ = writeln!(
        md,
        "\nThe same configuration in each input (throughput error; an error that repeats from \
         one bench to the next is the model's, one that moves is the host's):\n\n| design | \
         batch | workers | {} | largest less smallest |\n|{}",
        numbers.join(" | "),
        " --- |".repeat(n + 4)
    );
    let mut held = 0;
    for (c, errors) in &rows {
        let known: Vec<f64> = errors.iter().flatten().copied().collect();
        let moved = known.iter().copied().fold(f64::MIN, f64::max)
            - known.iter().copied().fold(f64::MAX, f64::min);
        held += usize::from(known.iter().all(|e| e.abs() <= TARGET_ERROR));
        let cells: Vec<String> = errors
            .iter()
            .map(|e| e.map_or("-".into(), percent))
            .collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.1} points |",
            c.design,
            c.batch,
            c.workers,
            cells.join(" | "),
            moved * 100.0
        );
    }
    let _ = writeln!(
        md,
        "\n{held} of {} configurations within 15% in every input.",
        rows.len()
    );
}

/// The 1-based number of the input a check's run came from, as the inputs are listed ("?" for a
/// check that does not say).
fn input_number(c: &bal_replay_model::Check) -> String {
    c.input.map_or("?".into(), |i| (i + 1).to_string())
}

/// "3 (10.6%)": the runs made of a calibration's configuration, and their spread.
fn runs_and_spread(c: &bal_replay_model::CalibrationRow) -> String {
    match c.spread {
        Some(spread) => format!("{} ({:.1}%)", c.runs, spread * 100.0),
        None => c.runs.to_string(),
    }
}
