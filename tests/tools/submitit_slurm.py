"""submitit's Slurm executor against a real qmesh daemon.

Run by tests/e2e/slurm_tools.rs as `submitit_slurm.py FOLDER` with qmesh's
sbatch, srun, sacct and scancel first on PATH and QMESH_SOCKET naming the
daemon. `AutoExecutor(cluster="slurm")` writes its own batch script
(#SBATCH --job-name, --output/--error FOLDER/%j_0_log.out, --nodes,
--ntasks-per-node, --cpus-per-task, --time, --signal=USR2@90,
--open-mode=append, --wckey) whose one command is
`srun --unbuffered --output ... python -u -m submitit.core._submit FOLDER`;
it submits it with `sbatch --parsable`, follows it with
`sacct -o JobID,State,NodeList --parsable2 -j ID`, and reads the pickled
result the job wrote. Prints JOB <id>, STATE <state>, RESULT <value>,
then for a job cancelled while it runs, CANCELLED <id> <state>.
"""

import sys
import time

import submitit


def add(a: int, b: int) -> int:
    import os

    # What submitit's own JobEnvironment reads inside the task.
    env = submitit.JobEnvironment()
    return a + b + env.global_rank + int(os.environ["SLURM_NTASKS"]) - 1


def sleeper() -> None:
    time.sleep(600)


def main(folder: str) -> None:
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
    executor.update_parameters(
        timeout_min=5, slurm_partition="debug", cpus_per_task=1, name="submitit-add"
    )
    job = executor.submit(add, 2, 3)
    print("JOB", job.job_id, flush=True)
    print("RESULT", job.result(), flush=True)
    # The result is written before the job ends: wait for sacct to say
    # it has (submitit's own state, read with sacct).
    deadline = time.monotonic() + 60
    while job_state(job) in ("RUNNING", "PENDING", "COMPLETING", "UNKNOWN"):
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job.job_id} not done: {job.state}")
        time.sleep(0.2)
    print("STATE", job.state, flush=True)

    long = executor.submit(sleeper)
    deadline = time.monotonic() + 120
    while job_state(long) != "RUNNING":
        if time.monotonic() > deadline:
            raise SystemExit(f"job {long.job_id} did not run: {long.state}")
        time.sleep(0.2)
    long.cancel()
    deadline = time.monotonic() + 60
    while not long.done(force_check=True):
        if time.monotonic() > deadline:
            raise SystemExit(f"job {long.job_id} not done after scancel: {long.state}")
        time.sleep(0.2)
    print("CANCELLED", long.job_id, long.state, flush=True)


def job_state(job) -> str:
    job.watcher.update()
    return job.state


if __name__ == "__main__":
    main(sys.argv[1])
