#!/usr/bin/env bash
# A one-machine Slurm cluster (Debian's slurm-wlm and munge) for trying and testing the `slurm`
# launcher and `benchbook publish --executor slurm`:
#   tools/slurm_cluster.sh up      install the packages if missing, write a single-node configuration
#                                  for this host (no accounting database, no cgroups: works in a
#                                  container without systemd), start munged, slurmctld and slurmd as
#                                  plain daemons, wait until the node is idle (fails, with the logs'
#                                  last lines, when it does not come up)
#   tools/slurm_cluster.sh down    stop the three daemons (by their pid files)
#   tools/slurm_cluster.sh status  sinfo
# Idempotent: `up` on a running cluster only checks it; `down` on a stopped one does nothing.
# Finished jobs stay visible to `scontrol show job` for 10 minutes (MinJobAge), which is how the
# launcher reads their state and exit code (there is no accounting database for sacct).
set -euo pipefail

CONF_DIR=/etc/slurm
STATE=/var/spool/slurmctld
SPOOL=/var/spool/slurmd
LOGS=/var/log/slurm
PARTITION=${BENCHBOOK_SLURM_PARTITION:-debug}
MUNGE_PID=/run/munge/munged.pid
SLURMCTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid

say() { echo "tools/slurm_cluster.sh: $*"; }
die() { echo "tools/slurm_cluster.sh: $*" >&2; exit 1; }

need_root() {
  [ "$(id -u)" = 0 ] || { echo "tools/slurm_cluster.sh: run as root (it installs packages and starts system daemons)" >&2; exit 2; }
}

install() {
  local missing=()
  command -v slurmctld >/dev/null || missing+=(slurm-wlm)
  command -v munged >/dev/null || missing+=(munge)
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    say "installed: $(dpkg-query -W -f '${Package} ${Version}, ' slurm-wlm slurmctld slurmd munge 2>/dev/null)"
  fi
}

configure() {
  local host node cpus mem
  host=$(hostname -s)
  # slurmd -C: this machine's CPUs, sockets, cores, threads and memory, as a NodeName line
  node=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]*/NodeName=$host/")
  [[ $node == NodeName=* ]] || die "slurmd -C did not describe this machine: $node"
  cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
  mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
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
SlurmctldPidFile=$SLURMCTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
# no cgroups and no systemd in a container: processes tracked through /proc, no binding
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# a job that asks for no memory gets its CPUs' share, so that small jobs (publish) share the node
DefMemPerCPU=$((mem / cpus))
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

# alive PIDFILE: the daemon of that pid file runs
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_idle() {
  local state
  for _ in $(seq 60); do
    state=$(sinfo -h -o %T 2>/dev/null | head -1 || true)
    case "$state" in
      idle|mixed|allocated|completing)
        say "slurm cluster up: partition, nodes, state, CPUs, memory: $(sinfo -h -o '%P %D %T %c %mMB' | head -1)"
        return 0 ;;
      down*|drain*) scontrol update NodeName="$(hostname -s)" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 1
  done
  {
    echo "tools/slurm_cluster.sh: the node did not become idle in 60 s; sinfo says: $(sinfo 2>&1 | tail -n +2)"
    echo "logs: $LOGS/slurmctld.log, $LOGS/slurmd.log"
    tail -5 "$LOGS/slurmctld.log" "$LOGS/slurmd.log" 2>&1 || true
  } >&2
  return 1
}

up() {
  need_root
  install
  if alive "$SLURMCTLD_PID" && alive "$SLURMD_PID" && alive "$MUNGE_PID" && sinfo >/dev/null 2>&1; then
    wait_idle
    return
  fi
  configure
  if ! alive "$MUNGE_PID"; then
    su -s /bin/sh munge -c /usr/sbin/munged 2>/dev/null || /usr/sbin/munged --force
  fi
  munge -n | unmunge >/dev/null || die "munge does not work (see /var/log/munge/munged.log)"
  alive "$SLURMCTLD_PID" || slurmctld || die "slurmctld did not start; see $LOGS/slurmctld.log"
  alive "$SLURMD_PID" || slurmd || die "slurmd did not start; see $LOGS/slurmd.log"
  for _ in $(seq 20); do alive "$SLURMCTLD_PID" && alive "$SLURMD_PID" && break; sleep 0.5; done
  alive "$SLURMCTLD_PID" || die "slurmctld is not running; see $LOGS/slurmctld.log: $(tail -3 "$LOGS/slurmctld.log" 2>&1)"
  alive "$SLURMD_PID" || die "slurmd is not running; see $LOGS/slurmd.log: $(tail -3 "$LOGS/slurmd.log" 2>&1)"
  wait_idle
  # the proof: a one-task job step runs on the node
  timeout 90 srun --immediate=60 --nodes=1 --ntasks=1 --time=1 --job-name=slurm_cluster.check true \
    || die "the cluster answers but a one-task job did not run (srun true); see $LOGS/slurmd.log"
  say "a test job ran"
}

stop() {  # stop NAME PIDFILE: TERM, then wait up to 15 s
  local pid
  alive "$2" || return 0
  pid=$(cat "$2")
  kill "$pid"
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || { say "stopped $1 ($pid)"; return 0; }; sleep 0.5; done
  die "$1 ($pid) did not stop within 15 s"
}

down() {
  need_root
  stop slurmd "$SLURMD_PID"
  stop slurmctld "$SLURMCTLD_PID"
  stop munged "$MUNGE_PID"
  say "slurm cluster stopped"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) sinfo ;;
  *) echo "usage: tools/slurm_cluster.sh up|down|status" >&2; exit 2 ;;
esac
