"""dask-jobqueue's SLURMCluster against a real qmesh daemon.

Run by tests/e2e/slurm_tools.rs with qmesh's sbatch, squeue and scancel
first on PATH and QMESH_SOCKET naming the daemon. SLURMCluster writes its
own Slurm script (#SBATCH -J dask-worker, -e/-o DIR/dask-worker-%J.err,
-n 1, --cpus-per-task=1, --mem=954M, -t 00:10:00), submits it with
sbatch, reads the id from "Submitted batch job N", and ends the workers
with scancel when the cluster closes. Prints one line per fact the test
checks: SCRIPT <the script>, JOB <id> for each worker job, RESULT <sum>,
then CLOSED.
"""

import sys

from dask.distributed import Client
from dask_jobqueue import SLURMCluster


def main(log_directory: str) -> None:
    cluster = SLURMCluster(
        cores=1,
        memory="1GB",
        processes=1,
        walltime="00:10:00",
        queue="debug",
        log_directory=log_directory,
        scheduler_options={"host": "127.0.0.1"},
        worker_extra_args=["--host", "127.0.0.1"],
        # The worker job ends itself if the scheduler goes away.
        death_timeout=60,
    )
    print("SCRIPT", repr(cluster.job_script()), flush=True)
    cluster.scale(jobs=2)
    client = Client(cluster)
    client.wait_for_workers(2, timeout=180)
    for job_id in [job.job_id for job in cluster.workers.values()]:
        print("JOB", job_id, flush=True)
    futures = client.map(lambda x: x * x, range(100))
    total = client.submit(sum, futures).result(timeout=120)
    print("RESULT", total, flush=True)
    # Closing the cluster runs scancel on every worker job.
    client.close()
    cluster.close()
    print("CLOSED", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
