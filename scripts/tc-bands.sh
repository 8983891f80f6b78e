# Sourced by scripts/fakenet and scripts/testbed: a cable end's queueing as
# a switch port's with strict-priority queues by DSCP.
#
# tc_bands DEV RATE [DELAY [LIMIT [ACKS]]]: an htb class at RATE, and under
# it one class per band that is assured a token 1 mbit and may borrow up to
# RATE; htb lends spare bandwidth to the lowest "prio" first, so the bands
# are served in strict priority (this machine's kernel has no prio qdisc).
# Each band queues in a pfifo of LIMIT packets (1000), or with DELAY
# ("500us", "" for none) in a netem of that delay and as many packets.
# u32 filters on the TOS byte:
#   band 1 (highest)  DSCP 32..63  (TOS byte 0x80..0xff)
#   band 2            DSCP 8..31
#   band 3 (lowest)   DSCP 0..7, and whatever is not IPv4
# Class 1:1B holds band B's bytes ("tc -s class show dev DEV classid 1:1B").
# With ACKS "acks", each band serves TCP's bare acknowledgements (IPv4
# packets under 128 bytes) before its data, in a queue of their own (class
# 1:1B1; the data in 1:1B2): a TCP sender's pace follows its returning
# acknowledgements, and two-way transfers whose acknowledgements wait behind
# the other direction's data lose a fifth to a third of the cable (an RDMA
# fabric's senders are paced by the NIC, not by acknowledgements).
tc_bands() {
  local dev=$1 rate=$2 delay=${3:-} limit=${4:-1000} acks=${5:-} b l leaves
  tc qdisc add dev "$dev" root handle 1: htb default $([ "$acks" = acks ] && echo 132 || echo 13) &&
    tc class add dev "$dev" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" quantum 15140 ||
    return 1
  for b in 1 2 3; do
    tc class add dev "$dev" parent 1:1 classid 1:1$b htb rate 1mbit ceil "$rate" prio $((b - 1)) \
      quantum 15140 || return 1
    leaves=1$b
    if [ "$acks" = acks ]; then
      # htb serves leaves by their own prio: b's acknowledgements, then its
      # data, then the next band's
      tc class add dev "$dev" parent 1:1$b classid 1:1${b}1 htb rate 500kbit ceil "$rate" \
        prio $((2 * b - 2)) quantum 15140 &&
        tc class add dev "$dev" parent 1:1$b classid 1:1${b}2 htb rate 500kbit ceil "$rate" \
          prio $((2 * b - 1)) quantum 15140 || return 1
      leaves="1${b}1 1${b}2"
    fi
    for l in $leaves; do
      if [ -n "$delay" ]; then
        tc qdisc add dev "$dev" parent 1:$l handle $l: netem delay "$delay" limit "$limit" || return 1
      else
        tc qdisc add dev "$dev" parent 1:$l handle $l: pfifo limit "$limit" || return 1
      fi
    done
  done
  local f=1 band tos data ack
  for band in "1 0x80 0x80" "2 0x20 0xe0" "2 0x40 0xc0" "3 0x00 0x00"; do
    set -- $band
    data=1:1$1 ack=
    [ "$acks" = acks ] && data=1:1${1}2 ack=1:1${1}1
    if [ -n "$ack" ]; then
      tc filter add dev "$dev" parent 1: protocol ip prio $f u32 match ip tos "$2" "$3" \
        match ip protocol 6 0xff match u16 0x0000 0xff80 at 2 flowid "$ack" || return 1
      f=$((f + 1))
    fi
    tc filter add dev "$dev" parent 1: protocol ip prio $f u32 match ip tos "$2" "$3" flowid "$data" ||
      return 1
    f=$((f + 1))
  done
}
