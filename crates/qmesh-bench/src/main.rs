//! qmesh-bench: the daemon's throughput and start-up, measured on the real
//! binaries. See docs/PERFORMANCE.md for how to run it and the figures.
//!
//! * `submit`: durable submissions per second over the Unix socket, from N
//!   concurrent clients (each its own connection, each waiting for the
//!   daemon's answer, which comes only once the job is on disk).
//! * `array-submit`: one job array of many sub-jobs: time to its durable
//!   reply, and what it adds to the store.
//! * `churn`: many one-second jobs through 16 agents: starts and ends per
//!   second, decision-to-exec latency (`--array`: as one job array).
//! * `floor`: churn's job script started with no scheduler (fork, ids,
//!   exec): the starts per second churn is held against.
//! * `restart`: time from starting qmeshd to its READY=1 with J jobs in the
//!   store (the store is filled directly, then the daemon is started).
//! * `relay`: Status and Submit, qstat and qsub, from a login node (through
//!   a submit-only agent's relay) against the daemon's own host.
//! * `ha`: the queue on a local 3-member etcd: durable submissions per
//!   second, failover time after a kill -9 of the leader, and a takeover
//!   with many jobs stored (docs/HA.md).
//! * `qsub`: `true` jobs through the real qsub from shell-like loops, on
//!   qmeshd's default configuration: jobs/s and CPU per job (any build's
//!   binaries, `--bindir`, to compare builds).
//! * `load`: 1,000 concurrent qstat callers and 16 submitters for 30 s,
//!   with clients that stop reading: latencies, errors, the daemon's RSS.
//! * `agents`: thousands of simulated hosts, each its own TLS session:
//!   qmeshd's CPU per heartbeat, a job across every host's start, the
//!   agents' return after a restart.

