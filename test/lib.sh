# Shared by test/run, test/demo and bench/run: packages, an unprivileged
# user, and a private copy of the PostgreSQL installation with flakeid
# installed into it.  Source it; it sets PG_MAJOR, PG_CONFIG and friends.

PG_MAJOR=${PG_MAJOR:-15}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PG_MAJOR/bin/pg_config}
FLAKE_PACKAGES="postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR libipc-run-perl libdbd-pg-perl faketime make gcc"
FLAKE_USER=${FLAKE_USER:-postgres}

say() { printf '==> %s\n' "$*" >&2; }

# The caller's libpq settings (PGOPTIONS, PGHOST, PGUSER, ...) would reach
# the tests' servers and clients: a test's expected output or a server's
# settings must not depend on them, as PostgreSQL's own test harness
# clears them too.  PG_MAJOR, PG_CONFIG and the like, with an underscore,
# are this project's and stay.
flake_clear_libpq_env() {
	local name
	for name in $(env | sed -n 's/^\(PG[A-Z][A-Z0-9]*\)=.*/\1/p'); do
		unset "$name"
	done
}
flake_clear_libpq_env
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Install the Debian packages that are missing (as root), or say which ones
# are (as anyone else).
flake_packages() {
	local missing=() pkg
	for pkg in $FLAKE_PACKAGES "$@"; do
		flake_installed "$pkg" || missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		die "missing packages: ${missing[*]} (install them with: sudo apt-get install ${missing[*]})"
	fi
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Whether this machine's Debian release has a package (as root, after
# updating the package lists once, if it does not know it yet).
flake_packaged() {
	apt-cache show "$1" >/dev/null 2>&1 && return 0
	[ "$(id -u)" -eq 0 ] && [ -z "${FLAKE_APT_UPDATED:-}" ] || return 1
	apt-get update -qq >/dev/null
	FLAKE_APT_UPDATED=1
	apt-cache show "$1" >/dev/null 2>&1
}

flake_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# The Debian packages of other software that TAP tests run beside flakeid
# on PostgreSQL major version $1: pg_partman (040_partman.pl), on versions
# without origin = none pglogical (033_multi_primary_pglogical.pl), and
# Patroni with etcd (061_patroni.pl; Patroni's etcd3 DCS needs python3-etcd,
# which it depends on only as one alternative of several).
flake_tap_packages() {
	echo "postgresql-$1-partman"
	[ "$1" -ge 16 ] || echo "postgresql-$1-pglogical"
	echo patroni python3-etcd etcd-server
}

# Like flake_packages, for packages that a Debian release may lack (an
# extension not yet packaged for a new PostgreSQL version): those it has are
# installed or asked for, the others are left out.  The tests that need
# them learn which from FLAKE_UNPACKAGED (see flake_unpackaged).
flake_optional_packages() {
	local pkg have=()
	for pkg in "$@"; do
		flake_installed "$pkg" || ! flake_packaged "$pkg" || have+=("$pkg")
	done
	flake_packages "${have[@]}"
}

# Of the packages named, those not installed: after flake_optional_packages,
# the ones this Debian release does not have.
flake_unpackaged() {
	local pkg
	for pkg in "$@"; do
		flake_installed "$pkg" || echo "$pkg"
	done
}

# Citus, for 060_citus.pl and bench/citus: the source tarball for
# PostgreSQL $PG_MAJOR is FLAKE_CITUS_TARBALL, else the copy in
# ../shared/vendor beside the source tree of a release that supports that
# version (none for others).  It is exported, with PG_CONFIG, for the
# unprivileged user who runs the servers from a copy of the tree; as root,
# the packages the build needs are installed and the build cache
# (FLAKE_CITUS_CACHE, default /var/cache/flakeid-citus) is made that
# user's.  In the list of the build's packages, A/B is A, or B where the
# Debian release has no package A (libselinux1-dev is libselinux-dev from
# forky on).
FLAKE_CITUS_PACKAGES="liblz4-dev libzstd-dev libcurl4-openssl-dev libkrb5-dev
	libselinux1-dev/libselinux-dev libpam0g-dev libicu-dev"
flake_citus_prepare() {
	export PG_CONFIG
	if [ -z "${FLAKE_CITUS_TARBALL+set}" ]; then
		local release=
		case $PG_MAJOR in
			15) release=13.2.2 ;;
			16 | 17 | 18) release=14.0.1 ;;
		esac
		FLAKE_CITUS_TARBALL=${release:+$(cd "$FLAKE_SRC/.." && pwd)/shared/vendor/citus-$release.tar.gz}
	fi
	export FLAKE_CITUS_TARBALL
	[ -f "$FLAKE_CITUS_TARBALL" ] || return 0
	local pkg first packages=()
	for pkg in $FLAKE_CITUS_PACKAGES; do
		first=${pkg%%/*}
		flake_installed "$first" ||
			apt-cache policy "$first" 2>/dev/null | grep -q 'Candidate: [0-9]' ||
			first=${pkg#*/}
		packages+=("$first")
	done
	flake_packages "${packages[@]}"
	[ "$(id -u)" -eq 0 ] || return 0
	export FLAKE_CITUS_CACHE=${FLAKE_CITUS_CACHE:-/var/cache/flakeid-citus}
	mkdir -p "$FLAKE_CITUS_CACHE"
	chown "$FLAKE_USER" "$FLAKE_CITUS_CACHE"
}

