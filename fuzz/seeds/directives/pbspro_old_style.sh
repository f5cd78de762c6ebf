#!/bin/sh
# PBS Pro: job-wide resources, which PBS Pro reads as one chunk.
#PBS -l ncpus=4,mem=2gb
#PBS -l walltime=300

echo "LINES=$(wc -l < "$PBS_NODEFILE")"
echo "NCPUS=$NCPUS"
