# Sourced by tests/cli/slurm.sh and bench/testbed.sh: what a Slurm of one's
# own (a controller and slurmds run by root for a test or a benchmark, not
# the host's) needs in common.
#
# mini_slurm_munged DIR: a fresh key in DIR/mkey and munged on
#   DIR/munge/sock (status 1 when munged does not start).  DIR must be
#   searchable by all (munged checks its socket's directories).
# mini_slurm_conf DIR: the slurm.conf lines every such Slurm shares:
#   authentication through that munged, the controller's state and logs
#   under DIR, crux's programs DIR/prolog, DIR/epilog and DIR/taskprolog, no
#   accounting.  The caller adds the cluster, host, node and partition lines.

mini_slurm_munged() {
  local d=$1
  mkdir -p "$d/munge" "$d/mkey" || return 1
  chmod 755 "$d/munge"
  chmod 700 "$d/mkey"
  dd if=/dev/urandom of="$d/mkey/key" bs=1024 count=1 2>/dev/null &&
    chown -R munge: "$d/munge" "$d/mkey" && chmod 400 "$d/mkey/key" || return 1
  runuser -u munge -- munged --key-file="$d/mkey/key" --socket="$d/munge/sock" \
    --pid-file="$d/munge/pid" --log-file="$d/munge/log" --seed-file="$d/munge/seed"
}

mini_slurm_conf() {
  cat <<EOF
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$1/munge/sock
StateSaveLocation=$1/state
SlurmctldPidFile=$1/slurmctld.pid
SlurmctldLogFile=$1/log/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
PrologSlurmctld=$1/prolog
EpilogSlurmctld=$1/epilog
TaskProlog=$1/taskprolog
InactiveLimit=0
KillWait=2
MinJobAge=600
EOF
}
