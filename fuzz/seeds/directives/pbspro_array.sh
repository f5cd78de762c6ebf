#!/bin/sh
# PBS Pro: a job array.
#PBS -J 1-4
echo "INDEX=$PBS_ARRAY_INDEX"
