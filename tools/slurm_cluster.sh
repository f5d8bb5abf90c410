#!/usr/bin/env bash
# A one-machine Slurm cluster (Debian's slurm-wlm and munge) for trying and testing the `slurm`
# launcher: `tools/slurm_cluster.sh up` installs the packages if missing, writes a single-node
# configuration for this host (no accounting database, no cgroups: works in a container), starts
# munged, slurmctld and slurmd as plain daemons and waits until the node is idle; `down` stops
# them; `status` shows sinfo. Idempotent: `up` on a running cluster only checks it.
set -euo pipefail

CONF_DIR=/etc/slurm
STATE=/var/spool/slurmctld
SPOOL=/var/spool/slurmd
LOGS=/var/log/slurm
PARTITION=${BENCHBOOK_SLURM_PARTITION:-debug}

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "tools/slurm_cluster.sh: run as root (it installs packages and starts system daemons)" >&2
    exit 2
  fi
}

install() {
  local missing=()
  command -v slurmctld >/dev/null || missing+=(slurm-wlm)
  command -v munged >/dev/null || missing+=(munge)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]} (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

configure() {
  local host node
  host=$(hostname -s)
  # slurmd -C: this machine's CPUs, sockets, cores, threads and memory, as a NodeName line
  node=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]*/NodeName=$host/")
  mkdir -p "$CONF_DIR" "$STATE" "$SPOOL" "$LOGS"
  cat > "$CONF_DIR/slurm.conf" <<CONF
# written by benchbook tools/slurm_cluster.sh: one node, controller and compute on $host
ClusterName=benchbook
SlurmctldHost=$host
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE
SlurmdSpoolDir=$SPOOL
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# finished jobs stay visible to scontrol for 10 minutes (their state and exit code)
MinJobAge=600
KillWait=10
SchedulerType=sched/backfill
$node State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
  fi
  chown munge:munge /etc/munge/munge.key 2>/dev/null || true
  chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
}

running() { pgrep -x "$1" >/dev/null; }

wait_idle() {
  for _ in $(seq 60); do
    state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
    case "$state" in
      idle|mixed|allocated) echo "slurm cluster up: $(sinfo -h -o '%P %D %T %c CPUs %m MB' | head -1)"; return 0 ;;
      down*|drain*) scontrol update NodeName="$(hostname -s)" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 1
  done
  echo "tools/slurm_cluster.sh: the node did not become idle in 60 s; sinfo says: $(sinfo 2>&1 | tail -n +2)" >&2
  echo "logs: $LOGS/slurmctld.log, $LOGS/slurmd.log" >&2
  tail -5 "$LOGS/slurmctld.log" "$LOGS/slurmd.log" >&2 || true
  return 1
}

up() {
  need_root
  install
  if running slurmctld && running slurmd && sinfo >/dev/null 2>&1; then
    wait_idle
    return
  fi
  configure
  running munged || (su -s /bin/sh munge -c /usr/sbin/munged 2>/dev/null || /usr/sbin/munged --force)
  munge -n | unmunge >/dev/null || { echo "tools/slurm_cluster.sh: munge does not work" >&2; exit 1; }
  running slurmctld || slurmctld
  running slurmd || slurmd
  wait_idle
}

down() {
  need_root
  pkill -x slurmd || true
  pkill -x slurmctld || true
  pkill -x munged || true
  echo "slurm cluster stopped"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) sinfo ;;
  *) echo "usage: tools/slurm_cluster.sh up|down|status" >&2; exit 2 ;;
esac
