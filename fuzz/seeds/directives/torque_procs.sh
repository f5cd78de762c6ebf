#!/bin/sh
# Torque: a number of processors, wherever they are.
#PBS -l procs=4
#PBS -l walltime=00:01:00
echo "LINES=$(wc -l < $PBS_NODEFILE)"
