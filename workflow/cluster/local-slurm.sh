#!/usr/bin/env bash
# A one-node SLURM cluster on this Debian machine, for as long as a command runs:
#
#   workflow/cluster/local-slurm.sh COMMAND [ARGS...]
#
# installs Debian's packages if missing (slurmctld, slurmd, slurm-client, slurmdbd, munge,
# mariadb-server), writes a slurm.conf (one node with this machine's CPUs and memory, one
# partition, $LOCAL_SLURM_PARTITION, default "local"), starts munged, MariaDB, slurmdbd (job
# accounting: sacct), slurmctld and slurmd, waits until sinfo shows the node idle, runs
# COMMAND with CRFSDCA_SLURM_PARTITION set, and tears everything down when it exits, fails
# or is interrupted. Exit status: COMMAND's; 2 when the cluster cannot be set up here (not
# root, no apt-get, a SLURM already running or configured).
#
# The configuration goes where Debian's SLURM commands look for it, /etc/slurm/slurm.conf
# (and slurmdbd.conf), as on a real cluster: setting SLURM_CONF instead is not enough,
# because Snakemake's SLURM job step drops every SLURM_* variable but the job's ids before
# it calls srun inside the job. Both files are removed on exit.
#
# What SLURM enforces: memory is a consumable resource (--mem), and a job step whose RSS
# goes over it is killed (jobacct_gather/linux, OverMemoryKill, sampled every second); the
# user root has the account "crfsdca" as its default, and jobs need an association.
# Everything the daemons write (state, logs, the database) lives in one temporary
# directory, $LOCAL_SLURM_DIR (kept after exit with LOCAL_SLURM_KEEP=1, for the logs).
set -euo pipefail

PARTITION=${LOCAL_SLURM_PARTITION:-local}
ACCOUNT=crfsdca
CLUSTER=crfsdca
DB_PORT=${LOCAL_SLURM_DB_PORT:-3307}
PACKAGES=(slurmctld slurmd slurm-client slurmdbd munge mariadb-server)

die() { echo "local-slurm: $*" >&2; exit 2; }
say() { echo "local-slurm: $*" >&2; }