# An older release of flakeid, for the TAP tests that run it beside this
# one (070_mixed_versions.pl): FLAKE_OLD_REV from the git history, by
# default the last commit of 1.2, the release without a promotion floor,
# as a tar file FLAKE_OLD_TAR that the unprivileged user can read.  None
# where the tree has no history (a release archive, a chroot's copy) and
# FLAKE_OLD_GIT names no other checkout that has it (test/mutate's copies).
flake_old_source() {
	[ -z "${FLAKE_OLD_TAR:-}" ] || return 0
	local git=${FLAKE_OLD_GIT:-$FLAKE_SRC}
	git -C "$git" rev-parse --git-dir >/dev/null 2>&1 || return 0
	local rev=${FLAKE_OLD_REV:-}
	if [ -z "$rev" ]; then
		# the commit before the one that made the version 1.3
		rev=$(git -C "$git" log --format=%H -S"default_version = '1.3'" -- flakeid.control | tail -n 1)
		[ -n "$rev" ] || return 0
		rev=$rev^
	fi
	FLAKE_OLD_TAR=$(mktemp "${FLAKE_WORK:-/tmp}/flakeid-old.XXXXXX")
	if ! git -C "$git" archive --format=tar -o "$FLAKE_OLD_TAR" "$rev"; then
		rm -f "$FLAKE_OLD_TAR"
		FLAKE_OLD_TAR=
		return 0
	fi
	chmod a+r "$FLAKE_OLD_TAR"
	FLAKE_OLD_MADE=1
	export FLAKE_OLD_TAR
}

# The older release built and installed into a private copy of the
# PostgreSQL installation beside flakeid_temp_install's: sets
# FLAKE_OLD_INSTALL (the directory above its bin/) and FLAKE_OLD_VERSION.
# A release that does not build with this PostgreSQL leaves them unset.
flake_old_install() {
	[ -n "${FLAKE_OLD_TAR:-}" ] && [ -r "$FLAKE_OLD_TAR" ] || return 0
	[ -z "${FLAKE_OLD_INSTALL:-}" ] || return 0
	local src=$FLAKE_WORK/old-src inst=$FLAKE_WORK/install-old
	mkdir -p "$src"
	tar -C "$src" -xf "$FLAKE_OLD_TAR"
	if ! make -s -C "$src" PG_CONFIG="$PG_CONFIG" >"$FLAKE_WORK/old-build.log" 2>&1; then
		say "the older flakeid does not build with PostgreSQL $PG_MAJOR: see $FLAKE_WORK/old-build.log"
		return 0
	fi
	flake_install_into "$src" "$inst"
	FLAKE_OLD_INSTALL=$(dirname "$inst$($PG_CONFIG --bindir)")
	FLAKE_OLD_VERSION=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$src/flakeid.control")
	say "flakeid $FLAKE_OLD_VERSION built beside this one, for the tests of mixed versions"
	export FLAKE_OLD_INSTALL FLAKE_OLD_VERSION
}

