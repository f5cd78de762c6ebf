#!/bin/sh
# PBS Pro: a chunk's resources in a nodes spec, software as a string
# (not a node feature) and Moab's days-first wall time, as sites write.
#PBS -N nodes_resources
#PBS -l nodes=1:ncpus=16
#PBS -l software=abaqus/2023.1
#PBS -l walltime=0:02:00:00

echo "LINES=$(wc -l < "$PBS_NODEFILE")"
echo "NCPUS=$NCPUS"
echo "WALLTIME=$PBS_WALLTIME"
