#!/bin/sh
# Torque: start in the directory qsub ran in (-d .).
#PBS -d .
#PBS -l nodes=1
echo "PWD_IS_SUBMIT=$([ "$PWD" = "$PBS_O_WORKDIR" ] && echo yes)"
