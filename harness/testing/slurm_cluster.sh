#!/usr/bin/env bash
# A real multi-node Slurm cluster on this one machine: each node is its own Linux network
# namespace (own address, own slurmd) plus its own UTS namespace (own hostname), wired to a
# bridge that lives in a separate "switch" namespace. slurmctld runs in the head node's
# namespace, so every Slurm daemon listens on namespace addresses only. See docs/multinode.md.
#
#   slurm_cluster.sh up [N]   build and start N nodes (default 3); idempotent
#   slurm_cluster.sh env      shell-safe KEY=VALUE lines (SLURM_CONF, HEAD_NS, node addresses)
#   slurm_cluster.sh down     stop its daemons, delete namespaces, links, config; leaves nothing
#
# It coexists with slurm_local.sh (the single-node cluster in /etc/slurm): own config dir,
# ports, ClusterName, spool/state/log/pid paths, and daemons started under other process names
# (slurm_local.sh decides whether to start its own daemons with `pgrep -x slurmctld|slurmd`).
# munged is shared: one daemon, one key, its unix socket is visible from every namespace.
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin

STATE=${HARNESS_SLURM_DIR:-/run/harness-slurm}
if ! [[ "$STATE" =~ ^/[A-Za-z0-9_./-]+$ ]]; then
  echo "slurm_cluster.sh: HARNESS_SLURM_DIR must be an absolute path of [A-Za-z0-9_./-]," \
    "got '$STATE'" >&2
  exit 2
fi
CONF=$STATE/slurm.conf
PREFIX=harness-n              # node namespaces: harness-n1 .. harness-nN
SWITCH_NS=harness-sw          # holds the bridge; the host's namespace gets no link or address
HEAD_NS=${PREFIX}1
SUBNET=10.213.7               # /24 that exists only inside these namespaces
CTLD_PORT=6917                # slurm_local.sh keeps Slurm's defaults 6817/6818
SLURMD_PORT=6918
CPUS_PER_NODE=4               # more than this VM's cores: config_overrides lets steps share
MAX_NODES=9

die() { echo "slurm_cluster.sh: $*" >&2; exit 2; }
addr_of() { echo "${SUBNET}.$((10 + $1))"; }
nodes_up() { cat "$STATE/nodes" 2>/dev/null || echo 0; }
in_head() { ip netns exec "$HEAD_NS" env SLURM_CONF="$CONF" "$@"; }

require_tools() {
  command -v ip >/dev/null || die "ip is not installed (apt-get install iproute2)"
  local t
  for t in unshare nsenter; do
    command -v "$t" >/dev/null || die "$t is not installed (apt-get install util-linux)"
  done
  for t in slurmctld slurmd sinfo srun scontrol; do
    command -v "$t" >/dev/null || die "$t is not installed (apt-get install slurm-wlm)"
  done
  command -v munged >/dev/null || die "munged is not installed (apt-get install munge)"
  [ "$(id -u)" = 0 ] || die "must run as root (network namespaces and Slurm daemons)"
}

