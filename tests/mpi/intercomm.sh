#!/usr/bin/env bash
# Every collective on intercommunicators (tests/mpi/test_intercomm.c: groups
# of equal and unequal sizes, blocking, nonblocking and persistent), with crux
# alone at 2 to 7 processes, in the default mix, and with crux alone given
# its fill list in another order and a junk one.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_intercomm
# coll_crux_verbose 2 says, per communicator, which component filled how
# many slots (a basic regular expression)
from_inter='intercommunicator (unnamed) of [0-9]*+[0-9]* processes: slots filled from .*inter [0-9]* (priority 40)'
for np in 2 3 4 5 6 7; do
  run_mpi $np "crux alone" --mca coll crux --mca coll_crux_verbose 2 -- "$prog"
  expect_stderr "$from_inter" "[np=$np crux alone] intercommunicators filled from coll/inter"
done
run_mpi 5 "default mix" -- "$prog"
# Components are taken by priority, not in the order named: coll/basic named
# first still leaves the intercommunicator collectives to coll/inter (its
# Scatter on an intercommunicator crashes in Open MPI 4.1.4)
run_mpi 4 "crux alone, fill list reversed" --mca coll crux --mca coll_crux_verbose 2 \
  --mca coll_crux_fill_components libnbc,basic,tuned,inter,self -- "$prog"
expect_stderr "$from_inter" "[np=4 fill list reversed] intercommunicators filled from coll/inter"
# A fill list crux can use nothing of falls back to the default (Open MPI
# 4.1.4 loses some messages sent while processes start, so only the results
# are checked, not the warning)
run_mpi 3 "crux alone, junk fill list" --mca coll crux \
  --mca coll_crux_fill_components '../no/such,x y,crux' -- "$prog"
finish
