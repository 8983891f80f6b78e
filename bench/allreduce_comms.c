/* crux-bench-allreduce: which selections the job can run, and a duplicate
 * of MPI_COMM_WORLD for each.  Which coll components the job has is read
 * through MPI_T: the framework's selection list (the "coll" variable, as
 * `--mca coll` sets it) and each component's priority variable, which
 * exists only when Open MPI loaded that component. */
#include "bench/allreduce_comms.h"

#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A string control variable, or -1 when Open MPI has none of that name. */
static int read_cvar(const char *name, char *out, int len)
{
    int index, count;
    MPI_T_cvar_handle handle;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS) {
        return -1;
    }
    char cname[256], desc[1024];
    int cname_len = sizeof(cname), desc_len = sizeof(desc), verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    int rc = MPI_T_cvar_get_info(index, cname, &cname_len, &verbosity, &type, &enumtype, desc,
                                 &desc_len, &bind, &scope);
    if (rc == MPI_SUCCESS && type == MPI_CHAR && count > 0) {
        char *value = calloc((size_t)count + 1, 1); /* Open MPI says 2048 */
        rc = value != NULL ? MPI_T_cvar_read(handle, value) : MPI_ERR_NO_MEM;
        snprintf(out, (size_t)len, "%s", value != NULL ? value : "");
        free(value);
    } else if (rc == MPI_SUCCESS && type == MPI_INT) {
        int v = 0;
        rc = MPI_T_cvar_read(handle, &v);
        snprintf(out, (size_t)len, "%d", v);
    } else if (rc == MPI_SUCCESS && type == MPI_C_BOOL) { /* Open MPI's boolean parameters */
        _Bool v = 0;
        rc = MPI_T_cvar_read(handle, &v);
        snprintf(out, (size_t)len, "%d", (int)v);
    } else {
        rc = MPI_ERR_OTHER;
    }
    MPI_T_cvar_handle_free(&handle);
    return rc == MPI_SUCCESS ? 0 : -1;
}

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0) {
            return 1;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Under --mca coll crux (a selection list naming crux, not tuned), whether
 * crux fills the communicator's Allreduce from coll/tuned: then 'tuned' is
 * measured through crux's fallback, which is that module (docs/usage/fill.md). */
static int tuned_behind_crux(const char *coll)
{
    char fill[256], prio[64];
    if (coll[0] == '^' || !in_list(coll, "crux") || in_list(coll, "tuned")) {
        return 0;
    }
    if (read_cvar("coll_crux_fill_components", fill, sizeof(fill)) != 0 ||
        !in_list(fill, "tuned")) {
        return 0;
    }
    /* crux loads coll/tuned itself and registers its parameters */
    return read_cvar("coll_tuned_priority", prio, sizeof(prio)) == 0 && prio[0] != '-';
}

/* Whether the job has coll component NAME; if not, why, in WHY. */
static int has_component(const char *coll, const char *name, char *why)
{
    int excluded =
        coll[0] == '^' ? in_list(coll + 1, name) : coll[0] != '\0' && !in_list(coll, name);
    if (excluded) {
        /* under --mca coll crux, crux's fallback is what stands for Open MPI */
        int crux_alone = coll[0] != '^' && in_list(coll, "crux");
        snprintf(why, BENCH_WHY_LEN,
                 "coll/%s is not among this job's coll components (coll = %s)%s", name, coll,
                 crux_alone ? "; 'fallback' measures the module crux hands calls to" : "");
        return 0;
    }
    char var[64], value[64];
    /* An installed crux takes part only when the selection names it or
     * coll_crux_enable is set; otherwise its communicator would measure
     * coll/tuned under crux's name. */
    if (strcmp(name, "crux") == 0 && (coll[0] == '^' || !in_list(coll, "crux")) &&
        (read_cvar("coll_crux_enable", value, sizeof(value)) != 0 || strcmp(value, "0") == 0)) {
        snprintf(why, BENCH_WHY_LEN,
                 "crux does not take part in this job: name it (--mca coll crux or a list with "
                 "crux) or set coll_crux_enable 1");
        return 0;
    }
    snprintf(var, sizeof(var), "coll_%s_priority", name);
    if (read_cvar(var, value, sizeof(value)) != 0) {
        snprintf(why, BENCH_WHY_LEN, "Open MPI found no coll/%s component", name);
        return 0;
    }
    if (value[0] == '-') {
        snprintf(why, BENCH_WHY_LEN, "%s is %s: Open MPI never selects coll/%s", var, value, name);
        return 0;
    }
    return 1;
}

/* Open MPI here is CUDA-aware (device buffers may reach any component). */
static int cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT)
    return MPIX_Query_cuda_support() == 1;
