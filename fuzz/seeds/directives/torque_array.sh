#!/bin/sh
# Torque: a job array, at most two at once.
#PBS -t 1-10%2
echo "INDEX=$PBS_ARRAYID"