[ $# -ge 1 ] || die "usage: $0 COMMAND [ARGS...] (runs COMMAND on a one-node SLURM)"
[ "$(id -u)" = 0 ] || die "cannot run here: needs root (it installs Debian packages and \
starts the SLURM, munge and MariaDB daemons); run it as root, e.g. in CI or a container"
[ -r /etc/debian_version ] || die "cannot run here: not a Debian machine (it uses Debian's \
SLURM packages)"

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
        || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || die "cannot run here: no apt-get to install ${missing[*]}"
    say "installing ${missing[*]} (apt-get)"
    start=$SECONDS
    # the packages' init scripts must not start daemons (policy-rc.d: 101 = not allowed)
    had_policy=0; [ -e /usr/sbin/policy-rc.d ] && had_policy=1
    [ $had_policy = 1 ] || printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${missing[@]}" >/dev/null; } || status=$?
    [ $had_policy = 1 ] || rm -f /usr/sbin/policy-rc.d
    [ "${status:-0}" = 0 ] || die "apt-get install ${missing[*]} failed"
    say "installed in $((SECONDS - start)) s"
fi

for port in 6817 6818 6819 "$DB_PORT"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        die "cannot run here: port $port is in use (a SLURM or database already running?)"
    fi
done
[ ! -S /run/munge/munge.socket.2 ] || ! munge -n >/dev/null 2>&1 \
    || die "cannot run here: a munged is already running (/run/munge/munge.socket.2)"
MARK="# written by local-slurm.sh"  # a file without it is someone else's: left alone
for f in /etc/slurm/slurm.conf /etc/slurm/slurmdbd.conf; do
    [ ! -e "$f" ] || grep -qx "$MARK" "$f" \
        || die "cannot run here: $f exists (a SLURM is configured on this machine)"
done

STATE=$(mktemp -d /tmp/local-slurm.XXXXXX)
chmod 755 "$STATE"
export LOCAL_SLURM_DIR=$STATE
PIDS=()  # pid files of the daemons started here, stopped in reverse order

teardown() {
    local status=$?
    trap - EXIT INT TERM
    say "tearing down"
    if command -v scancel >/dev/null && [ -e /etc/slurm/slurm.conf ]; then
        timeout 10 scancel --user root >/dev/null 2>&1 || true
    fi
    local i pidfile pid
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
        pidfile=${PIDS[i]}
        [ -s "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true
    done
    for f in /etc/slurm/slurm.conf /etc/slurm/slurmdbd.conf; do
        [ ! -e "$f" ] || ! grep -qx "$MARK" "$f" || rm -f "$f"
    done
    if [ "${LOCAL_SLURM_KEEP:-0}" = 1 ]; then
        say "kept $STATE (logs: *.log)"
    else
        rm -rf "$STATE"
    fi
    exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wait_for() {  # wait_for SECONDS WHAT COMMAND...: poll COMMAND until it succeeds
    local limit=$1 what=$2
    shift 2
    for _ in $(seq $((limit * 5))); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    say "$what did not come up in $limit s; its log:"
    tail -n 30 "$STATE/$what.log" >&2 2>/dev/null || true
    exit 2
}

# ---- munge: the daemons' and commands' authentication (Debian's key, made at install)
mkdir -p /run/munge && chown munge:munge /run/munge
[ -s /etc/munge/munge.key ] || runuser -u munge -- mungekey --create
install -d -o munge -g munge -m 700 "$STATE/munge"
runuser -u munge -- /usr/sbin/munged --pid-file="$STATE/munge/munged.pid" \
    --log-file="$STATE/munge/munged.log"
PIDS+=("$STATE/munge/munged.pid")
wait_for 10 munge/munged munge -n

# ---- MariaDB (slurmdbd's database), on 127.0.0.1:$DB_PORT, its data in $STATE
mariadb-install-db --no-defaults --user=root --datadir="$STATE/mysql" \
    --auth-root-authentication-method=socket >"$STATE/mariadb.log" 2>&1
mariadbd --no-defaults --user=root --datadir="$STATE/mysql" --socket="$STATE/mysql.sock" \
    --port="$DB_PORT" --bind-address=127.0.0.1 --pid-file="$STATE/mariadb.pid" \
    --log-error="$STATE/mariadb.log" --innodb-buffer-pool-size=64M 2>>"$STATE/mariadb.log" &
PIDS+=("$STATE/mariadb.pid")
wait_for 30 mariadb mariadb --no-defaults -S "$STATE/mysql.sock" -u root -e 'select 1'
mariadb --no-defaults -S "$STATE/mysql.sock" -u root -e "
    CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

# ---- slurm.conf and slurmdbd.conf: this machine as the only node
node=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
mkdir -p /etc/slurm
cat >/etc/slurm/slurm.conf <<CONF
$MARK
ClusterName=$CLUSTER
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageEnforce=associations
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
InactiveLimit=0
KillWait=10
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=$PARTITION Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
cat >/etc/slurm/slurmdbd.conf <<CONF
$MARK
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
PidFile=$STATE/slurmdbd.pid
LogFile=$STATE/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
CONF
chmod 600 /etc/slurm/slurmdbd.conf
mkdir -p "$STATE/ctld" "$STATE/slurmd"

# ---- slurmdbd, the cluster and its account, then slurmctld and slurmd
slurmdbd
PIDS+=("$STATE/slurmdbd.pid")
wait_for 30 slurmdbd sacctmgr -n list cluster
sacctmgr -i add cluster "$CLUSTER" >/dev/null
sacctmgr -i add account "$ACCOUNT" cluster="$CLUSTER" \
    description="local-slurm.sh" organization=crfsdca >/dev/null
sacctmgr -i add user root account="$ACCOUNT" defaultaccount="$ACCOUNT" >/dev/null
slurmctld
PIDS+=("$STATE/slurmctld.pid")
wait_for 30 slurmctld scontrol ping
slurmd
PIDS+=("$STATE/slurmd.pid")
idle() { [ "$(sinfo -h -n "$node" -o %t)" = idle ]; }
wait_for 60 slurmd idle
say "up: node $node ($cpus CPUs, $mem_mb MB), partition $PARTITION, account $ACCOUNT, \
accounting by slurmdbd; logs in $STATE"
sinfo >&2

export CRFSDCA_SLURM_PARTITION=$PARTITION
set +e
"$@"
status=$?
set -e
exit $status
