//! `qmesh-sim --trace LOG.swf.gz --policy easy`: replays a workload log
//! and prints what the schedule gave (see `qmesh_sim`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use qmesh_core::predict::Likeness;
use qmesh_sim::machine::{Alloc, Machine, Policy};
use qmesh_sim::metrics::{Metrics, measure};
use qmesh_sim::replay::{Options, Replay, replay_with_progress};
use qmesh_sim::sweep::{self, Pair};
use qmesh_sim::swf;

/// See Cargo.toml: the replay allocates and frees all the time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tells mimalloc to keep the memory it freed. By default it hands freed
/// pages back to the system after a second, and a replay, which frees
/// finished jobs by the thousand and submits new ones, then faulted them
/// in again, zeroed by the kernel two megabytes at a time (transparent
/// huge pages): a sixth of SDSC-BLUE's conservative replay. A replay
/// holds the memory of its largest moment; it is a short-lived process.
fn keep_freed_memory() {
    // `mi_option_purge_delay` in mimalloc.h's `mi_option_t` (between
    // `mi_option_eager_commit_delay`, 14, and `mi_option_use_numa_nodes`,
    // 16, which the bindings name); the bindings leave it out.
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: sets one of mimalloc's options, an integer it reads when it
    // decides whether to purge; -1 is valid (never purge).
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, -1) };
}

