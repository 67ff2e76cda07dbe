#!/usr/bin/env bash
# Install Debian's PostgreSQL server binaries for the test suite (tests/fixtures/postgres.py
# starts its own throwaway cluster on 127.0.0.1; nothing here starts or configures a server).
# Idempotent: does nothing when initdb is already available.
set -euo pipefail

have_pg() {
    command -v initdb >/dev/null 2>&1 && return 0
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null 2>&1
}

if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive

if ! have_pg; then
    $SUDO apt-get update -qq
    # policy-rc.d keeps the package's own cluster from being started where services can't run.
    $SUDO apt-get install -y -qq --no-install-recommends postgresql postgresql-client >/dev/null
fi

# The hardening tests install dblink (a contrib extension: part of Debian's postgresql-NN
# package since PostgreSQL 10, a separate postgresql-contrib package elsewhere).
if ! compgen -G "/usr/share/postgresql/*/extension/dblink.control" >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends postgresql-contrib >/dev/null
fi

# The server refuses to run as root: the fixture runs it as 'postgres' (created by the package).
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin postgres
fi

bin=$(dirname "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)")
echo "PostgreSQL binaries: $bin ($("$bin/postgres" --version))"