mod agents;
mod alloc;
mod array_submit;
mod churn;
mod cpu;
mod daemon;
mod disk;
mod floor;
mod ha;
mod load;
mod pass;
mod pass_arrays;
mod qsub;
mod relay;
mod restart;
mod store_churn;
mod submit;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "qmesh-bench", version)]
struct Args {
    /// The qmeshd binary (default: next to qmesh-bench).
    #[arg(long, global = true)]
    qmeshd: Option<PathBuf>,
    /// Print results as JSON lines.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// The queue on etcd (docs/HA.md): submissions per second, failover
    /// time, a takeover with many jobs stored. Needs etcd (etcd-server).
    Ha {
        /// Concurrent clients for the submission rate.
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// Jobs submitted for the rate.
        #[arg(long, default_value_t = 20_000)]
        jobs: usize,
        /// Failovers timed (the median is reported).
        #[arg(long, default_value_t = 5)]
        failovers: usize,
        /// Jobs in the store for the takeover (0: not measured).
        #[arg(long, default_value_t = 100_000)]
        stored: usize,
    },
    /// Durable submissions per second.
    Submit {
        /// Concurrent clients.
        #[arg(long, default_value_t = 16)]
        clients: usize,
        /// Jobs in all.
        #[arg(long, default_value_t = 20_000)]
        jobs: usize,
        /// Use a running daemon at this socket instead of starting one.
        #[arg(long)]
        socket: Option<PathBuf>,
        /// How many times to measure (the median is reported).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// An executable made a queuejob hook before measuring (its
        /// content is imported as qmgr's import hook does).
        #[arg(long)]
        hook: Option<PathBuf>,
        /// The hook is persistent (one process, a line per submission).
        #[arg(long, requires = "hook")]
        persistent: bool,
    },
    /// One job array of many sub-jobs (qsub -J 0-N): time to its durable
    /// reply, and the store's growth.
    ArraySubmit {
        /// Sub-jobs in the array (the server takes at most 100,000).
        #[arg(long, default_value_t = 100_000)]
        tasks: u32,
        /// How many times to measure, each with a fresh daemon.
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Start-up time with many jobs in the store.
    Restart {
        #[arg(long, default_value_t = 100_000)]
        jobs: u64,
        /// How many starts to time (the median is reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Also an accounting log of the jobs' Q records, all recent (the
        /// start checks it against the store).
        #[arg(long)]
        accounting: bool,
        /// Records left out of that log, as a crash leaves them.
        #[arg(long, default_value_t = 0, requires = "accounting")]
        missing: u64,
    },
    /// The store's size on disk while jobs flow through it (created,
    /// started, ended, expired from history), against the live data.
    StoreChurn {
        #[arg(long, default_value_t = 1_000_000)]
        jobs: u64,
        /// Ended jobs kept (the history) before they are removed.
        #[arg(long, default_value_t = 20_000)]
        history: usize,
        /// Jobs per group commit.
        #[arg(long, default_value_t = 100)]
        batch: usize,
    },
    /// The disk's flush latency (4 KiB write + fdatasync).
    Disk {
        #[arg(long, default_value_t = 200)]
        flushes: usize,
    },
    /// One scheduling pass, EASY and conservative, at growing queue lengths.
    Pass {
        /// Nodes, each running a one-node job.
        #[arg(long, default_value_t = 10_000)]
        nodes: usize,
        /// Queue lengths to measure.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
        queued: Vec<usize>,
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// The queue follows the calendar: periods, a priority per period,
        /// a node group per period, and jobs requeued at period ends (the
        /// pass then checks each job against its sets' cuts).
        #[arg(long)]
        calendar: bool,
        /// Instead of --queued: a queue of ARRAYSxTASKS job arrays (e.g.
        /// 1000x1000) against ARRAYS plain jobs of the same sizes and wall
        /// times, passes alternated.
        #[arg(long, value_parser = pass_arrays::parse_shape)]
        arrays: Option<pass_arrays::Shape>,
    },
    /// Many short jobs through many agents (TCP, one process per host):
    /// starts and ends per second, decision-to-exec latency.
    Churn {
        #[arg(long, default_value_t = 10_000)]
        jobs: usize,
        #[arg(long, default_value_t = 16)]
        agents: usize,
        /// Nodes in all, shared out among the agents' hosts.
        #[arg(long, default_value_t = 4096)]
        nodes: usize,
        /// Each job's run time, in seconds.
        #[arg(long, default_value_t = 1.0)]
        secs: f64,
        /// The agents' log level (their logs are kept when a run fails).
        #[arg(long, default_value = "warn")]
        agent_log_level: String,
        /// qmeshd's log level; the figures need at least info.
        #[arg(long, default_value = "info")]
        daemon_log_level: String,
        /// Where the run's spools, store and job output go (default: the
        /// temporary directory). The file system matters: see PERFORMANCE.md.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Submit this many jobs per second with scheduling on, instead of
        /// all at once before it is switched on: latency below saturation.
        #[arg(long)]
        rate: Option<f64>,
        /// The agents exec each shepherd instead of forking it from their
        /// zygote (qmesh-agent --exec-shepherds): to compare the two.
        #[arg(long)]
        exec_shepherds: bool,
        /// The agents run jobs without cgroups (qmesh-agent --cgroups
        /// off): what containment costs.
        #[arg(long)]
        uncontained: bool,
        /// Keep the run's logs, spools and job output (a failed run's are
        /// always kept).
        #[arg(long)]
        keep: bool,
        /// Submit the jobs as one job array (qsub -J 0-N-1) instead of N
        /// plain jobs (a burst only).
        #[arg(long, conflicts_with = "rate")]
        array: bool,
        /// Wait for the ends by counting them in qmeshd's log instead of
        /// listing the jobs every 50 ms; listing 10,000 plain jobs costs
        /// the daemon far more than listing one array, so use this to
        /// compare the two.
        #[arg(long)]
        watch_log: bool,
    },
    /// Churn's job script started with no scheduler at all: a fork, the
    /// owner's ids, exec; the starts per second churn is held against.
    Floor {
        #[arg(long, default_value_t = 4000)]
        jobs: usize,
        /// Each job's run time, in seconds.
        #[arg(long, default_value_t = 1.0)]
        secs: f64,
        /// Threads forking at once [default: one per core].
        #[arg(long)]
        forkers: Option<usize>,
        /// The jobs' owner [default: who runs the bench].
        #[arg(long)]
        user: Option<String>,
        /// Where the jobs' output goes (default: the temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// `true` jobs through the real qsub from N loops at once, on qmeshd's
    /// embedded default configuration: jobs/s from the first submission
    /// to the last end, and CPU per job of qmeshd, its agent and zygote.
    Qsub {
        #[arg(long, default_value_t = 1000)]
        jobs: usize,
        #[arg(long, default_value_t = 8)]
        loops: usize,
        /// The directory of qsub and qstat (and, without --qmeshd, of
        /// qmeshd and qmesh-agent): a build's binaries.
        #[arg(long)]
        bindir: Option<PathBuf>,
        /// Where the state and the jobs' output go (default: the
        /// temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Latency from a login node (qmesh-agent --submit-only relaying over
    /// TCP) against the daemon's own host: Status and Submit RPCs, and the
    /// qstat and qsub -h commands.
    Relay {
        /// Calls of each RPC per socket [default: 2000 Status, 500 Submit
        /// (each Submit waits for the store's flush)].
        #[arg(long)]
        samples: Option<usize>,
        /// Runs of qstat and of qsub -h per socket.
        #[arg(long, default_value_t = 200)]
        command_samples: usize,
    },
    /// Many qstat callers and submitters at once, and clients that stop
    /// reading: latency percentiles, errors (expected none), the daemon's
    /// memory every second, and a probe job a second through the pass.
    Load {
        /// Concurrent qstat callers (tokio tasks, one connection each).
        #[arg(long, default_value_t = 1000)]
        qstat: usize,
        /// Concurrent submitters (held jobs, durable replies).
        #[arg(long, default_value_t = 16)]
        submitters: usize,
        /// How long the load lasts.
        #[arg(long, default_value_t = 30)]
        secs: u64,
        /// Held jobs queued first, so that a listing has real size.
        #[arg(long, default_value_t = 2000)]
        preload: usize,
        /// Connections that ask for every job and never read the answer.
        #[arg(long, default_value_t = 8)]
        slow_readers: usize,
        /// The callers ask for every attribute, as `qstat -f` (default:
        /// plain qstat's table).
        #[arg(long)]
        full: bool,
        /// Each submitter deletes the job it submitted once it is
        /// acknowledged, so the queue stays at its preloaded size (a
        /// site's steady state): a listing keeps the same size however
        /// fast submissions go. Only the submissions are timed.
        #[arg(long)]
        steady: bool,
        /// The niceness of the qstat callers' threads: they stand for
        /// other hosts' processes (0 to run them at the daemon's).
        #[arg(long, default_value_t = 19)]
        callers_nice: i32,
    },
    /// Thousands of hosts: simulated agents in this process, each its own
    /// TLS connection and session. qmeshd's CPU per heartbeat, the start
    /// of a job across every host, reattaching after a restart.
    Agents {
        /// Hosts simulated (one node each).
        #[arg(long, default_value_t = 5000)]
        hosts: usize,
        /// The daemon's heartbeat_secs [default: the daemon's, 10].
        #[arg(long)]
        heartbeat_secs: Option<u32>,
        /// Seconds of steady heartbeats the CPU figure is taken over.
        #[arg(long, default_value_t = 60)]
        duration: u64,
        /// Jobs across every host, one after another (the median is
        /// reported).
        #[arg(long, default_value_t = 5)]
        wide_runs: usize,
        /// How long each of those jobs runs, in seconds.
        #[arg(long, default_value_t = 1.0)]
        job_secs: f64,
        /// Restarts of qmeshd timed (SIGKILL, then started on the same
        /// store).
        #[arg(long, default_value_t = 3)]
        restarts: usize,
        /// qmeshd's log level.
        #[arg(long, default_value = "info")]
        daemon_log_level: String,
        /// The agents ping idle connections every 3 s, as agents that know
        /// several daemons (HA) do, not every 60 s as a sole daemon's.
        #[arg(long)]
        failover_keepalive: bool,
    },
    /// Allocate+free pairs per second for each topology's allocator.
    Alloc {
        #[arg(long, default_value_t = 1_000_000)]
        pairs: usize,
    },
    /// The figures of docs/PERFORMANCE.md: the disk, submit with 1 and 16
    /// clients, restart with 100,000 jobs.
    All,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Only the daemon benchmarks need qmeshd.
    let qmeshd = || daemon::find_qmeshd(args.qmeshd.as_deref());
    let result = match &args.what {
        What::Pass {
            nodes,
            queued,
            runs,
            calendar,
            arrays,
        } => match arrays {
            Some(shape) => pass_arrays::run(*nodes, *shape, *runs, *calendar),
            None => pass::run(*nodes, queued, *runs, *calendar),
        }
        .map(|r| vec![r]),
        What::ArraySubmit { tasks, runs } => {
            qmeshd().and_then(|q| array_submit::run(&q, *tasks, *runs).map(|r| vec![r]))
        }
        What::Submit {
            clients,
            jobs,
            socket,
            runs,
            hook,
            persistent,
        } => qmeshd().and_then(|q| {
            let hook = hook
                .as_ref()
                .map(|p| {
                    anyhow::Context::with_context(std::fs::read(p), || {
                        format!("read {}", p.display())
                    })
                })
                .transpose()?;
            submit::run_hooked(
                &q,
                (*clients, *jobs, *runs),
                socket.as_deref(),
                hook.as_deref().map(|h| (h, *persistent)),
            )
            .map(|r| vec![r])
        }),
        What::Ha {
            clients,
            jobs,
            failovers,
            stored,
        } => qmeshd().and_then(|q| {
            let run = ha::Run {
                clients: *clients,
                jobs: *jobs,
                failovers: *failovers,
                stored: *stored,
            };
            ha::run(&q, &run)
        }),
        What::Restart {
            jobs,
            runs,
            accounting,
            missing,
        } => qmeshd()
            .and_then(|q| restart::run(&q, *jobs, *runs, *accounting, *missing).map(|r| vec![r])),
        What::Disk { flushes } => disk::run(*flushes).map(|r| vec![r]),
        What::StoreChurn {
            jobs,
            history,
            batch,
        } => store_churn::run(*jobs, *history, (*batch).max(1)).map(|r| vec![r]),
        What::Churn {
            jobs,
            agents,
            nodes,
            secs,
            agent_log_level,
            daemon_log_level,
            dir,
            rate,
            exec_shepherds,
            uncontained,
            keep,
            array,
            watch_log,
        } => qmeshd().and_then(|q| {
            let run = churn::Run {
                jobs: *jobs,
                agents: *agents,
                nodes: *nodes,
                secs: *secs,
                agent_log_level,
                daemon_log_level,
                dir: dir.as_deref(),
                rate: *rate,
                exec_shepherds: *exec_shepherds,
                uncontained: *uncontained,
                keep: *keep,
                array: *array,
                watch_log: *watch_log,
            };
            churn::run(&q, &run).map(|r| vec![r])
        }),
        What::Floor {
            jobs,
            secs,
            forkers,
            user,
            dir,
        } => floor::run(&floor::Run {
            jobs: *jobs,
            secs: *secs,
            forkers: *forkers,
            user: user.as_deref(),
            dir: dir.as_deref(),
        })
        .map(|r| vec![r]),
        What::Qsub {
            jobs,
            loops,
            bindir,
            dir,
        } => {
            let qmeshd = match (&args.qmeshd, bindir) {
                (None, Some(b)) => Ok(b.join("qmeshd")),
                _ => qmeshd(),
            };
            qmeshd.and_then(|q| {
                let run = qsub::Run {
                    jobs: *jobs,
                    loops: *loops,
                    bindir: bindir.as_deref(),
                    dir: dir.as_deref(),
                };
                qsub::run(&q, &run).map(|r| vec![r])
            })
        }
        What::Relay {
            samples,
            command_samples,
        } => qmeshd().and_then(|q| {
            let run = relay::Run {
                status_samples: samples.unwrap_or(2000),
                submit_samples: samples.unwrap_or(500),
                command_samples: *command_samples,
            };
            relay::run(&q, &run)
        }),
        What::Load {
            qstat,
            submitters,
            secs,
            preload,
            slow_readers,
            full,
            steady,
            callers_nice,
        } => qmeshd().and_then(|q| {
            let run = load::Run {
                qstat: *qstat,
                submitters: *submitters,
                secs: *secs,
                preload: *preload,
                slow_readers: *slow_readers,
                full: *full,
                steady: *steady,
                callers_nice: *callers_nice,
            };
            load::run(&q, &run)
        }),
        What::Agents {
            hosts,
            heartbeat_secs,
            duration,
            wide_runs,
            job_secs,
            restarts,
            daemon_log_level,
            failover_keepalive,
        } => qmeshd().and_then(|q| {
            let run = agents::Run {
                hosts: *hosts,
                heartbeat_secs: *heartbeat_secs,
                duration: std::time::Duration::from_secs(*duration),
                wide_runs: *wide_runs,
                job_secs: *job_secs,
                daemon_log_level,
                restarts: *restarts,
                failover_keepalive: *failover_keepalive,
            };
            agents::run(&q, &run).map(|r| vec![r])
        }),
        What::Alloc { pairs } => alloc::run(*pairs).map(|r| vec![r]),
        What::All => qmeshd().and_then(|q| {
            Ok(vec![
                disk::run(200)?,
                submit::run(&q, 1, 5_000, 5, None)?,
                submit::run(&q, 16, 20_000, 5, None)?,
                restart::run(&q, 100_000, 3, false, 0)?,
                pass::run(10_000, &[1_000, 10_000, 100_000], 5, false)?,
                alloc::run(1_000_000)?,
            ])
        }),
    };
    finish(result, args.json)
}

fn finish(result: anyhow::Result<Vec<Report>>, json: bool) -> ExitCode {
    match result {
        Ok(results) => {
            for r in results {
                if json {
                    println!("{}", r.json);
                } else {
                    println!("{}", r.text);
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("qmesh-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// One measurement, for people and for machines.
pub struct Report {
    pub text: String,
    pub json: serde_json::Value,
}
