#!/bin/bash
# PBS Pro: an MPI job of two chunks of four processes each.
#PBS -N mpi_select
#PBS -l select=2:ncpus=4:mpiprocs=4
#PBS -l walltime=00:05:00
#PBS -j oe
#PBS -q batch

cd "$PBS_O_WORKDIR"
echo "HOSTS=$(sort -u "$PBS_NODEFILE" | wc -l)"
echo "LINES=$(wc -l < "$PBS_NODEFILE")"
echo "NCPUS=$NCPUS"
echo "OMP=$OMP_NUM_THREADS"
echo "PWD_IS_SUBMIT=$([ "$PWD" = "$PBS_O_WORKDIR" ] && echo yes)"
