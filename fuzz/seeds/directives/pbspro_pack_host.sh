#!/bin/sh
# PBS Pro: three chunks packed on one host, named.
#PBS -l select=3:ncpus=1:host=localhost
#PBS -l place=pack

echo "LINES=$(wc -l < "$PBS_NODEFILE")"
