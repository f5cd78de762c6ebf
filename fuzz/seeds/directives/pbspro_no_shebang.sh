# PBS Pro: no #! line; the shell comes from -S.
#PBS -S /bin/bash
#PBS -l select=1:ncpus=1
declare -a parts=(a b c)
echo "BASH_ARRAY=${#parts[@]}"
echo "SHELL_RUN=$(basename "$(readlink /proc/$$/exe)")"
