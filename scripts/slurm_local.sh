#!/usr/bin/env bash
# A real two-node SLURM cluster on this one machine (nodes n1 and n2, both on 127.0.0.1, one CPU each),
# for the slurm backend's tests and for trying `sweep run --backend slurm` without a cluster.
#   scripts/slurm_local.sh start|stop|status
# Needs root and the Debian packages slurmctld slurmd slurm-client munge. There is no systemd here, so
# the daemons are started by hand. It writes /etc/slurm/slurm.conf, and refuses to replace one it did
# not write itself.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# written by mjsweep scripts/slurm_local.sh"
STATE=/var/lib/slurm
NODES=(n1 n2)

die() { echo "slurm_local.sh: $*" >&2; exit 1; }

write_conf() {
    if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        die "$CONF exists and was not written by this script; not replacing it"
    fi
    mkdir -p "$(dirname "$CONF")"
    local host port=17001
    host=$(hostname -s)
    {
        echo "$MARK"
        cat <<EOF
ClusterName=local
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd-%n
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd-%n.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=5
SlurmdTimeout=10
EOF
        for node in "${NODES[@]}"; do
            echo "NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 Port=$port CPUs=1 RealMemory=4000"
            port=$((port + 1))
        done
        echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    } > "$CONF"
}

start_munge() {
    if pid_alive /run/munge/munged.pid; then
        return
    fi
    [ -f /etc/munge/munge.key ] || runuser -u munge -- mungekey --create
    mkdir -p /run/munge && chown munge:munge /run/munge
    runuser -u munge -- /usr/sbin/munged
}

wait_idle() {
    # Both nodes must have registered and be idle before jobs can land on each of them.
    for _ in $(seq 1 60); do
        # -N: one line per node (without it sinfo folds nodes that look alike into one line).
        if [ "$(sinfo -N --noheader --states=idle --format=%N 2>/dev/null | wc -l)" -ge "${#NODES[@]}" ]; then
            return
        fi
        scontrol update nodename="$(IFS=,; echo "${NODES[*]}")" state=resume >/dev/null 2>&1 || true
        sleep 1
    done
    sinfo >&2 || true
    die "the nodes did not become idle within 60 s (logs: /var/log/slurm/)"
}

start() {
    [ "$(id -u)" -eq 0 ] || die "needs root (the daemons run as root here)"
    for cmd in slurmctld slurmd sbatch munged; do
        command -v "$cmd" >/dev/null || [ -x "/usr/sbin/$cmd" ] || die "$cmd missing: apt-get install slurmctld slurmd slurm-client munge"
    done
    write_conf
    mkdir -p "$STATE/slurmctld" /var/log/slurm
    for node in "${NODES[@]}"; do mkdir -p "$STATE/slurmd-$node"; done
    start_munge
    pid_alive /run/slurmctld.pid || slurmctld
    for node in "${NODES[@]}"; do pid_alive "/run/slurmd-$node.pid" || slurmd -N "$node"; done
    wait_idle
    echo "slurm_local.sh: cluster up: $(sinfo -N --noheader --format='%N %T' | tr '\n' ' ')"
}

# A stopped daemon nobody has reaped yet stays a zombie (state Z): that is not alive.
pid_alive() {
    local state
    [ -f "$1" ] && read -r _ _ state _ 2>/dev/null < "/proc/$(cat "$1")/stat" && [ "$state" != Z ]
}

stop() {
    scontrol shutdown >/dev/null 2>&1 || true  # slurmctld and every slurmd
    for _ in $(seq 1 20); do
        pid_alive /run/slurmctld.pid || break
        sleep 0.5
    done
    for pidfile in /run/slurmctld.pid /run/slurmd-*.pid /run/munge/munged.pid; do
        if pid_alive "$pidfile"; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
    done
    echo "slurm_local.sh: stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) sinfo ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
