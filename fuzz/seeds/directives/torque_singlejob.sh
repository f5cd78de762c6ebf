#!/bin/sh
# Torque with Moab: the node to this job alone.
#PBS -l nodes=1:ppn=1,naccesspolicy=singlejob
#PBS -k oe
#PBS -m ae
#PBS -M someone@example.org
echo "RAN=yes"
