/* Run a Check suite with TAP on stdout, one "ok"/"not ok" line per test
 * case, for automake's tap-driver.  Failures are reported in the TAP stream,
 * so the exit status is 0; a crash of the runner itself loses the plan and
 * the driver reports it as an ERROR. */
#ifndef CRUX_TESTS_CHECK_MAIN_H
#define CRUX_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static inline int crux_check_run(Suite *suite)
{
    SRunner *runner = srunner_create(suite);
    srunner_set_tap(runner, "-");
    srunner_run_all(runner, CK_SILENT);
    srunner_free(runner);
    return EXIT_SUCCESS;
}

/* A test that cannot run on this machine (it needs a GPU, say): reported
 * "ok N - name # SKIP why", counted as skipped, not as passed.  Check has no
 * skip of its own, and a test that returns early passes. */
typedef struct {
    const char *name;
    const char *why;
} crux_check_skip_t;

/* crux_check_run, then the skipped tests: the TAP lines are written here
 * from the runner's results, in Check's own form ("file:test case: message";
 * give each test a test case of its own for a name of its own). */
static inline int crux_check_run_skips(Suite *suite, const crux_check_skip_t *skips, int nskips)
{
    SRunner *runner = srunner_create(suite);
    srunner_run_all(runner, CK_SILENT);
    int n = srunner_ntests_run(runner);
    TestResult **results = srunner_results(runner);
    for (int i = 0; i < n; i++) {
        printf("%sok %d - %s:%s: %s\n", tr_rtype(results[i]) == CK_PASS ? "" : "not ", i + 1,
               tr_lfile(results[i]), tr_tcname(results[i]), tr_msg(results[i]));
    }
    for (int i = 0; i < nskips; i++) {
        printf("ok %d - %s # SKIP %s\n", n + i + 1, skips[i].name, skips[i].why);
    }
    printf("1..%d\n", n + nskips);
    free(results);
    srunner_free(runner);
    return EXIT_SUCCESS;
}

#define CRUX_CHECK_MAIN(make_suite)          \
    int main(void)                           \
    {                                        \
        return crux_check_run(make_suite()); \
    }

#endif
