"""Parsl's PBSProProvider, TorqueProvider and SlurmProvider against a real
qmesh daemon.

Run by tests/e2e/workflow_tools.rs as `parsl_providers.py pbspro|torque
WORKDIR` with qsub, qstat and qdel of the build first on PATH, and by
tests/e2e/slurm_tools.rs as `parsl_providers.py slurm WORKDIR` with sbatch,
squeue, sacct and scancel; QMESH_SOCKET names the daemon. Each provider
writes its own script (#PBS -S /bin/bash, #PBS -m n, select= or
nodes=...:ppn=...; #SBATCH --partition, --nodes, --exclusive...), submits
it, and reads states with its own parsing: PBSProProvider with
`qstat -x -f -F json ID...`, TorqueProvider from the fifth column of plain
`qstat ID...`, SlurmProvider with `sacct -X --noheader
--format=jobid,state --job ID,...` once `sacct -X` has answered.

Two parts:
1. The provider alone: a job watched from submission to completion, and a
   job watched until it runs, then cancelled (qdel, scancel) and watched
   until Parsl sees it end (COMPLETED for PBS, CANCELLED for Slurm). Prints `STATES <name> <state> <state>...`, the
   distinct states in the order Parsl saw them.
2. A Parsl workflow: a HighThroughputExecutor whose block is a PBS job;
   apps run on the worker that job starts; the DataFlowKernel's cleanup
   cancels the block. Prints `RESULT <sum>` and `BLOCKS <job id>...`.
"""

import os
import sys
import time

import parsl
from parsl.app.app import python_app
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.jobs.states import JobState
from parsl.launchers import SimpleLauncher
from parsl.providers import PBSProProvider, SlurmProvider, TorqueProvider


def provider_of(kind: str, **kwargs):
    if kind == "pbspro":
        return PBSProProvider(launcher=SimpleLauncher(), cpus_per_node=1, **kwargs)
    if kind == "slurm":
        return SlurmProvider(
            launcher=SimpleLauncher(), partition="debug", exclusive=False, **kwargs
        )
    return TorqueProvider(launcher=SimpleLauncher(), **kwargs)


def watch(provider, job_id, until, timeout=120.0):
    """Polls the provider until its state for job_id is in `until`;
    returns the distinct states seen, in order."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = provider.status([job_id])[0].state
        if not seen or seen[-1] != state:
            seen.append(state)
        if state in until:
            return seen
        time.sleep(0.2)
    raise SystemExit(f"job {job_id}: no state in {until} after {timeout}s; saw {seen}")


def show(name, seen):
    distinct = [s for i, s in enumerate(seen) if i == 0 or seen[i - 1] != s]
    print("STATES", name, " ".join(s.name for s in distinct), flush=True)


def provider_alone(kind: str, workdir: str) -> None:
    provider = provider_of(kind, walltime="00:05:00")
    provider.script_dir = os.path.join(workdir, f"{kind}-scripts")
    os.makedirs(provider.script_dir, exist_ok=True)

    # A job that runs until it is let go, so that its running is seen.
    go = os.path.join(workdir, f"{kind}-go")
    done = provider.submit(
        f"echo hello from $PBS_JOBID $SLURM_JOB_ID; while [ ! -e {go} ]; do sleep 0.1; done", 1
    )
    print("JOB done", done, flush=True)
    seen = watch(provider, done, {JobState.RUNNING})
    open(go, "w").close()
    seen += watch(provider, done, {JobState.COMPLETED})
    show("done", seen)

    long = provider.submit("sleep 600", 1)
    print("JOB cancelled", long, flush=True)
    seen = watch(provider, long, {JobState.RUNNING})
    print("CANCEL", provider.cancel([long]), flush=True)
    seen += watch(provider, long, {JobState.COMPLETED, JobState.CANCELLED})
    show("cancelled", seen)


def workflow(kind: str, workdir: str) -> None:
    bin_dir = os.path.dirname(sys.executable)
    provider = provider_of(
        kind,
        nodes_per_block=1,
        init_blocks=1,
        min_blocks=0,
        max_blocks=1,
        walltime="00:10:00",
        worker_init=f"export PATH={bin_dir}:$PATH",
    )
    config = Config(
        executors=[
            HighThroughputExecutor(
                label=f"htex_{kind}",
                address="127.0.0.1",
                max_workers_per_node=1,
                provider=provider,
            )
        ],
        run_dir=os.path.join(workdir, f"{kind}-runinfo"),
        strategy="none",
    )
    dfk = parsl.load(config)

    @python_app
    def square(x):
        return x * x

    total = sum(f.result(timeout=180) for f in [square(i) for i in range(20)])
    print("RESULT", total, flush=True)
    print("BLOCKS", " ".join(provider.resources.keys()), flush=True)
    dfk.cleanup()
    print("CLEANED", flush=True)


if __name__ == "__main__":
    kind, workdir = sys.argv[1], sys.argv[2]
    provider_alone(kind, workdir)
    workflow(kind, workdir)
