//! Slurm's values in qmesh's terms: times, sizes, GPUs, mail types,
//! dependencies, arrays and the resources a job asks for. Each refusal
//! says what to write instead.

use chrono::{DateTime, Duration, Local, NaiveDate, NaiveTime, TimeZone};

use super::args::Args;

/// `-t`: seconds, or `None` for UNLIMITED/INFINITE.
pub fn time_limit(text: &str) -> Result<Option<u64>, String> {
    let t = text.trim();
    if ["unlimited", "infinite", "-1"].contains(&t.to_ascii_lowercase().as_str()) {
        return Ok(None);
    }
    let bad = || {
        format!(
            "--time={t}: write MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, \
             DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS"
        )
    };
    let num = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    let (days, rest) = match t.split_once('-') {
        Some((d, rest)) => (Some(num(d)?), rest),
        None => (None, t),
    };
    let parts: Vec<u64> = rest.split(':').map(num).collect::<Result<_, _>>()?;
    let secs = match (days, parts.as_slice()) {
        (None, [m]) => m * 60,
        (None, [m, s]) => m * 60 + s,
        (None, [h, m, s]) => h * 3600 + m * 60 + s,
        (Some(d), [h]) => d * 86400 + h * 3600,
        (Some(d), [h, m]) => d * 86400 + h * 3600 + m * 60,
        (Some(d), [h, m, s]) => d * 86400 + h * 3600 + m * 60 + s,
        _ => return Err(bad()),
    };
    Ok(Some(secs))
}

/// `--mem`/`--mem-per-cpu`: megabytes (Slurm's unit when none is given).
pub fn megabytes(option: &str, text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{option}={t}: write a size such as 4000, 4G or 512M"))?;
    let factor = match unit.to_ascii_uppercase().as_str() {
        "" | "M" | "MB" => 1,
        "K" | "KB" => return Ok(n.div_ceil(1024)),
        "G" | "GB" => 1024,
        "T" | "TB" => 1024 * 1024,
        _ => return Err(format!("{option}={t}: the unit is K, M, G or T")),
    };
    Ok(n * factor)
}

/// A GPU count from `--gres=gpu[:TYPE][:N]`, `--gpus[-per-node]=[TYPE:]N`.
fn gpu_count(option: &str, text: &str) -> Result<u32, String> {
    let words: Vec<&str> = text.trim().split(':').collect();
    let last = words.last().copied().unwrap_or("");
    match last.parse::<u32>() {
        Ok(n) => Ok(n),
        // gpu or gpu:TYPE: one.
        Err(_) if option == "--gres" || words.len() == 1 => Ok(1),
        Err(_) => Err(format!("{option}={text}: write [TYPE:]N, e.g. 2 or a100:2")),
    }
}

/// GPUs per node asked by `--gres`, `--gpus-per-node` or `--gpus` over
/// `nodes` nodes.
pub fn gpus_per_node(args: &Args, nodes: u32) -> Result<Option<u32>, String> {
    if let Some(gres) = &args.gres {
        let mut n = None;
        for item in gres.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if item.starts_with("gpu") {
                n = Some(gpu_count("--gres", item)?);
            } else {
                return Err(format!(
                    "--gres={gres}: qmesh knows gres gpu only; other resources are \
                     `qsub -l NAME=VALUE` site resources"
                ));
            }
        }
        return Ok(n);
    }
    if let Some(g) = &args.gpus_per_node {
        return gpu_count("--gpus-per-node", g).map(Some);
    }
    if let Some(g) = &args.gpus {
        let total = gpu_count("--gpus", g)?;
        return Ok(Some(total.div_ceil(nodes.max(1))));
    }
    Ok(None)
}

/// `--mail-type` as PBS's mail points (`-m`).
pub fn mail_points(text: &str) -> Result<String, String> {
    let mut points = String::new();
    for word in text.split(',').map(|w| w.trim().to_ascii_uppercase()) {
        let add = match word.as_str() {
            "NONE" => "n",
            "BEGIN" => "b",
            "END" => "e",
            "FAIL" | "REQUEUE" | "INVALID_DEPEND" | "STAGE_OUT" => "a",
            "ALL" => "abe",
            w if w.starts_with("TIME_LIMIT") || w == "ARRAY_TASKS" => "",
            _ => {
                return Err(format!(
                    "--mail-type={text}: \"{word}\" is not a mail type; write NONE, BEGIN, END, \
                     FAIL, REQUEUE or ALL"
                ));
            }
        };
        for c in add.chars() {
            if !points.contains(c) {
                points.push(c);
            }
        }
    }
    if points.contains('n') && points.len() > 1 {
        points = points.replace('n', "");
    }
    Ok(points)
}

