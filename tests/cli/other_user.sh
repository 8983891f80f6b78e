# Sourced by tests whose attacker is another local user: makes one for the
# test run (useradd, no home, no login shell) and removes it at the end.
#   other_user_make PREFIX  create PREFIX<pid>; sets other_user, other_uid,
#                           other_gid; returns 1 with other_user_why set when
#                           it cannot (not root, no useradd)
#   as_other CMD...         run CMD as that user (no supplementary groups);
#                           "${other_prefix[@]}" CMD... does the same in a
#                           background job whose $! is then CMD's pid
#   other_user_remove       remove it (call it from the test's EXIT trap,
#                           after stopping the processes started as it)
other_user= other_uid= other_gid= other_user_why= other_prefix=()

other_user_make() {
  if [ "$(id -u)" -ne 0 ]; then
    other_user_why="not root: no second local user can be made"
    return 1
  fi
  if ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
    other_user_why="useradd or setpriv missing"
    return 1
  fi
  local name=$1$$
  if ! useradd -M -N -s /bin/false "$name" 2>/dev/null; then
    other_user_why="useradd $name failed"
    return 1
  fi
  other_user=$name
  other_uid=$(id -u "$name") other_gid=$(id -g "$name")
  other_prefix=(setpriv --reuid="$other_uid" --regid="$other_gid" --clear-groups --)
}

as_other() {
  "${other_prefix[@]}" "$@"
}

other_user_remove() {
  [ -n "$other_user" ] || return 0
  userdel "$other_user" 2>/dev/null || echo "# could not remove user $other_user" >&2
  other_user=
}
