#!/bin/sh
# PBS Pro: one OpenMP chunk, eight threads.
#PBS -N openmp
#PBS -l select=1:ncpus=8:ompthreads=8:mem=2gb
#PBS -l walltime=0:10:00

echo "LINES=$(wc -l < "$PBS_NODEFILE")"
echo "NCPUS=$NCPUS"
echo "OMP=$OMP_NUM_THREADS"
echo "START=$([ "$PWD" = "$HOME" ] && echo home)"
