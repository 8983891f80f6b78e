/* Which job am I?  An explicit id, else the first batch-system variable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/crux_prio.h"

static const char *const job_vars[] = {
    "CRUX_JOB_ID",                             /* set by the user or crux's own launch scripts */
    "SLURM_JOB_ID", "PBS_JOBID",               /* PBS Pro, Torque */
    "LSB_JOBID",                               /* LSF */
    "JOB_ID",                                  /* SGE, UGE */
    "FLUX_JOB_ID",  "OMPI_MCA_orte_ess_jobid", /* Open MPI 4's mpirun, without a batch system */
};

const char *crux_prio_job_id(const char *explicit_id, const char **source)
{
    if (explicit_id && *explicit_id && crux_prio_token_ok(explicit_id)) {
        if (source)
            *source = "explicit";
        return explicit_id;
    }
    for (size_t i = 0; i < sizeof(job_vars) / sizeof(job_vars[0]); i++) {
        const char *v = getenv(job_vars[i]);
        if (v && crux_prio_token_ok(v)) {
            if (source)
                *source = job_vars[i];
            return v;
        }
    }
    if (source)
        *source = NULL;
    return NULL;
}

/* What makes s not a token, into why; 0 when it is one. */
static int token_problem(const char *s, char *why, size_t len)
{
    size_t n = strlen(s);
    if (n > CRUX_PRIO_MAX_TOKEN) {
        snprintf(why, len, "is %zu bytes, longer than %d", n, CRUX_PRIO_MAX_TOKEN);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '\t') {
            snprintf(why, len, "has a blank at byte %zu", i + 1);
            return 1;
        }
        if (c < ' ' || c == 0x7f || c == '#') {
            snprintf(why, len, "has %s at byte %zu", c == '#' ? "'#'" : "a control character",
                     i + 1);
            return 1;
        }
    }
    return 0;
}

void crux_prio_job_id_skipped(const char *explicit_id, char *why, size_t len)
{
    char what[96];
    if (len > 0)
        why[0] = '\0';
    if (explicit_id && *explicit_id) {
        if (token_problem(explicit_id, what, sizeof(what)))
            snprintf(why, len, "the job id given (coll_crux_job_id) %s", what);
        return;
    }
    for (size_t i = 0; i < sizeof(job_vars) / sizeof(job_vars[0]); i++) {
        const char *v = getenv(job_vars[i]);
        if (v == NULL || *v == '\0')
            continue;
        if (token_problem(v, what, sizeof(what)))
            snprintf(why, len, "%s %s", job_vars[i], what);
        return;
    }
}
