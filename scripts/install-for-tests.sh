#!/bin/sh
# Installs the built extension where make demo's and make test's clusters
# find it.  As root (PostgreSQL's directories writable): make install into
# PostgreSQL 15 itself.  As another user: into a private copy of PostgreSQL
# 15 in tmp_install/, as PostgreSQL's own make check does; nothing outside
# the checkout changes, and scripts/in-cluster.sh and the TAP tests then
# run that copy.  PostgreSQL is relocatable: the copy finds its own files.
set -eu
cd "$(dirname "$0")/.."
pgbin=/usr/lib/postgresql/15/bin
libdir=$($pgbin/pg_config --pkglibdir)
sharedir=$($pgbin/pg_config --sharedir)

if [ -w "$libdir" ] && [ -w "$sharedir/extension" ]; then
    rm -rf tmp_install
    echo "autocdc: building and installing into PostgreSQL 15 ($libdir)"
    exec make -s install
fi

root=$(pwd)/tmp_install
echo "autocdc: $libdir is not writable by $(id -un): installing into a private copy of PostgreSQL 15 in tmp_install/"
echo "autocdc: (to install for your own clusters, run make install as root)"
# Copied afresh each time, so that it matches the PostgreSQL installed now.
rm -rf "$root"
mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql"
cp -RP "${pgbin%/bin}" "$root/usr/lib/postgresql/"
cp -RP "$sharedir" "$root/usr/share/postgresql/"
echo "autocdc: building and installing into tmp_install/"
make -s install DESTDIR="$root"
dirs=$("$root/usr/lib/postgresql/15/bin/pg_config" --pkglibdir --sharedir)
if [ "$dirs" != "$(printf '%s\n%s' "$root/usr/lib/postgresql/15/lib" "$root/usr/share/postgresql/15")" ]; then
    echo "autocdc: the private copy in tmp_install/ does not find its own files (pg_config says: $dirs)" >&2
    exit 1
fi
