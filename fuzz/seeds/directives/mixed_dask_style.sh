#!/usr/bin/env bash
# What dask-jobqueue's PBSCluster writes (log directories with a slash).

#PBS -N dask-worker
#PBS -l select=1:ncpus=1:mem=954MB
#PBS -l walltime=00:10:00
#PBS -e dask-logs/
#PBS -o dask-logs/

echo "RAN=yes"
