/* Which job am I?  An explicit id, else the first batch-system variable. */
#include <stdlib.h>

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
