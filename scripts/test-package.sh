#!/bin/bash
# Build the Debian package from the tree (what git tracks, plus new files it
# does not ignore), check it with lintian, install it with apt-get, and run
# the quick start and the mount tests against the installed programs, not
# the build tree: the package as users get it. As root, on Debian.
#   sudo scripts/test-package.sh [BUILD_DIR]   (BUILD_DIR: a configured build
#   tree for the fstests' helper programs; default _build)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
build=${1:-$top/_build}
say() { printf '\n== %s\n' "$*"; }

export DEBIAN_FRONTEND=noninteractive
need=(debhelper dpkg-dev lintian man-db)
missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} = 0 ] || apt-get install -y -q --no-install-recommends "${missing[@]}"

work=$(mktemp -d /tmp/rdmapool-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
say "building the package in $work"
mkdir "$work/rdmapool"
git ls-files -z --cached --others --exclude-standard |
	tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$work/rdmapool"
(cd "$work/rdmapool" && dpkg-buildpackage -us -uc -b > "$work/build.log" 2>&1) ||
	{ tail -n 60 "$work/build.log"; echo "test-package: dpkg-buildpackage failed" >&2; exit 1; }
deb=$(ls "$work"/rdmapool_*.deb)
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'

say "lintian"
lintian --fail-on error --suppress-tags initial-upload-closes-no-bugs "$deb"
echo "lintian: no errors"

say "installing $(basename "$deb")"
(cd "$work" && apt-get install -y -q --reinstall "./$(basename "$deb")")
for f in /usr/sbin/rdmapoold /usr/sbin/rdmapoolfs /usr/bin/rdmapool \
	/lib/systemd/system/rdmapoold@.service /etc/default/rdmapool \
	/usr/share/doc/rdmapool/examples/cluster.json; do
	[ -e "$f" ] || { echo "test-package: $f is not installed" >&2; exit 1; }
done
dpkg-deb -c "$deb" > "$work/contents" # (grep -q on the pipe would cut dpkg-deb off)
for m in man8/rdmapoold.8 man8/rdmapoolfs.8 man8/rdmapool.8 man5/rdmapool.json.5 man7/rdmapool.7; do
	grep -q "/usr/share/man/$m.gz\$" "$work/contents" ||
		{ echo "test-package: the package lacks $m" >&2; exit 1; }
done
echo "programs, unit, settings, example and man pages installed"
# a machine set to leave out documentation (dpkg path-exclude) has no
# man pages for the unit's Documentation= to find
man=yes
[ -e /usr/share/man/man8/rdmapoold.8.gz ] || man=no
systemd-analyze verify --man=$man /lib/systemd/system/rdmapoold@.service
echo "systemd-analyze verify: rdmapoold@.service (man pages checked: $man)"

say "the quick start, installed programs"
export RDMAPOOL_STATE="$work/quickstart"
scripts/quickstart.sh --installed up "$work/mnt"
scripts/quickstart.sh --installed down --purge

say "fstests against the installed programs"
RDMAPOOLD=/usr/sbin/rdmapoold RDMAPOOLFS=/usr/sbin/rdmapoolfs RDMAPOOL=/usr/bin/rdmapool \
	top_builddir="$build" RESULTS="$work/results" tests/fstests/check 001 002 003 055