/// Replay a Standard Workload Format trace through qmesh's scheduler.
///
/// The machine is one flat node set of the trace's MaxProcs (or MaxNodes)
/// unless --nodes, --alloc with --dims, or --config say otherwise. Each job
/// asks for its allocated (else requested) processors and its requested
/// time (else its run time), and runs for its run time, cut at its
/// requested time.
#[derive(Parser, Debug)]
#[command(name = "qmesh-sim", version)]
struct Args {
    /// The trace (.swf, or .swf.gz as the archive distributes them).
    #[arg(long, value_name = "FILE", required_unless_present = "accounting")]
    trace: Option<PathBuf>,
    /// Write the PBS accounting log in --accounting DIR as a Standard
    /// Workload Format file ("-": standard output), and replay nothing.
    #[arg(long, value_name = "FILE.swf", requires = "accounting")]
    to_swf: Option<PathBuf>,
    /// A PBS accounting directory (qmeshd's STATE/server_priv/accounting,
    /// or any PBS server's), one file per day named YYYYMMDD. Without
    /// --trace or --to-swf: what-if, its jobs replayed with their real
    /// run times on this configuration (--config, --qmgr, --policy),
    /// beside what really happened.
    #[arg(long, value_name = "DIR", conflicts_with = "trace")]
    accounting: Option<PathBuf>,
    /// The first day of the accounting log to read (YYYY-MM-DD).
    #[arg(long, value_name = "DATE", requires = "accounting")]
    from: Option<chrono::NaiveDate>,
    /// The last day of the accounting log to read (YYYY-MM-DD).
    #[arg(long, value_name = "DATE", requires = "accounting")]
    to: Option<chrono::NaiveDate>,
    /// A qmeshd configuration file: replay on its node sets, node groups,
    /// queues and calendar. Each job goes to the queue of its trace's name
    /// if the file has it and it takes the job, else to the default queue.
    #[arg(long, value_name = "MACHINE.toml", conflicts_with_all = ["alloc", "dims", "nodes"])]
    config: Option<PathBuf>,
    /// The scheduling policy; `config` keeps the server attributes of
    /// --config (the default with --config; easy without).
    #[arg(long, value_enum)]
    policy: Option<Policy>,
    /// A qmgr command applied before the replay, e.g. "set server
    /// job_order = priority_aging, age_factor = 2" (repeatable).
    #[arg(long, value_name = "COMMAND")]
    qmgr: Vec<String>,
    /// How nodes are allocated: flat, m2db (a mesh), ep or nep (a torus).
    #[arg(long, value_enum)]
    alloc: Option<Alloc>,
    /// The mesh's or torus's dimensions, e.g. 16x25 or 2x2x2x4x4x8.
    #[arg(long, value_name = "AxBx...", value_delimiter = 'x')]
    dims: Vec<u32>,
    /// Nodes of a flat machine, in place of the trace header's size.
    #[arg(long)]
    nodes: Option<u32>,
    /// Replay only the jobs of this partition (SWF field 16), by number or
    /// by the header's name, e.g. batch.
    #[arg(long, value_name = "PARTITION")]
    partition: Option<String>,
    /// A job asking more wall time than its queue allows asks for the
    /// queue's maximum, and is killed there; without it, its queue refuses
    /// it (counted with the reason).
    #[arg(long)]
    cap_walltime: bool,
    /// Multiply each job's size by K (rounded up).
    #[arg(long, default_value_t = 1.0, value_name = "K")]
    size_scale: f64,
    /// Round each job's size up to a power of two.
    #[arg(long)]
    round_pow2: bool,
    /// Multiply run and requested times by C (offered load × C).
    #[arg(long, default_value_t = 1.0, value_name = "C")]
    load_scale: f64,
    /// Record what spwhen predicted for each job right after its
    /// submission, planning with requested wall times and with predicted
    /// run times, and report how close each came (two replans per job).
    #[arg(long)]
    predict: bool,
    /// Which earlier jobs of its user a job's run time is predicted from
    /// (--predict, --policy easy++): user (the last two, as Tsafrir et
    /// al.) or request (the last two of the same size and wall time when
    /// two are among the user's last eight, else the last two).
    #[arg(long, value_enum, default_value_t = LikeJobs::User)]
    like_jobs: LikeJobs,
    /// Submit job arrays: a user's consecutive jobs (in submission order)
    /// of one size, in one queue, running one program (SWF field 14; if
    /// unknown, asking the same time) become one array `-J 0-(k-1)`,
    /// submitted at the first one's submit time. Each sub-job runs its own
    /// job's run time, and its wait counts from the array's submission.
    /// The later jobs thus arrive earlier than in the trace: this measures
    /// what the scheduler's pass costs with huge arrays on a real log, not
    /// the log's schedule.
    #[arg(long, conflicts_with = "predict")]
    arrays: bool,
    /// Write the replay as a PBS accounting log in DIR (made if missing,
    /// no day's file written over): the Q, S and E records qmeshd would
    /// have written, one file per day of the calendar's zone, for qreport,
    /// tracejob and --to-swf.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["sweep", "arrays"])]
    write_accounting: Option<PathBuf>,
    /// Write one row per job (trace order): job, submit, start, end, nodes,
    /// queue, and with --predict the predicted starts (from wall times and
    /// from predicted run times).
    #[arg(long, value_name = "FILE.csv")]
    jobs_out: Option<PathBuf>,
    /// Replay at each load scale of START:END:STEP (e.g. load=0.2:2.0:0.05)
    /// under each of --pairs, on all cores; one CSV row per point.
    #[arg(long, value_name = "START:END:STEP")]
    sweep: Option<String>,
    /// The policy/allocator pairs of a sweep, e.g. fcfs/ep,fcfs/nep,easy/nep,easy/flat
    /// (default: --policy with --alloc).
    #[arg(long, value_delimiter = ',', value_name = "POLICY/ALLOC,...")]
    pairs: Vec<Pair>,
    /// Where the sweep's CSV goes (default: standard output).
    #[arg(long, value_name = "FILE.csv")]
    sweep_out: Option<PathBuf>,
    /// Draw the sweep: PREFIX-slowdown.svg/.png (mean bounded slowdown
    /// against utilization) and PREFIX-utilization.svg/.png (against load).
    #[arg(long, value_name = "PREFIX")]
    plot: Option<PathBuf>,
    /// Threads for a sweep (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Make the advance and standing reservations of FILE during the
    /// replay, one a line: SUBMIT START DURATION NODES [RRULE] [share=F]
    /// [set=NAME] (times in seconds after the trace's start or RFC 3339;
    /// share: of the jobs that could use an occurrence, those sent to its
    /// queue). Reports what they held and what their jobs used.
    #[arg(long, value_name = "FILE", requires = "trace")]
    reservations: Option<PathBuf>,
    /// What preemption would cost: send SHARE (0 to 1) of the trace's jobs
    /// to a queue `express` of priority 200 (at or above preempt_queue_prio,
    /// 150: express), on the default queue's node sets, whose jobs that
    /// cannot start preempt running jobs of the other queues as
    /// --preempt-order says. A job is express when the SplitMix64 hash of
    /// its job number (SWF field 1), over 2^64, is below SHARE: the same
    /// jobs in every replay, spread over the trace, and those of a smaller
    /// share among those of a larger one. Reports the express jobs' waits,
    /// the others', the preemptions by method and the work lost.
    #[arg(long, value_name = "SHARE", conflicts_with_all = ["arrays", "write_accounting"])]
    express: Option<f64>,
    /// The server's preempt_order: how a preempted job gives its nodes up,
    /// the first that can be done of S (suspend until its nodes are free
    /// again), C (checkpoint: never done), R (requeue, if rerunnable: every
    /// job unless --config sets default_rerunnable = false), D (delete),
    /// optionally in bands of wall time left ("SCR 80 SC 50 S").
    /// Default: the configuration's, SCR unless --config sets one.
    #[arg(long, value_name = "ORDER")]
    preempt_order: Option<String>,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

/// `--like-jobs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LikeJobs {
    User,
    Request,
}

