#!/bin/bash

#PBS -S /bin/bash
#PBS -N parsl.torque.block-0
#PBS -m n
#PBS -l walltime=00:20:00
#PBS -l nodes=1:ppn=1
#PBS -o parsl.stdout
#PBS -e parsl.stderr

export JOBNAME="parsl.torque.block-0"
echo "RAN=yes $JOBNAME"
