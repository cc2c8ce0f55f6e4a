#!/bin/sh
# Installs what building and testing autocdc needs on Debian 12: as root
# with apt-get, showing its progress; as another user it says what to run as
# root.  Safe to run again: it only acts on what is missing.
#   ensure-deps.sh [demo|test]   (test also needs the TAP tests' Perl module
#                                 and git, for the upgrade test's 0.1.0 build)
set -eu
what=${1:-test}

pkgs="make gcc postgresql-15 postgresql-server-dev-15 postgresql-client-15 postgresql-common"
if [ "$what" = test ]; then
    pkgs="$pkgs perl libipc-run-perl git"
fi

if ! command -v dpkg-query >/dev/null 2>&1 || [ ! -r /etc/debian_version ]; then
    echo "autocdc: this set-up is for Debian 12 (bookworm); elsewhere install PostgreSQL 15 with its server headers, make and a C compiler yourself, then run make install" >&2
    exit 1
fi

missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "autocdc: these packages are missing:$missing" >&2
    echo "autocdc: as root, run:  apt-get install -y --no-install-recommends$missing" >&2
    echo "autocdc: then run this command again (as yourself: nothing else needs root)." >&2
    exit 1
fi

count=$(echo $missing | wc -w)
echo "autocdc: installing $count missing packages with apt-get:$missing"
echo "autocdc: with their dependencies that is about 110 packages; on a fresh system it takes a minute or two."
export DEBIAN_FRONTEND=noninteractive
echo "autocdc: apt-get update"
apt-get update
# Line-by-line progress (Get:, Unpacking, Setting up) that reads well in a log.
# shellcheck disable=SC2086
apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 $missing
echo "autocdc: packages installed"
