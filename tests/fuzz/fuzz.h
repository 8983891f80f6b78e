/* libFuzzer harnesses for crux's parsers (tests/fuzz/fuzz_*.c).  Each file
 * defines LLVMFuzzerTestOneInput; linked with -fsanitize=fuzzer it is a
 * fuzzer (configure --enable-fuzzing, clang), linked with replay_main.c it
 * replays files (the corpus in the tree, crashes found) in every build. */
#ifndef CRUX_TESTS_FUZZ_H
#define CRUX_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* For parsers that read a path: the input written to a private temporary
 * file (created once per process, rewritten for every input); its path. */
const char *fuzz_input_file(const uint8_t *data, size_t size, const char *suffix);

#endif
