#!/bin/sh
# Torque: named nodes, the second with two processors.
#PBS -l nodes=cpu03+cpu05:ppn=2
#PBS -l walltime=60

echo "NODEFILE=$(tr '\n' ' ' < $PBS_NODEFILE)"