fn main() -> ExitCode {
    keep_freed_memory();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qmesh-sim: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    if !(args.size_scale > 0.0 && args.load_scale > 0.0) {
        anyhow::bail!("--size-scale and --load-scale must be greater than 0");
    }
    if let Some(share) = args.express
        && !(0.0..=1.0).contains(&share)
    {
        anyhow::bail!("--express {share}: the share of jobs must be from 0 to 1");
    }
    if let Some(out) = &args.to_swf {
        let dir = args
            .accounting
            .as_deref()
            .unwrap_or(std::path::Path::new("."));
        let text = qmesh_sim::to_swf::from_accounting(dir, args.from, args.to)?;
        if out.as_os_str() == "-" {
            std::io::stdout().lock().write_all(text.as_bytes()).ok();
        } else {
            std::fs::write(out, text).with_context(|| format!("write {}", out.display()))?;
        }
        return Ok(());
    }
    let machine = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read configuration file {}", path.display()))?;
            Machine::site(&text, &path.display().to_string()).map_err(anyhow::Error::msg)?
        }
        None => single(&args, args.alloc)?,
    };
    let policy = args.policy.unwrap_or(match args.config {
        Some(_) => Policy::Config,
        None => Policy::Easy,
    });
    let reservations = match &args.reservations {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read reservations file {}", path.display()))?;
            qmesh_sim::reservations::parse(&text, &path.display().to_string())?
        }
        None => Vec::new(),
    };
    let options = Options {
        policy,
        machine,
        qmgr: args.qmgr.clone(),
        size_scale: args.size_scale,
        round_pow2: args.round_pow2,
        load_scale: args.load_scale,
        predict: args.predict,
        like_jobs: match args.like_jobs {
            LikeJobs::User => Likeness::User,
            LikeJobs::Request => Likeness::Request,
        },
        partition: args.partition.clone(),
        cap_walltime: args.cap_walltime,
        arrays: args.arrays,
        accounting: args.write_accounting.is_some(),
        reservations,
        express: args.express,
        preempt_order: args.preempt_order.clone(),
    };
    if let (None, Some(dir)) = (&args.trace, &args.accounting) {
        // What-if: the site's own history replayed on this configuration.
        let w = qmesh_sim::whatif::what_if(dir, args.from, args.to, &options)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&w)?);
        } else {
            print!("{}", qmesh_sim::whatif::table(&w));
        }
        return Ok(());
    }
    let Some(trace_path) = &args.trace else {
        anyhow::bail!(
            "give --trace FILE to replay, --accounting DIR for a what-if on the site's log, \
             or --to-swf FILE with --accounting DIR"
        );
    };
    let trace = swf::open(trace_path)?;
    if let Some(range) = &args.sweep {
        return run_sweep(&args, &trace, &options, range);
    }
    // A bar on a terminal; nothing when stderr is piped.
    let bar = std::io::stderr().is_terminal();
    let began = Instant::now();
    let result = replay_with_progress(&trace, &options, |done, all| {
        if bar {
            draw_bar(done, all, "jobs submitted");
        }
    })?;
    if bar {
        eprint!("\r{:70}\r", "");
    }
    let secs = began.elapsed().as_secs_f64();
    if let Some(path) = &args.jobs_out {
        write_jobs(path, &result, args.express.is_some())
            .with_context(|| format!("write {}", path.display()))?;
    }
    if let Some(dir) = &args.write_accounting {
        let files = qmesh_sim::accounting::write_log(dir, &result.accounting, result.zone)
            .map_err(anyhow::Error::msg)?;
        if bar {
            eprintln!(
                "wrote {} accounting records in {} files under {}",
                result.accounting.len(),
                files.len(),
                dir.display()
            );
        }
    }
    let m = measure(&result.records, result.nodes);
    let resv = args.reservations.is_some().then(|| {
        qmesh_sim::metrics::reservations(&result.reservations, &result.records, result.nodes)
    });
    let preemption = args
        .express
        .is_some()
        .then(|| qmesh_sim::metrics::preemption(&result.records, result.nodes));
    let rate = result.records.len() as f64 / secs.max(1e-9);
    if args.json {
        let mut doc = serde_json::json!({
            "trace": trace_path.display().to_string(),
            "config": args.config.as_ref().map(|p| p.display().to_string()),
            "policy": policy.as_str(),
            "alloc": args.alloc.map(Alloc::as_str),
            "dims": args.dims,
            "machine": options.machine.describe(),
            "nodes": result.nodes,
            "metrics": m,
            "skipped": result.skipped.len(),
            "skipped_jobs": result.skipped,
            "passes": result.passes,
            "passes_resumed": result.passes_resumed,
            "replay_seconds": secs,
            "jobs_per_second": rate,
        });
        if let Some(formed) = result.arrays {
            doc["arrays"] = serde_json::json!(formed);
        }
        if let Some(r) = &resv {
            doc["reservations"] = serde_json::json!(r);
        }
        if let Some(p) = &preemption {
            doc["preemption"] = serde_json::json!(p);
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    let mut out = String::new();
    out.push_str(&format!(
        "{} on {} nodes ({}), {}: {} jobs replayed, {} skipped\n",
        trace_path.display(),
        result.nodes,
        options.machine.describe(),
        policy.as_str(),
        m.jobs,
        result.skipped.len()
    ));
    if let Some(f) = result.arrays {
        out.push_str(&format!(
            "  arrays           {} formed of {} jobs, the largest of {} sub-jobs\n",
            f.arrays, f.jobs, f.largest
        ));
    }
    out.push_str(&report(&m));
    if let Some(r) = &resv {
        out.push_str(&reservations_report(r));
    }
    if let Some(p) = &preemption {
        out.push_str(&preemption_report(p));
    }
    // Per kind of reason, how many, and the first in full where it says
    // more (--json lists them all).
    let mut kinds: std::collections::BTreeMap<&str, (usize, &qmesh_sim::replay::Skipped)> =
        Default::default();
    for s in &result.skipped {
        kinds.entry(s.kind.as_str()).or_insert((0, s)).0 += 1;
    }
    for (kind, (count, first)) in kinds {
        out.push_str(&format!("  skipped: {count} ({kind})\n"));
        if first.why != kind {
            out.push_str(&format!("    e.g. job {}: {}\n", first.number, first.why));
        }
    }
    out.push_str(&format!(
        "  replayed in {secs:.2} s ({rate:.0} jobs/s, {} passes)\n",
        result.passes
    ));
    std::io::stdout().lock().write_all(out.as_bytes()).ok();
    Ok(())
}

/// How close spwhen's estimates from `from` came, as the report prints it.
fn predictions(from: &str, p: &qmesh_sim::metrics::Predictions) -> String {
    format!(
        "  spwhen at submit from {from}: {} jobs predicted, {} without: mean error {:.0} s \
         ({:+.0} s on average), {:.1} % within 10 min, {:.1} % within 10 % of their wait\n\
         \x20                  of the {} that waited: median error {:.0} s, {:.1} % within \
         10 % of their wait, {:.1} % within 1 hour, {:.1} % within 10 min\n",
        p.predicted,
        p.without,
        p.mean_abs_error,
        p.mean_error,
        p.within_10_min * 100.0,
        p.within_10_pct_of_wait * 100.0,
        p.waited,
        p.waited_median_abs_error,
        p.waited_within_10_pct_of_wait * 100.0,
        p.waited_within_1_hour * 100.0,
        p.waited_within_10_min * 100.0,
    )
}

/// The measures as the text report prints them, with the SDSC tables: per
/// queue (Table 5) and per request size (Table 3).
fn report(m: &Metrics) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "  utilization      {:.1} %   (offered load {:.1} %)\n",
        m.utilization * 100.0,
        m.offered_load * 100.0
    ));
    out.push_str(&format!("  makespan         {} s\n", m.makespan));
    out.push_str(&format!(
        "  wait             mean {:.0} s, median {:.0} s\n",
        m.mean_wait, m.median_wait
    ));
    out.push_str(&format!(
        "  bounded slowdown {:.2} (mean, 10 s floor)\n",
        m.mean_bounded_slowdown
    ));
    let estimates = [
        ("requested wall times", &m.predictions),
        ("predicted run times", &m.predictions_from_runs),
    ];
    for (from, p) in estimates {
        if let Some(p) = p {
            out.push_str(&predictions(from, p));
        }
    }
    let table = |out: &mut String, title: &str, rows: Vec<(String, &qmesh_sim::metrics::Group)>| {
        out.push_str(&format!(
            "  {title:<22} {:>7} {:>12} {:>10}\n",
            "jobs", "mean wait", "expansion"
        ));
        for (key, g) in rows {
            out.push_str(&format!(
                "    {key:<20} {:>7} {:>10.0} s {:>10.2}\n",
                g.jobs, g.mean_wait, g.expansion
            ));
        }
    };
    table(
        &mut out,
        "by queue",
        m.by_queue.iter().map(|(q, g)| (q.clone(), g)).collect(),
    );
    table(
        &mut out,
        "by nodes",
        m.by_size
            .iter()
            .map(|(&upper, g)| {
                let lower = upper / 2 + 1;
                let key = if lower >= upper {
                    upper.to_string()
                } else {
                    format!("{lower}-{upper}")
                };
                (key, g)
            })
            .collect(),
    );
    out
}

