#!/bin/bash
# PBS Pro: hybrid MPI and OpenMP, two ranks of four threads per chunk,
# the chunks' nodes to the job alone.
#PBS -l select=2:ncpus=8:mpiprocs=2:ompthreads=4
#PBS -l place=free:excl
#PBS -l walltime=00:05:00

echo "LINES=$(wc -l < "$PBS_NODEFILE")"
echo "NP=$PBS_NP"
echo "OMP=$OMP_NUM_THREADS"
