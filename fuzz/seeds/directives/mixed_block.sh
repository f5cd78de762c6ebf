#!/bin/sh
# qsub waits for this one (-W block=true) and exits with its status.
#PBS -W block=true
#PBS -l select=1:ncpus=1
exit 7