/// What the reservations held and cost, as the text report prints it.
fn reservations_report(r: &qmesh_sim::metrics::ResvMetrics) -> String {
    let mut out = format!(
        "  reservations     {} confirmed, {} refused\n",
        r.confirmed, r.refused
    );
    for o in &r.list {
        if let Some(why) = &o.refused {
            out.push_str(&format!("    line {}: refused: {why}\n", o.line));
        }
    }
    out.push_str(&format!(
        "  held by reservations: {:.1}% of capacity, {:.1}% of that used by their jobs\n",
        r.held_share * 100.0,
        r.used_share * 100.0
    ));
    out.push_str(&format!(
        "  their jobs       {} sent, {} ran (mean wait {:.0} s), {} left queued at their end\n",
        r.jobs, r.ran, r.mean_wait, r.deleted
    ));
    let o = &r.others;
    out.push_str(&format!(
        "  other jobs       {}: utilization {:.1} % ({:.1} % of the capacity not held), \
         wait mean {:.0} s, median {:.0} s, bounded slowdown {:.2}\n",
        o.jobs,
        o.utilization * 100.0,
        o.utilization_not_held * 100.0,
        o.mean_wait,
        o.median_wait,
        o.mean_bounded_slowdown
    ));
    out
}

/// What preemption cost, as the text report prints it.
fn preemption_report(p: &qmesh_sim::metrics::PreemptMetrics) -> String {
    let (x, o) = (&p.express, &p.others);
    let mut out = format!(
        "  express jobs     {}: wait mean {:.0} s, median {:.0} s\n",
        x.jobs, x.mean_wait, x.median_wait
    );
    out.push_str(&format!(
        "  other jobs       {}: wait mean {:.0} s, median {:.0} s\n",
        o.jobs, o.mean_wait, o.median_wait
    ));
    out.push_str(&format!(
        "  preempted        {} jobs: {} suspensions ({} s suspended in all), {} requeues, \
         {} deletions\n",
        p.jobs_preempted, p.suspended, p.suspended_seconds, p.requeued, p.deleted
    ));
    out.push_str(&format!(
        "  work lost        {:.0} node-s ({:.2} % of capacity): utilization {:.1} %, \
         {:.1} % kept\n",
        p.lost_node_seconds,
        p.lost_share * 100.0,
        p.utilization * 100.0,
        p.useful_utilization * 100.0
    ));
    out
}

