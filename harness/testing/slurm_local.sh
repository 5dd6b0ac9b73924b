#!/usr/bin/env bash
# Start a real single-node Slurm cluster on this machine (Debian's slurm-wlm and munge), for
# the distributed-sweep test and CI. Idempotent; prints "slurm up" when sinfo answers.
# Settings known to work on these machines: SlurmUser=root, proctrack/linuxproc, task/none,
# select/cons_tres, munged --force.
set -euo pipefail
command -v slurmctld >/dev/null || { echo "slurm-wlm is not installed (apt-get install slurm-wlm munge)" >&2; exit 2; }
host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /var/run/slurm
if [ ! -f /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || munged --force
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=harness
SlurmctldHost=${host}
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/var/run/slurm/slurmctld.pid
SlurmdPidFile=/var/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
NodeName=${host} CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=debug Nodes=${host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 1 60); do
  if sinfo -h -o %T 2>/dev/null | grep -qE "idle|mixed|alloc"; then echo "slurm up"; exit 0; fi
  scontrol update nodename="${host}" state=resume >/dev/null 2>&1 || true
  sleep 1
done
echo "slurm did not come up; see /var/log/slurm/" >&2
sinfo >&2 || true
exit 1
