#!/bin/bash
# Torque: two nodes, four processors per node.
#PBS -N torque_mpi
#PBS -l nodes=2:ppn=4
#PBS -l walltime=00:10:00
#PBS -j oe

cd $PBS_O_WORKDIR
echo "LINES=$(wc -l < $PBS_NODEFILE)"
echo "NUM_NODES=$PBS_NUM_NODES"
echo "NUM_PPN=$PBS_NUM_PPN"
echo "NP=$PBS_NP"
echo "FIRST_TWICE=$(head -2 $PBS_NODEFILE | uniq | wc -l)"