/// The one-set machine of --alloc, --dims and --nodes.
fn single(args: &Args, alloc: Option<Alloc>) -> anyhow::Result<Machine> {
    let topology = alloc
        .unwrap_or_default()
        .topology(&args.dims)
        .map_err(anyhow::Error::msg)?;
    // A flat machine beside a mesh or torus has as many nodes (the seeds'
    // baseline).
    let nodes = args
        .nodes
        .or_else(|| (!args.dims.is_empty()).then(|| args.dims.iter().product::<u32>()));
    Ok(Machine::Single { topology, nodes })
}

/// `[#####     ] 120/400 what` over the line before.
fn draw_bar(done: usize, all: usize, what: &str) {
    let width = 40 * done / all.max(1);
    eprint!(
        "\r[{}{}] {done}/{all} {what}",
        "#".repeat(width),
        " ".repeat(40 - width)
    );
}

fn run_sweep(
    args: &Args,
    trace: &swf::Trace,
    options: &Options,
    range: &str,
) -> anyhow::Result<()> {
    let loads = sweep::parse_range(range).map_err(anyhow::Error::msg)?;
    let mut pairs = if args.pairs.is_empty() {
        vec![Pair {
            policy: options.policy,
            alloc: args.alloc,
        }]
    } else {
        args.pairs.clone()
    };
    for pair in &mut pairs {
        match (&args.config, pair.alloc) {
            (Some(_), Some(_)) => anyhow::bail!(
                "--pairs {pair}: with --config the node sets are the file's; \
                 write the policy alone (e.g. easy,fcfs)"
            ),
            (Some(_), None) => {}
            (None, alloc) => pair.alloc = Some(alloc.or(args.alloc).unwrap_or_default()),
        }
    }
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    // A bar on a terminal; nothing when stderr is piped.
    let bar = std::io::stderr().is_terminal();
    let began = Instant::now();
    let points = sweep::sweep(
        trace,
        options,
        &pairs,
        &loads,
        threads,
        |alloc| match &options.machine {
            Machine::Site { .. } => Ok(options.machine.clone()),
            Machine::Single { .. } => single(args, alloc).map_err(|e| e.to_string()),
        },
        |done, all| {
            if bar {
                draw_bar(done, all, "points");
            }
        },
    )
    .map_err(anyhow::Error::msg)?;
    if bar {
        eprintln!(" in {:.1} s", began.elapsed().as_secs_f64());
    }
    if let Some(prefix) = &args.plot {
        let name = args
            .trace
            .as_deref()
            .and_then(|t| t.file_name())
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let title = match (&args.config, args.dims.is_empty()) {
            (Some(config), _) => format!(
                "{name} on {}",
                config
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            ),
            (None, true) => name,
            (None, false) => format!(
                "{name} on {}",
                args.dims
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join("x")
            ),
        };
        for file in qmesh_sim::plot::figures(&points, prefix, &title)? {
            if bar {
                eprintln!("wrote {file}");
            }
        }
    }
    let csv = sweep::csv(&points);
    match &args.sweep_out {
        Some(path) => {
            std::fs::write(path, csv).with_context(|| format!("write {}", path.display()))?
        }
        None => {
            std::io::stdout().lock().write_all(csv.as_bytes()).ok();
        }
    }
    Ok(())
}

/// One row per job; with `preemption` (`--express`) also whether it was
/// express, its seconds suspended, its requeues and whether it was killed.
fn write_jobs(path: &std::path::Path, result: &Replay, preemption: bool) -> std::io::Result<()> {
    let predict = result.records.iter().any(|r| r.predicted.is_some());
    let mut out = String::from("job,submit,start,end,nodes,queue");
    if predict {
        out.push_str(",predicted,predicted_from_runs");
    }
    if preemption {
        out.push_str(",express,suspended,requeues,killed");
    }
    out.push('\n');
    for r in &result.records {
        out.push_str(&format!(
            "{},{},{},{},{},{}",
            r.number, r.submit, r.start, r.end, r.nodes, r.queue
        ));
        if predict {
            for p in [r.predicted, r.predicted_from_runs] {
                out.push(',');
                if let Some(p) = p {
                    out.push_str(&p.to_string());
                }
            }
        }
        if preemption {
            out.push_str(&format!(
                ",{},{},{},{}",
                u8::from(r.express),
                r.suspended,
                r.requeues,
                u8::from(r.killed)
            ));
        }
        out.push('\n');
    }
    std::fs::write(path, out)
}