start_munge() {
  # Same key logic as slurm_local.sh, so both clusters can share one munged.
  mkdir -p /etc/munge /run/munge
  if [ ! -f /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown -R munge:munge /etc/munge /run/munge 2>/dev/null || true
  chmod 400 /etc/munge/munge.key
  if ! pgrep -x munged >/dev/null; then
    munged --force
    # Remembered so `down` stops the munged it started, and only that one.
    mkdir -p "$STATE" && cp /run/munge/munged.pid "$STATE/munged.pid"
  fi
}

make_network() {
  local n=$1 i ns
  # The host has no link into the subnet; without this route a host-side packet to a node's
  # address would leave by the default route, out of this machine. It fails at once instead.
  ip route show "${SUBNET}.0/24" | grep -q . || ip route add unreachable "${SUBNET}.0/24"
  ip netns list | grep -qw "$SWITCH_NS" || ip netns add "$SWITCH_NS"
  ip -n "$SWITCH_NS" link show br0 >/dev/null 2>&1 || ip -n "$SWITCH_NS" link add br0 type bridge
  ip -n "$SWITCH_NS" link set lo up
  ip -n "$SWITCH_NS" link set br0 up
  for i in $(seq 1 "$n"); do
    ns=$PREFIX$i
    ip netns list | grep -qw "$ns" || ip netns add "$ns"
    ip -n "$ns" link set lo up
    if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
      # Both ends are created directly in their namespaces: no link ever appears on the host.
      ip link add eth0 netns "$ns" type veth peer name "p$i" netns "$SWITCH_NS"
      ip -n "$SWITCH_NS" link set "p$i" master br0 up
      ip -n "$ns" addr add "$(addr_of "$i")/24" dev eth0
    fi
    ip -n "$ns" link set eth0 up
    mkdir -p "/etc/netns/$ns"
    hosts_file > "/etc/netns/$ns/hosts"     # ip netns exec bind-mounts it over /etc/hosts
  done
}

hosts_file() {
  local i
  printf '127.0.0.1\tlocalhost\n'
  for i in $(seq 1 "$(cat "$STATE/nodes")"); do printf '%s\tn%s\n' "$(addr_of "$i")" "$i"; done
}

render_conf() {
  local n=$1 i
  {
    cat <<CONF
ClusterName=harness-mn
SlurmctldHost=n1($(addr_of 1))
SlurmctldPort=${CTLD_PORT}
SlurmdPort=${SLURMD_PORT}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=${STATE}/ctld
SlurmdSpoolDir=${STATE}/spool/%n
SlurmctldPidFile=${STATE}/slurmctld.pid
SlurmdPidFile=${STATE}/slurmd-%n.pid
SlurmctldLogFile=${STATE}/log/slurmctld.log
SlurmdLogFile=${STATE}/log/slurmd-%n.log
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=${STATE}/jobcomp.txt
MinJobAge=3600
KillWait=5
# Without slurmdbd there is no sacct; a job's node list goes to JobCompLoc when it ends, and
# each step's node list to slurmctld.log ("_slurm_rpc_job_step_create: JobId=J StepId=S n[2-3]"),
# which 22.05 writes only with DebugFlags=Steps at level verbose or above.
SlurmctldDebug=verbose
DebugFlags=Steps
CONF
    for i in $(seq 1 "$n"); do
      echo "NodeName=n$i NodeAddr=$(addr_of "$i") NodeHostname=n$i" \
        "CPUs=${CPUS_PER_NODE} RealMemory=1024 State=UNKNOWN"
    done
    echo "PartitionName=mn Nodes=n[1-$n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  }
}

write_conf() {
  local n=$1
  mkdir -p "$STATE"/{bin,ctld,spool,log}
  # Other process names, so `pgrep -x slurmctld` / `pgrep -x slurmd` in slurm_local.sh do not
  # mistake these daemons for its own (the kernel names a process after the path it ran).
  ln -sfn "$(command -v slurmctld)" "$STATE/bin/hs-slurmctld"
  ln -sfn "$(command -v slurmd)" "$STATE/bin/hs-slurmd"
  render_conf "$n" > "$CONF.tmp"
  mv "$CONF.tmp" "$CONF"
  echo "$n" > "$STATE/nodes"
}

alive() {  # alive PIDFILE NAME: the pid file names a live process called NAME
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}

# Run a daemon in node i's network namespace, a fresh UTS namespace whose hostname is n<i> (so
# slurmd finds itself by hostname and a step's `hostname` answers its node's name) and a private
# mount namespace where the node's hosts file covers /etc/hosts. Not `ip netns exec`: it mounts a
# fresh /sys, which hides /sys/fs/cgroup, and slurmd 22.05 refuses to start without it.
in_node() {
  local i=$1; shift
  unshare --mount --uts --propagation private -- \
    nsenter --net="/run/netns/$PREFIX$i" -- \
    sh -c 'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"' \
    sh "/etc/netns/$PREFIX$i/hosts" "n$i" env SLURM_CONF="$CONF" "$@"
}

start_daemons() {
  local n=$1 i
  alive "$STATE/slurmctld.pid" hs-slurmctld || in_node 1 "$STATE/bin/hs-slurmctld" -f "$CONF"
  for i in $(seq 1 "$n"); do
    mkdir -p "$STATE/spool/n$i"
    alive "$STATE/slurmd-n$i.pid" hs-slurmd \
      || in_node "$i" "$STATE/bin/hs-slurmd" -f "$CONF" -N "n$i"
  done
}

wait_idle() {
  local n=$1 idle
  for _ in $(seq 1 60); do
    idle=$(in_head sinfo -h -N -o '%N %T' 2>/dev/null | grep -c ' idle$' || true)
    if [ "$idle" -ge "$n" ]; then return 0; fi
    in_head scontrol update nodename="n[1-$n]" state=resume >/dev/null 2>&1 || true
    sleep 1
  done
  echo "slurm_cluster.sh: the cluster did not come up; see $STATE/log/" >&2
  in_head sinfo -N >&2 || true
  return 1
}

print_env() {
  local n i
  n=$(nodes_up)
  [ "$n" -gt 0 ] || die "no cluster is up (run: $0 up)"
  # Every value is made of [A-Za-z0-9_./,-] (STATE is checked at start), so no quoting is needed
  # and the lines read the same to a shell's eval and to a KEY=VALUE parser.
  printf 'SLURM_CONF=%s\nHEAD_NS=%s\nNODE_NAMESPACES=%s\nNODES=%s\n' \
    "$CONF" "$HEAD_NS" "$(seq -f "${PREFIX}%g" -s , 1 "$n")" "$n"
  for i in $(seq 1 "$n"); do printf 'N%s_ADDR=%s\n' "$i" "$(addr_of "$i")"; done
}

cmd_up() {
  local n=${1:-3} i line
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le $MAX_NODES ] \
    || die "node count must be 1..$MAX_NODES, got '$n' (usage: $0 up [N])"
  require_tools
  # A cluster built for another node count or from another config is rebuilt, not patched.
  if [ -e "$STATE" ] && ! render_conf "$n" | cmp -s - "$CONF"; then cmd_down >/dev/null; fi
  start_munge
  write_conf "$n"
  make_network "$n"
  start_daemons "$n"
  wait_idle "$n"
  line="slurm cluster up:"
  for i in $(seq 1 "$n"); do line+=" n$i=$(addr_of "$i")"; done
  echo "$line"
  echo "SLURM_CONF=$CONF"
}

stop_pidfile() {  # stop_pidfile PIDFILE NAME
  local pid
  alive "$1" "$2" || return 0
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

cmd_down() {
  local ns pid f
  for f in "$STATE"/slurmd-n*.pid; do [ -e "$f" ] && stop_pidfile "$f" hs-slurmd; done
  stop_pidfile "$STATE/slurmctld.pid" hs-slurmctld
  # munged stays while slurm_local.sh's daemons may still need it.
  pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null \
    || stop_pidfile "$STATE/munged.pid" munged
  # Whatever is still inside our namespaces (slurmstepd, step processes) is ours to end.
  local ours="^(${PREFIX}[0-9]+|${SWITCH_NS})$"
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "$ours" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns"
    rm -rf "/etc/netns/$ns"
  done
  rmdir /etc/netns 2>/dev/null || true
  if ip route show type unreachable "${SUBNET}.0/24" | grep -q .; then
    ip route del unreachable "${SUBNET}.0/24"
  fi
  rm -rf "$STATE"
  echo "slurm cluster down"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  env) print_env ;;
  *) echo "usage: $0 up [N] | down | env" >&2; exit 2 ;;
esac