/// `-d`: Slurm's dependency list as qmesh's `depend=`, which reads the
/// same words (`after`, `afterok`, `afternotok`, `afterany`, `aftercorr`,
/// `singleton`, `?` for any of, `+MINUTES` after a start); the daemon
/// checks the rest. Slurm's array task ids (`12_3`) are refused here with
/// what to write.
pub fn dependency(text: &str) -> Result<String, String> {
    let t = text.trim();
    for item in t.split([',', '?']).map(str::trim).filter(|i| !i.is_empty()) {
        let mut words = item.split(':');
        let kind = words.next().unwrap_or_default();
        match kind {
            "afterburstbuffer" => {
                return Err(format!(
                    "--dependency={t}: qmesh has no burst buffers; write afterany:JOBID"
                ));
            }
            "expand" => {
                return Err(format!(
                    "--dependency={t}: qmesh does not grow jobs; submit the whole job at once"
                ));
            }
            _ => {}
        }
        if let Some(task) = words.find(|w| w.contains('_')) {
            return Err(format!(
                "--dependency={t}: {task} names one task of an array; depend on the whole \
                 array (its job id), or use aftercorr:JOBID to match task to task"
            ));
        }
    }
    Ok(t.to_string())
}

/// `--array` as qmesh's array option and text: Torque's `-t` for lists,
/// PBS Pro's `-J` for a stepped range.
pub fn array(text: &str) -> (&'static str, String) {
    let t = text.trim().to_string();
    if t.contains(':') && !t.contains(',') {
        ("J", t)
    } else {
        ("t", t)
    }
}

/// `--begin`: Slurm's forms, in the local time zone.
pub fn begin(text: &str, now: DateTime<Local>) -> Result<DateTime<Local>, String> {
    let t = text.trim().to_ascii_lowercase();
    let bad = || {
        format!(
            "--begin={text}: write now+N[seconds|minutes|hours|days|weeks], HH:MM[:SS], \
             YYYY-MM-DD[THH:MM[:SS]], midnight, noon, teatime, today or tomorrow"
        )
    };
    if let Some(rest) = t.strip_prefix("now") {
        let rest = rest.trim_start_matches('+');
        if rest.is_empty() {
            return Ok(now);
        }
        let split = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: i64 = rest[..split].parse().map_err(|_| bad())?;
        let secs = match &rest[split..] {
            "" | "s" | "sec" | "secs" | "second" | "seconds" => n,
            "m" | "min" | "mins" | "minute" | "minutes" => n * 60,
            "h" | "hour" | "hours" => n * 3600,
            "d" | "day" | "days" => n * 86400,
            "w" | "week" | "weeks" => n * 7 * 86400,
            _ => return Err(bad()),
        };
        return Ok(now + Duration::seconds(secs));
    }
    let at = |time: NaiveTime, day: NaiveDate| {
        Local
            .from_local_datetime(&day.and_time(time))
            .earliest()
            .ok_or_else(bad)
    };
    let today = now.date_naive();
    let next = |time: NaiveTime| -> Result<DateTime<Local>, String> {
        let t = at(time, today)?;
        if t > now {
            Ok(t)
        } else {
            at(time, today.succ_opt().ok_or_else(bad)?)
        }
    };
    let hm = |h, m| NaiveTime::from_hms_opt(h, m, 0).ok_or_else(bad);
    match t.as_str() {
        "today" => return at(hm(0, 0)?, today),
        "tomorrow" | "midnight" => return at(hm(0, 0)?, today.succ_opt().ok_or_else(bad)?),
        "noon" => return next(hm(12, 0)?),
        "fika" => return next(hm(15, 0)?),
        "teatime" => return next(hm(16, 0)?),
        _ => {}
    }
    let time_of = |s: &str| {
        NaiveTime::parse_from_str(s, "%H:%M:%S")
            .or_else(|_| NaiveTime::parse_from_str(s, "%H:%M"))
            .map_err(|_| bad())
    };
    if let Some((date, time)) = t.split_once('t') {
        let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| bad())?;
        return at(time_of(time)?, day);
    }
    if let Ok(day) = NaiveDate::parse_from_str(&t, "%Y-%m-%d") {
        return at(hm(0, 0)?, day);
    }
    next(time_of(&t)?)
}