# Stop, the immediate way, the servers still running from data directories
# under DIR (what a stopped run left); a stale pid file's pid counts only
# while it is a postmaster of that data directory.  One still there 10 s
# later is killed: a postmaster stuck before it takes signals (a mutant
# that loops while it sets up shared memory) ignores the first.
#   flake_stop_servers DIR
flake_stop_servers() {
	local pidfile pid dir i pids=()
	while IFS= read -r pidfile; do
		dir=$(dirname "$pidfile")
		pid=$(head -n 1 "$pidfile" 2>/dev/null) || continue
		[ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$dir" &&
			kill -QUIT "$pid" 2>/dev/null && pids+=("$pid") || true
	done < <(find "$1" -name postmaster.pid 2>/dev/null)
	for ((i = 0; i < 100 && ${#pids[@]} > 0; i++)); do
		kill -0 "${pids[@]}" 2>/dev/null || break
		sleep 0.1
	done
	for pid in "${pids[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
}

# PostgreSQL refuses to run as root.  As root, copy the source tree to a
# directory the unprivileged user owns and run the calling script from
# there as that user.  Anyone else carries on where they are.
flake_drop_root() {
	local script=$1; shift
	[ "$(id -u)" -ne 0 ] && return 0
	local copy
	copy=$(mktemp -d /tmp/flakeid-src.XXXXXX)
	tar -C "$FLAKE_SRC" --exclude=.git --exclude='*.o' --exclude='*.so' \
		--exclude='*.bc' -cf - . | tar -C "$copy" -xf -
	chown -R "$FLAKE_USER" "$copy"
	say "running as $FLAKE_USER in $copy"
	flake_old_source
	# the run's folder (FLAKE_WORK), the copy and the old version's archive
	# go however the run ends, also when a TERM stops it (test/mutate's
	# limits), and the servers left running there stop
	local work
	work=$(mktemp -d "${TMPDIR:-/tmp}/flakeid-test.XXXXXX")
	chown "$FLAKE_USER" "$work"
	local cleanup="flake_stop_servers '$work';"
	[ -n "${FLAKE_KEEP:-}" ] || cleanup="$cleanup rm -rf '$copy' '$work';"
	[ -z "${FLAKE_OLD_MADE:-}" ] || cleanup="$cleanup rm -f '$FLAKE_OLD_TAR';"
	trap "$cleanup" EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	cd "$copy"
	local rc=0
	runuser -u "$FLAKE_USER" -- env PG_MAJOR="$PG_MAJOR" PG_CONFIG="$PG_CONFIG" \
		PG_CFLAGS="${PG_CFLAGS:-}" FLAKE_KEEP="${FLAKE_KEEP:-}" \
		FLAKE_OLD_TAR="${FLAKE_OLD_TAR:-}" FLAKE_WORK="$work" \
		"$copy/$script" "$@" || rc=$?
	exit $rc
}

# A private copy of the PostgreSQL installation under $2, with the
# flakeid built in source tree $1 installed into it.
flake_install_into() {
	local src=$1 inst=$2 dir
	for dir in "$($PG_CONFIG --bindir)" "$($PG_CONFIG --pkglibdir)" "$($PG_CONFIG --sharedir)"; do
		mkdir -p "$inst$dir"
		cp -a "$dir/." "$inst$dir/"
	done
	make -s -C "$src" PG_CONFIG="$PG_CONFIG" DESTDIR="$inst" install >/dev/null
}

# Build flakeid and install it into a private copy of the PostgreSQL
# installation under $FLAKE_WORK/install; the copy finds its share and lib
# directories relative to its binaries, as PostgreSQL's own temporary
# installations do.  Sets BINDIR, PGXS_DIR.
flake_temp_install() {
	local inst=$FLAKE_WORK/install
	say "building flakeid with $($PG_CONFIG --version)"
	make -s -C "$FLAKE_SRC" PG_CONFIG="$PG_CONFIG" PG_CFLAGS="${PG_CFLAGS:-}" >/dev/null
	flake_install_into "$FLAKE_SRC" "$inst"
	BINDIR=$inst$($PG_CONFIG --bindir)
	PGXS_DIR=$(dirname "$($PG_CONFIG --pgxs)")/../..
	PGXS_DIR=$(cd "$PGXS_DIR" && pwd)
	export PATH="$BINDIR:$PATH"
}

FLAKE_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
