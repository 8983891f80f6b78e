#!/usr/bin/env bash
# MPI_Allreduce under mpirun, 1 to 8 ranks (oversubscribed past 2), with crux
# alone (--mca coll crux), in the default component mix, and with each of its
# algorithms forced; verbose output proves crux's own algorithm ran.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_allreduce
verbose=(--mca coll_crux_verbose 2)

for np in 1 2 3 5 8; do
  run_mpi $np "crux alone" --mca coll crux "${verbose[@]}" -- $prog counts comms nonblocking fallback bits
  [ $np -gt 1 ] && expect_stderr "coll:crux: allreduce on MPI_COMM_WORLD" "[np=$np crux alone] crux's own Allreduce ran"
done
run_mpi 4 "crux alone" --mca coll crux -- $prog types many
for np in 2 4 6; do
  run_mpi $np "default mix" "${verbose[@]}" -- $prog types counts comms nonblocking
  expect_stderr "coll:crux: allreduce on MPI_COMM_WORLD" "[np=$np default mix] crux chosen by priority"
done
for alg in staged cma; do
  for np in 3 4; do
    run_mpi $np "$alg forced" --mca coll_crux_allreduce_algorithm $alg "${verbose[@]}" -- $prog counts bits comms
    expect_stderr "coll:crux: allreduce on MPI_COMM_WORLD: $alg" "[np=$np $alg forced] the $alg algorithm ran"
    # forced, crux takes even the sizes it would hand on (one float: 4 bytes)
    expect_stderr "coll:crux: allreduce on MPI_COMM_WORLD: $alg from 4 bytes" \
      "[np=$np $alg forced] small messages too"
  done
done
for np in 2 3; do
  run_mpi $np "engine forced" --mca coll_crux_allreduce_algorithm engine "${verbose[@]}" -- \
    $prog counts bits comms
  expect_stderr "coll:crux: allreduce on MPI_COMM_WORLD: engine" "[np=$np engine forced] the multipath engine ran"
done
run_mpi 3 "small stage" --mca coll_crux_allreduce_algorithm staged --mca coll_crux_stage_size 65536 \
  --mca coll_crux_chunk_size 4096 -- $prog counts bits
run_mpi 3 "auto with cma" --mca coll_crux_cma_min_bytes 65536 "${verbose[@]}" -- $prog counts
expect_stderr "coll:crux: allreduce on MPI_COMM_WORLD: cma" "[np=3 auto with cma] auto switched to cma"
expect_stderr "coll:crux: allreduce on MPI_COMM_WORLD: staged" "[np=3 auto with cma] auto used staging below"
run_mpi 2 "no cma" --mca coll_crux_use_cma 0 -- $prog counts bits
# every peer far once measured: stages written with streaming stores, same bits
for alg in staged engine; do
  run_mpi 3 "far peers $alg" --mca coll_crux_far_latency_ns 1 --mca coll_crux_allreduce_algorithm $alg -- \
    $prog counts bits
done
run_mpi 2 "fallback forced" --mca coll_crux_allreduce_algorithm fallback -- $prog counts fallback
run_mpi 4 "many" --mca coll crux -- $prog many
run_mpi 3 "info keys" --mca coll_crux_verbose 2 -- $prog info
expect_stderr "unknown crux_allreduce_algorithm \"no-such-algorithm\" ignored" \
  "[np=3 info keys] an unknown algorithm name is reported"
expect_stderr "DUP FROM 0: cma" "[np=3 info keys] the info key selected cma"

# Ranks passing different counts or datatype sizes to one Allreduce: an
# error on every rank, sticky on the communicator (a hang or wrong data is
# the failure, so these runs get a shorter limit).
MPI_TIMEOUT=120
for np in 2 3 4; do
  run_mpi $np "mismatch" --mca coll crux -- $prog mismatch
  run_mpi $np "mismatch staged" --mca coll_crux_allreduce_algorithm staged -- $prog mismatch
done
run_mpi 3 "mismatch cma" --mca coll_crux_allreduce_algorithm cma -- $prog mismatch
MPI_TIMEOUT=${CRUX_MPI_TIMEOUT:-600}

# No shared memory for crux: every communicator falls back, says why once.
run_mpi 2 "no shared memory" --mca coll_crux_shm_mds no-such-md --mca coll_crux_verbose 1 -- $prog counts
expect_stderr "no shared memory for communicator" "[np=2 no shared memory] the fallback is explained at verbosity 1"
finish
