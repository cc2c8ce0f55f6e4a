#!/bin/sh
# Installs what building and testing autocdc needs on Debian, when run as
# root; otherwise says what to install.  Safe to run again: it only acts on
# what is missing.
set -eu

pkgs="postgresql-15 postgresql-server-dev-15 postgresql-common postgresql-client-15 libipc-run-perl make gcc perl"
missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    # Installing the extension writes into PostgreSQL's directories.
    libdir=$(/usr/lib/postgresql/15/bin/pg_config --pkglibdir)
    if [ ! -w "$libdir" ]; then
        echo "autocdc: installing needs write access to $libdir; run this as root (sudo make ...)." >&2
        exit 1
    fi
    exit 0
fi

if [ "$(id -u)" = 0 ]; then
    echo "autocdc: installing missing packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
    echo "autocdc: these packages are missing:$missing" >&2
    echo "autocdc: install them with:  sudo apt-get install$missing" >&2
    echo "autocdc: then run this command again (make install needs root: use sudo)." >&2
    exit 1
fi