#else
    return 0;
#endif
}

/* Whether selection V can run; if not, why. */
static int can_run(const bench_options_t *o, const bench_variant_t *v, const char *coll, char *why)
{
    if (!has_component(coll, v->needs, why)) {
        return 0;
    }
    if (o->cuda && strcmp(v->needs, "crux") != 0 && !cuda_aware()) {
        snprintf(why, BENCH_WHY_LEN,
                 "this Open MPI is not CUDA-aware: coll/%s cannot take device buffers", v->needs);
        return 0;
    }
    return 1;
}

static void skip(bench_comms_t *c, int variant, const char *why)
{
    c->skipped[c->nskipped] = variant;
    snprintf(c->why[c->nskipped], BENCH_WHY_LEN, "%.*s", BENCH_WHY_LEN - 1, why);
    c->nskipped++;
}

void bench_comms_open(const bench_options_t *o, bench_comms_t *c)
{
    memset(c, 0, sizeof(*c));
    int ok[BENCH_MAX_VARIANTS] = { 0 }, all_ok[BENCH_MAX_VARIANTS];
    char why[BENCH_MAX_VARIANTS][BENCH_WHY_LEN], coll[256] = "";
    int provided;
    int have_t = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
    if (have_t && read_cvar("coll", coll, sizeof(coll)) != 0) {
        coll[0] = '\0';
    }
    int behind[BENCH_MAX_VARIANTS] = { 0 }; /* 'tuned' through crux's fallback */
    for (int i = 0; i < o->nvariants; i++) {
        const bench_variant_t *v = &bench_variants[o->variants[i]];
        ok[i] = have_t ? can_run(o, v, coll, why[i]) : 1;
        if (!ok[i] && strcmp(v->name, "tuned") == 0 && !o->cuda && tuned_behind_crux(coll)) {
            ok[i] = behind[i] = 1;
        }
    }
    if (have_t) {
        MPI_T_finalize(); /* before MPI_Finalize: after it, Open MPI 4.1 crashes in it */
    }
    /* The same on every rank, or the duplications below would not match. */
    MPI_Allreduce(ok, all_ok, o->nvariants, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    const bench_variant_t *fallback = NULL;
    for (int v = 0; v < bench_num_variants; v++) {
        if (strcmp(bench_variants[v].name, "fallback") == 0) {
            fallback = &bench_variants[v];
        }
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < o->nvariants; i++) {
        const bench_variant_t *v = &bench_variants[o->variants[i]];
        if (behind[i]) {
            v = fallback;
        }
        if (!all_ok[i]) {
            skip(c, o->variants[i], ok[i] ? "another rank cannot run it" : why[i]);
            continue;
        }
        MPI_Info info = MPI_INFO_NULL;
        if (v->key != NULL) {
            MPI_Info_create(&info);
            MPI_Info_set(info, v->key, v->value);
        }
        MPI_Comm comm;
        int rc = MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
        if (info != MPI_INFO_NULL) {
            MPI_Info_free(&info);
        }
        if (rc != MPI_SUCCESS) {
            char text[MPI_MAX_ERROR_STRING], reason[BENCH_WHY_LEN];
            int len;
            MPI_Error_string(rc, text, &len);
            snprintf(reason, sizeof(reason), "Open MPI refused the communicator: %.160s", text);
            skip(c, o->variants[i], reason);
            continue;
        }
        c->variant[c->n] = o->variants[i];
        c->comm[c->n] = comm;
        snprintf(c->how[c->n], BENCH_WHY_LEN, "%s",
                 behind[i] ? "measured as crux's fallback, the coll/tuned module crux fills "
                             "Allreduce from (only crux is in this job)"
                           : "");
        c->n++;
    }
}

void bench_comms_close(bench_comms_t *c)
{
    for (int i = 0; i < c->n; i++) {
        MPI_Comm_free(&c->comm[i]);
    }
    c->n = 0;
}
