#!/bin/sh
# NQS's -lP beside PBS directives.
#QSUB -lP 4
#PBS -l walltime=00:01:00
#PBS -N nqs_mix
echo "LINES=$(wc -l < "$PBS_NODEFILE")"
echo "JOBNAME=$PBS_JOBNAME"
