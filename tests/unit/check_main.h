/* Run a Check suite with TAP on stdout, one "ok"/"not ok" line per test
 * case, for automake's tap-driver.  Failures are reported in the TAP stream,
 * so the exit status is 0; a crash of the runner itself loses the plan and
 * the driver reports it as an ERROR. */
#ifndef CRUX_TESTS_CHECK_MAIN_H
#define CRUX_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int crux_check_run(Suite *suite)
{
    SRunner *runner = srunner_create(suite);
    srunner_set_tap(runner, "-");
    srunner_run_all(runner, CK_SILENT);
    srunner_free(runner);
    return EXIT_SUCCESS;
}

#define CRUX_CHECK_MAIN(make_suite)          \
    int main(void)                           \
    {                                        \
        return crux_check_run(make_suite()); \
    }

#endif
