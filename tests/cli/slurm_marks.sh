#!/bin/bash
# The optional node-side marking (crux-slurm-marks as Slurm's Prolog and
# Epilog, and its sync) in network namespaces: a node (namespace) sends to
# another over a veth pair, where each datagram's DSCP is read.  A job's
# owner, made by the test, who marks its own packets EF (46) is remarked to
# its job's level; a user without a job to the default; root's traffic is
# left alone; a priority line bound to another uid is not the job's; a
# level change reaches the rules at the next sync; the epilog removes them.
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/other_user.sh"
hooks=${CRUX_BUILDDIR:-..}/slurm
probe=$(cd "$(dirname "$0")" && pwd)/tos_probe.py
na=crux41a$$ nb=crux41b$$ receiver=
cleanup() {
  [ -n "$receiver" ] && kill "$receiver" 2>/dev/null && wait "$receiver" 2>/dev/null
  ip netns del "$na" 2>/dev/null
  ip netns del "$nb" 2>/dev/null
  other_user_remove
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if ! other_user_make crux41m; then
  echo "1..0 # SKIP $other_user_why"
  exit 0
fi
if ! command -v nft >/dev/null || ! ip netns add "$na" 2>/dev/null; then
  echo "1..0 # SKIP needs nft and network namespaces"
  exit 0
fi
ip netns add "$nb"
ip link add "v41a$$" netns "$na" type veth peer name "v41b$$" netns "$nb"
ip -n "$na" addr add 10.41.0.1/24 dev "v41a$$" && ip -n "$na" link set "v41a$$" up &&
  ip -n "$nb" addr add 10.41.0.2/24 dev "v41b$$" && ip -n "$nb" link set "v41b$$" up ||
  { echo "1..0 # SKIP cannot set up a veth pair"; exit 0; }
chmod 0755 "$WORK"
ip netns exec "$nb" /usr/bin/python3 "$probe" recv 10.41.0.2 41041 >"$WORK/received" 2>&1 &
receiver=$!
for _ in $(seq 100); do grep -qs '^ready' "$WORK/received" && break; sleep 0.1; done

cat >"$WORK/crux-slurm.conf" <<CONF
priority_file=$WORK/prio
log=$WORK/log
marks_dir=$WORK/marks
marks_table=crux41
CONF
: >"$WORK/log"
prio() { printf 'crux-priorities 1\nlevels 8\n%s\n' "$1" >"$WORK/prio.tmp" && mv "$WORK/prio.tmp" "$WORK/prio"; }
marks() { # marks add|remove|sync: crux-slurm-marks on the sending node, as slurmd runs it
  ip netns exec "$na" env -i CRUX_SLURM_CONF="$WORK/crux-slurm.conf" SLURM_JOB_ID=4711 \
    SLURM_JOB_UID="$other_uid" "$hooks/crux-slurm-marks" "$1"
}
n=0
# sent_as UID DSCP TAG: the DSCP datagram TAG arrives with, sent by UID on a
# socket it marked DSCP
sent_as() {
  ip netns exec "$na" setpriv --reuid="$1" --regid="$1" --clear-groups -- \
    /usr/bin/python3 "$probe" send 10.41.0.2 41041 "$3" "$2"
  for _ in $(seq 50); do grep -q "^$3 " "$WORK/received" && break; sleep 0.1; done
  sed -n "s/^$3 //p" "$WORK/received"
}
# arrives UID SENT WANT: UID's datagram marked SENT arrives marked WANT
arrives() {
  local got
  n=$((n + 1))
  got=$(sent_as "$1" "$2" "p$n")
  [ "$got" = "$3" ] || { echo "arrived with DSCP ${got:-nothing}, not $3"; return 1; }
}
nobody=$(id -u nobody)

check "without rules a user's own marking (EF) stands" arrives "$other_uid" 46 46
prio "job 4711 level 2 sl 2 tc 40 dscp 10 uid $other_uid"
check "the prolog installs the job's rules" marks add
check "the job's owner marking itself EF is remarked to its level's DSCP 10" arrives "$other_uid" 46 10
check "... and so is its unmarked traffic" arrives "$other_uid" 0 10
check "a user without a job marking itself EF gets the default DSCP 0" arrives "$nobody" 46 0
check "root's traffic is left alone" arrives 0 46 46
prio "job 4711 level 7 sl 7 tc 184 dscp 46 uid 0"
check "a line bound to another uid is not the job's: sync" marks sync
check "... the owner gets the default DSCP 0" arrives "$other_uid" 46 0
prio "job 4711 level 5 sl 5 tc 104 dscp 26 uid $other_uid"
check "a level change: sync" marks sync
check "... the owner's packets carry the new level's DSCP 26" arrives "$other_uid" 46 26
check "the epilog removes the job's rules" marks remove
check "... its owner's packets then get the default DSCP 0" arrives "$other_uid" 46 0
check "nothing was logged" test ! -s "$WORK/log"
tap_done
