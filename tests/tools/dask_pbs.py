"""dask-jobqueue's PBSCluster against a real qmesh daemon.

Run by tests/e2e/workflow_tools.rs with qsub, qstat and qdel of the build
first on PATH and QMESH_SOCKET naming the daemon. PBSCluster writes its own
PBS script (#PBS -l select=1:ncpus=1:mem=954MB, #PBS -e DIR/, #PBS -o DIR/),
submits it with qsub, and ends the workers with qdel when the cluster
closes. Prints one line per fact the test checks: JOB <id> for each worker
job, RESULT <sum>, then CLOSED.
"""

import sys

from dask.distributed import Client
from dask_jobqueue import PBSCluster


def main(log_directory: str) -> None:
    cluster = PBSCluster(
        cores=1,
        memory="1GB",
        processes=1,
        walltime="00:10:00",
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
    # (A comprehension: a loop variable would keep the last Job alive, and
    # SpecCluster checks at close that every Job it still knows is closed.)
    for job_id in [job.job_id for job in cluster.workers.values()]:
        print("JOB", job_id, flush=True)
    futures = client.map(lambda x: x * x, range(100))
    total = client.submit(sum, futures).result(timeout=120)
    print("RESULT", total, flush=True)
    # Closing the cluster runs qdel on every worker job.
    client.close()
    cluster.close()
    print("CLOSED", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
