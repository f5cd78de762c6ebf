#!/bin/sh
# PBS Pro: the options people copy from their site's examples.
#PBS -N options
#PBS -l select=1:ncpus=1
#PBS -l walltime=00:02:00
#PBS -m abe
#PBS -M someone@example.org
#PBS -r n
#PBS -p 10
#PBS -P climate
#PBS -W umask=027
#PBS -k oe
#PBS -v GREETING=hello

cd "$PBS_O_WORKDIR"
echo made > "made.$PBS_JOBID"
echo "MODE=$(stat -c %a "made.$PBS_JOBID")"
echo "GREETING=$GREETING"
echo "JOBNAME=$PBS_JOBNAME"
echo "QUEUE=$PBS_QUEUE"
echo "O_QUEUE=$PBS_O_QUEUE"
echo "ENVIRONMENT=$PBS_ENVIRONMENT"
echo "TMPDIR_OK=$([ -d "$TMPDIR" ] && [ -w "$TMPDIR" ] && echo yes)"