/// The resources the options ask for, as qsub's `-l` would: the layout
/// (`select=N:ncpus=C:mpiprocs=T[:mem=][:ngpus=]`, or `nodes=N`), the
/// wall time, features, exclusivity, nodes excluded, QOS. Also the node
/// count.
pub fn resources(args: &Args) -> Result<(Vec<(String, String)>, u32), String> {
    let mut out: Vec<(String, String)> = Vec::new();
    let nodes_given = match &args.nodes {
        Some(n) => {
            let min = n.split('-').next().unwrap_or("").trim();
            Some(
                min.parse::<u32>()
                    .ok()
                    .filter(|&m| m > 0)
                    .ok_or_else(|| format!("--nodes={n}: write a count of nodes, N or MIN-MAX"))?,
            )
        }
        None => None,
    };
    // -w: these nodes, each a chunk pinned to it (PBS Pro's vnode=), and
    // as many more as -N asks.
    let named = match &args.nodelist {
        Some(list) => {
            qmesh_core::job::slurm::expanded(list).map_err(|e| format!("--nodelist={list}: {e}"))?
        }
        None => Vec::new(),
    };
    let nodes = match (nodes_given, args.ntasks, args.ntasks_per_node) {
        (Some(n), _, _) => n,
        (None, Some(t), Some(p)) if p > 0 => t.div_ceil(p),
        _ => 1,
    }
    .max(named.len() as u32);
    let per_node = args
        .ntasks_per_node
        .or_else(|| args.ntasks.map(|t| t.div_ceil(nodes)));
    let cpus = match (per_node, args.cpus_per_task) {
        (Some(t), c) => Some(t * c.unwrap_or(1)),
        (None, Some(c)) => Some(c),
        (None, None) => None,
    };
    let mem_mb = match (&args.mem, &args.mem_per_cpu) {
        (Some(_), Some(_)) => {
            return Err("--mem and --mem-per-cpu: give one of them".into());
        }
        (Some(m), None) => Some(megabytes("--mem", m)?).filter(|&m| m > 0),
        (None, Some(m)) => Some(megabytes("--mem-per-cpu", m)? * u64::from(cpus.unwrap_or(1))),
        (None, None) => None,
    };
    let gpus = gpus_per_node(args, nodes)?;
    let mut chunk = nodes.to_string();
    if let Some(c) = cpus {
        chunk.push_str(&format!(":ncpus={c}"));
    }
    if let Some(t) = per_node {
        chunk.push_str(&format!(":mpiprocs={t}"));
    }
    if let Some(m) = mem_mb {
        chunk.push_str(&format!(":mem={m}mb"));
    }
    if let Some(g) = gpus.filter(|&g| g > 0) {
        chunk.push_str(&format!(":ngpus={g}"));
    }
    if !named.is_empty() {
        let body = chunk
            .split_once(':')
            .map(|(_, b)| format!(":{b}"))
            .unwrap_or_default();
        let mut chunks: Vec<String> = named.iter().map(|n| format!("1{body}:vnode={n}")).collect();
        let rest = nodes - named.len() as u32;
        if rest > 0 {
            chunks.push(format!("{rest}{body}"));
        }
        out.push(("select".into(), chunks.join("+")));
    } else if chunk.contains(':') {
        out.push(("select".into(), chunk));
    } else {
        out.push(("nodes".into(), nodes.to_string()));
    }
    if let Some(t) = &args.time
        && let Some(secs) = time_limit(t)?
    {
        out.push(("walltime".into(), secs.to_string()));
    }
    if let Some(c) = &args.constraint {
        if c.contains('|') || c.contains('[') || c.contains('*') {
            return Err(format!(
                "--constraint={c}: qmesh takes features that must all hold (A&B); \
                 alternatives (|) and counts (*N) are not supported"
            ));
        }
        let features: Vec<&str> = c.split(['&', ',']).map(str::trim).collect();
        out.push(("feature".into(), features.join(":")));
    }
    if args.exclusive.is_some() {
        out.push(("naccesspolicy".into(), "singlejob".into()));
    }
    // -x: Moab's and Torque's excludenodes= (nodes or hosts).
    if let Some(list) = &args.exclude {
        let names =
            qmesh_core::job::slurm::expanded(list).map_err(|e| format!("--exclude={list}: {e}"))?;
        out.push(("excludenodes".into(), names.join(":")));
    }
    if let Some(q) = &args.qos {
        out.push(("qos".into(), q.clone()));
    }
    Ok((out, nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slurm_time_form() {
        for (text, secs) in [
            ("30", Some(1800)),
            ("30:15", Some(1815)),
            ("2:00:00", Some(7200)),
            ("1-0", Some(86400)),
            ("1-2:30", Some(95400)),
            ("1-02:30:05", Some(95405)),
            ("UNLIMITED", None),
            ("infinite", None),
        ] {
            assert_eq!(time_limit(text).unwrap(), secs, "{text}");
        }
        for bad in ["", "1:2:3:4", "x", "1-2:3:4:5"] {
            assert!(time_limit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_are_megabytes_by_default() {
        assert_eq!(megabytes("--mem", "4000").unwrap(), 4000);
        assert_eq!(megabytes("--mem", "4G").unwrap(), 4096);
        assert_eq!(megabytes("--mem", "2048K").unwrap(), 2);
        assert!(megabytes("--mem", "4X").is_err());
    }

    fn args(line: &str) -> Args {
        use clap::Parser;
        Args::try_parse_from(std::iter::once("sbatch").chain(line.split_whitespace())).unwrap()
    }

    #[test]
    fn tasks_cpus_memory_and_gpus_make_one_chunk_per_node() {
        let (r, n) = resources(&args(
            "-N 2 --ntasks-per-node=4 -c 2 --mem=8G --gres=gpu:2 -t 10",
        ))
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            r,
            [
                (
                    "select".into(),
                    "2:ncpus=8:mpiprocs=4:mem=8192mb:ngpus=2".into()
                ),
                ("walltime".into(), "600".into())
            ]
        );
        let (r, n) = resources(&args("-n 8 --ntasks-per-node 4 --mem-per-cpu=1000")).unwrap();
        assert_eq!(n, 2);
        assert_eq!(r[0].1, "2:ncpus=4:mpiprocs=4:mem=4000mb");
        let (r, _) = resources(&args("-N 3")).unwrap();
        assert_eq!(r[0], ("nodes".into(), "3".into()));
        let (r, _) = resources(&args("-N 2 --gpus 3")).unwrap();
        assert_eq!(r[0].1, "2:ngpus=2");
        let (r, _) = resources(&args("-C fat&ib --exclusive -q high")).unwrap();
        assert!(r.contains(&("feature".into(), "fat:ib".into())), "{r:?}");
        assert!(r.contains(&("naccesspolicy".into(), "singlejob".into())));
        assert!(r.contains(&("qos".into(), "high".into())));
        assert!(
            resources(&args("-C a|b"))
                .unwrap_err()
                .contains("alternatives")
        );
    }

    #[test]
    fn a_nodelist_pins_a_chunk_to_each_node() {
        let (l, nodes) = resources(&args("-w n[1-2] -N 3 --ntasks-per-node=2")).unwrap();
        assert_eq!(nodes, 3);
        assert_eq!(
            l[0],
            (
                "select".to_string(),
                "1:ncpus=2:mpiprocs=2:vnode=n1+1:ncpus=2:mpiprocs=2:vnode=n2+1:ncpus=2:mpiprocs=2"
                    .to_string()
            )
        );
        let (l, nodes) = resources(&args("--nodelist=a1,a2")).unwrap();
        assert_eq!(nodes, 2, "-w without -N: as many nodes as named");
        assert_eq!(l[0].1, "1:vnode=a1+1:vnode=a2");
        assert!(
            resources(&args("-w n[1-"))
                .unwrap_err()
                .starts_with("--nodelist=n[1-:")
        );
    }

    #[test]
    fn mail_dependencies_and_arrays_in_pbs_terms() {
        assert_eq!(mail_points("BEGIN,END").unwrap(), "be");
        assert_eq!(mail_points("ALL").unwrap(), "abe");
        assert_eq!(mail_points("NONE").unwrap(), "n");
        assert_eq!(
            dependency("afterok:12:13,afterany:14").unwrap(),
            "afterok:12:13,afterany:14"
        );
        assert_eq!(
            dependency("afterok:1?afterany:2").unwrap(),
            "afterok:1?afterany:2"
        );
        assert_eq!(dependency(" singleton ").unwrap(), "singleton");
        assert!(
            dependency("afterok:12_3")
                .unwrap_err()
                .contains("aftercorr")
        );
        assert!(dependency("expand:12").unwrap_err().contains("grow"));
        assert_eq!(array("0-15%4"), ("t", "0-15%4".into()));
        assert_eq!(array("0-20:2"), ("J", "0-20:2".into()));
    }

    #[test]
    fn begin_times_in_slurms_forms() {
        let now = Local.with_ymd_and_hms(2026, 3, 10, 14, 0, 0).unwrap();
        assert_eq!(begin("now+60", now).unwrap(), now + Duration::seconds(60));
        assert_eq!(begin("now+2hours", now).unwrap(), now + Duration::hours(2));
        let at = |d, h, m| Local.with_ymd_and_hms(2026, 3, d, h, m, 0).unwrap();
        assert_eq!(begin("16:00", now).unwrap(), at(10, 16, 0));
        assert_eq!(
            begin("10:00", now).unwrap(),
            at(11, 10, 0),
            "past: tomorrow"
        );
        assert_eq!(begin("2026-03-12T08:30", now).unwrap(), at(12, 8, 30));
        assert_eq!(begin("tomorrow", now).unwrap(), at(11, 0, 0));
        assert_eq!(begin("teatime", now).unwrap(), at(10, 16, 0));
        assert!(begin("whenever", now).is_err());
    }
}
