#!/bin/sh
# Torque: a node property, and memory per process.
#PBS -l nodes=1:ppn=2:ib
#PBS -l pmem=512mb,walltime=00:01:00
#PBS -m n

echo "LINES=$(wc -l < $PBS_NODEFILE)"
echo "PPN=$PBS_NUM_PPN"
