#!/usr/bin/env bash
# Install Debian's SLURM (slurm-wlm: slurmctld, slurmd, sbatch) and MUNGE for the test suite
# (tests/fixtures/slurm.py starts its own single-node cluster on 127.0.0.1, with its own
# slurm.conf, munge key and state in a temporary folder; nothing here starts or configures a
# daemon). Idempotent: does nothing when slurmctld, slurmd, sbatch and munged are available.
set -euo pipefail

have_slurm() {
    for prog in slurmctld slurmd sbatch munged mungekey; do
        command -v "$prog" >/dev/null 2>&1 || [ -x "/usr/sbin/$prog" ] || return 1
    done
}

if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive

if ! have_slurm; then
    $SUDO apt-get update -qq
    # the packages' own services are not used (and are not started where services can't run)
    $SUDO apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi
