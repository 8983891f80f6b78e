/* The crux coll component: its MCA parameters (all registered here), open
 * and close. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_config.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/show_help.h"

#include "ompi_coll/coll_crux.h"

static int coll_crux_register(void);
static int coll_crux_open(void);
static int coll_crux_close(void);

mca_coll_crux_component_t mca_coll_crux_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "crux",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = coll_crux_open,
            .mca_close_component = coll_crux_close,
            .mca_register_component_params = coll_crux_register,
        },
        .collm_data = { MCA_BASE_METADATA_PARAM_CHECKPOINT },
        .collm_init_query = mca_coll_crux_init_query,
        .collm_comm_query = mca_coll_crux_comm_query,
    },
    .output = -1,
};

static const mca_base_var_enum_value_t net_kinds[] = {
    { CRUX_NET_AUTO, "auto" }, { CRUX_NET_RDMA, "rdma" }, { CRUX_NET_TCP, "tcp" },
    { CRUX_NET_PML, "pml" },   { CRUX_NET_UCX, "ucx" },   { 0, NULL },
};

/* An enumeration of one axis's names (at most COLL_CRUX_AXIS_NAMES): MCA
 * reports a name it does not hold and keeps the default. */
#define COLL_CRUX_AXIS_NAMES 10
static void reg_axis(int axis, const char *help, int level)
{
    static mca_base_var_enum_value_t values[CRUX_REQUEST_AXES][COLL_CRUX_AXIS_NAMES + 1];
    const char *const *names = crux_request_values(crux_request_axis(axis));
    for (int i = 0; names[i] != NULL && i < COLL_CRUX_AXIS_NAMES; i++) {
        values[axis][i] = (mca_base_var_enum_value_t){ i, names[i] };
    }
    char name[40], enum_name[56];
    snprintf(name, sizeof(name), "allreduce_%s", crux_request_axis(axis));
    snprintf(enum_name, sizeof(enum_name), "coll_crux_%ss", name);
    mca_base_var_enum_t *e = NULL;
    *coll_crux_axis_storage(axis) = 0; /* auto */
    (void)mca_base_var_enum_create(enum_name, values[axis], &e);
    (void)mca_base_component_var_register(
        &mca_coll_crux_component.super.collm_version, name, help, MCA_BASE_VAR_TYPE_INT, e, 0, 0,
        level, MCA_BASE_VAR_SCOPE_READONLY, coll_crux_axis_storage(axis));
    OBJ_RELEASE(e);
}

static void reg_int(const char *name, const char *help, int level, int *storage)
{
    (void)mca_base_component_var_register(&mca_coll_crux_component.super.collm_version, name, help,
                                          MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level,
                                          MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void reg_size(const char *name, const char *help, int level, size_t *storage)
{
    (void)mca_base_component_var_register(&mca_coll_crux_component.super.collm_version, name, help,
                                          MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, level,
                                          MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void reg_string(const char *name, const char *help, int level, char **storage)
{
    (void)mca_base_component_var_register(&mca_coll_crux_component.super.collm_version, name, help,
                                          MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, level,
                                          MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int coll_crux_register(void)
{
    mca_coll_crux_component_t *c = &mca_coll_crux_component;
    const crux_coll_config_t defaults = CRUX_COLL_CONFIG_DEFAULT;
    const crux_select_sizes_t sizes = CRUX_SELECT_SIZES_DEFAULT;

    c->priority = 40;
    reg_int("priority", "Priority of the crux coll component (above coll/tuned's 30)",
            OPAL_INFO_LVL_6, &c->priority);

    c->enable = false;
    (void)mca_base_component_var_register(
        &c->super.collm_version, "enable",
        "Take part in every job that loads crux (1), or only in jobs whose coll selection "
        "names crux, e.g. --mca coll crux (0)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
        &c->enable);

    c->verbose = 0;
    reg_int("verbose",
            "Verbosity: 1 names the loaded file and crux's version, says whether crux takes "
            "part and why it falls back for a communicator; 2 also logs each algorithm "
            "decision once per communicator and algorithm",
            OPAL_INFO_LVL_9, &c->verbose);

    reg_axis(1,
             "Allreduce topology: auto (flat on one node, hier across nodes), flat (two steps "
             "over every rank, one node only), hier (three steps across rank groups, "
             "pipelined), hier-sequential (the three steps one after the other)",
             OPAL_INFO_LVL_5);
    reg_axis(2,
             "Allreduce hand-off between the ranks of a node or rank group: auto (the "
             "engine's lanes where every pair has them, else flags), flags (progress flags "
             "in a shared-memory group), lanes (the engine's lanes; refused without them)",
             OPAL_INFO_LVL_5);
    reg_axis(3,
             "Allreduce of device buffers: auto (device where it can run, else "
             "host-staged), device (reduced on the GPU, moved by the multipath engine), "
             "host-staged (copied through pinned host memory, then the host algorithm)",
             OPAL_INFO_LVL_5);
    reg_axis(0,
             "The older single knob, each value a point on the axes (coll_crux_allreduce_"
             "topology, _handoff, _memory_path; an axis set to other than auto wins): auto, "
             "flat (with flags; staged and cma its retired names), engine (flat with lanes), hier, "
             "hier-sequential, fallback (every host call to the previously selected module)",
             OPAL_INFO_LVL_5);

    c->allreduce_min_bytes = sizes.min_bytes;
    reg_size("allreduce_min_bytes",
             "Allreduce messages smaller than this many bytes go to "
             "the previously selected module (auto only)",
             OPAL_INFO_LVL_5, &c->allreduce_min_bytes);

    c->small_max_bytes = defaults.small_max_bytes;
    reg_size("small_max_bytes",
             "On one node, Allreduce messages of at most this many bytes take the small "
             "Allreduce (one copy into a slot of the group's shared segment, flags, one "
             "reduction); four slots of this size per process and group; 0: none",
             OPAL_INFO_LVL_5, &c->small_max_bytes);

    c->hier_small_max_bytes = sizes.hier_small_max_bytes;
    reg_size("hier_small_max_bytes",
             "Across nodes, Allreduce messages of at most this many bytes take the small "
             "Allreduce within each rank group, member 0 of each stepping between them; "
             "larger ones below coll_crux_hier_min_bytes the previous module; four slots of "
             "this size per process and rank group; 0: none",
             OPAL_INFO_LVL_5, &c->hier_small_max_bytes);

    c->small_whole_max_bytes = defaults.small_whole_max_bytes;
    reg_size("small_whole_max_bytes",
             "Small Allreduce messages of at most this many bytes are reduced whole by every "
             "process; larger ones a slice each",
             OPAL_INFO_LVL_6, &c->small_whole_max_bytes);

    c->far_latency_ns = (int)(defaults.far_latency * 1e9);
    reg_int("far_latency_ns",
            "A peer whose writes take longer than this many nanoseconds to "
            "reach us (measured, clock reads included) is far: what it reads of our stage is "
            "written with streaming stores (0: 90, between one last-level cache and two; "
            "1: every peer, once measured; a large value: none)",
            OPAL_INFO_LVL_6, &c->far_latency_ns);

    c->stage_size = defaults.stage_size;
    reg_size("stage_size", "Bytes of shared-memory staging area per process and communicator",
             OPAL_INFO_LVL_6, &c->stage_size);

    c->chunk_size = defaults.chunk_size;
    reg_size("chunk_size", "Pipeline chunk of the flags Allreduce, in bytes", OPAL_INFO_LVL_6,
             &c->chunk_size);

    c->stream_min_bytes = defaults.stream_min_bytes;
    reg_size("stream_min_bytes",
             "Allreduce results of at least this many bytes are written with "
             "non-temporal stores, bypassing the cache (0: never)",
             OPAL_INFO_LVL_6, &c->stream_min_bytes);

    c->job_id = "";
    reg_string("job_id",
               "This job's id in the priority file (default: CRUX_JOB_ID, then the batch "
               "system's job id: SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, JOB_ID, FLUX_JOB_ID, then "
               "mpirun's)",
               OPAL_INFO_LVL_4, &c->job_id);

    c->priority_file = "";
    reg_string("priority_file",
               "The priority file crux-sched writes (default: "
               "CRUX_PRIORITY_FILE; none: no levels, no arbitration)",
               OPAL_INFO_LVL_4, &c->priority_file);

    c->priority_poll_ms = 1000;
    reg_int("priority_poll_ms",
            "How often, at most, crux looks at the priority file again "
            "(milliseconds)",
            OPAL_INFO_LVL_6, &c->priority_poll_ms);

    c->arb_max_wait_us = 20000;
    reg_int("arb_max_wait_us",
            "Longest wait of a transfer for a higher-level job on this host "
            "(microseconds), so nothing starves",
            OPAL_INFO_LVL_6, &c->arb_max_wait_us);

    c->arb_path = "";
    reg_string("arb_path",
               "The host's arbitration table (default: CRUX_ARB_PATH, else "
               "/dev/shm/crux-arb-<uid>)",
               OPAL_INFO_LVL_6, &c->arb_path);

    c->profile_dir = "";
    reg_string("profile_dir",
               "Where the job's leader writes its communication profile for "
               "crux-sched (default: CRUX_PROFILE_DIR; none: no profile)",
               OPAL_INFO_LVL_4, &c->profile_dir);

    c->profile_interval_s = 10;
    reg_int("profile_interval_s", "Seconds between two profiles", OPAL_INFO_LVL_6,
            &c->profile_interval_s);

    c->group_size = 0;
    reg_int("group_size",
            "Group ranks by rank / N for the hierarchical Allreduce, instead of "
            "by node and package (0: discover)",
            OPAL_INFO_LVL_5, &c->group_size);

    c->hier_min_bytes = sizes.hier_min_bytes;
    reg_size("hier_min_bytes",
             "Across nodes, Allreduce messages of at least this many bytes use the "
             "hierarchical pipeline; smaller ones the previous module, or up to "
             "coll_crux_hier_small_max_bytes the small Allreduce (auto only)",
             OPAL_INFO_LVL_5, &c->hier_min_bytes);

    c->hier_depth = CRUX_HIER_DEPTH_DEFAULT;
    reg_int("hier_depth",
            "Chunks of the hierarchical Allreduce in the inter-group step at "
            "once (pipelining; 0: the three steps one after the other)",
            OPAL_INFO_LVL_6, &c->hier_depth);

    mca_base_var_enum_t *kinds = NULL;
    c->net = CRUX_NET_AUTO;
    (void)mca_base_var_enum_create("coll_crux_nets", net_kinds, &kinds);
    (void)mca_base_component_var_register(
        &c->super.collm_version, "net",
        "Channel of the hierarchical Allreduce's step between nodes, marked with the job's "
        "priority level: rdma (crux's UCX channel, one UCX context per level with its "
        "UCX_IB_SL and UCX_IB_TRAFFIC_CLASS, when UCX has an RDMA device, else tcp), tcp "
        "(crux's own connections, the level's DSCP in every packet's TOS byte), pml (Open MPI's "
        "point-to-point layer, unmarked), ucx (crux's UCX channel over whatever transport UCX "
        "picks, RDMA or not: for testing it over UCX's tcp), auto (rdma when UCX has an RDMA "
        "device, else tcp); a channel that cannot be set up falls back to tcp, then pml",
        MCA_BASE_VAR_TYPE_INT, kinds, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, &c->net);
    OBJ_RELEASE(kinds);

    c->net_if = "";
    reg_string(
        "net_if",
        "Where the tcp channel listens: an interface name, an IPv4 subnet a.b.c.d/n, a comma "
        "list of them (rails: local rank i on entry i), or empty for the first "
        "non-loopback IPv4 address that is up (else 127.0.0.1)",
        OPAL_INFO_LVL_5, &c->net_if);

    c->net_setup_timeout_ms = CRUX_NET_SETUP_TIMEOUT_MS;
    reg_int("net_setup_timeout_ms",
            "How long the tcp channel's set-up waits, counted from the moment every rank of the "
            "step between nodes has arrived, for their connections to be made and proven "
            "(connections from anyone else are dropped, never waited on); past it the channel "
            "falls back to pml, 1-3600000",
            OPAL_INFO_LVL_6, &c->net_setup_timeout_ms);

    c->use_cma = defaults.tl.use_cma;
    (void)mca_base_component_var_register(
        &c->super.collm_version, "use_cma",
        "Give the multipath engine UCT's cma transport as a channel when it works",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &c->use_cma);

    c->shm_mds = (char *)defaults.tl.shm_mds; /* MCA does not write through it */
    reg_string("shm_mds", "UCT memory domains tried in order for shared segments", OPAL_INFO_LVL_6,
               &c->shm_mds);

    c->fill_components = COLL_CRUX_FILL_DEFAULT;
    reg_string("fill_components",
               "Stock coll components crux takes the collectives it does not implement from "
               "when no other component provides them (crux alone): per communicator, those "
               "that accept it, the highest priority first as in Open MPI's own selection "
               "(the one named first among equals); those of the default list fill whatever "
               "slots the named ones leave empty",
               OPAL_INFO_LVL_6, &c->fill_components);
    return OMPI_SUCCESS;
}

/* Help texts live in Open MPI's data directory when crux could install
 * there, else beside mca_coll_crux.so. */
static void add_help_dirs(void)
{
    opal_show_help_add_dir(COLL_CRUX_HELP_DIR);
    Dl_info info;
    if (dladdr((void *)&mca_coll_crux_component, &info) != 0 && info.dli_fname != NULL) {
        char *path = strdup(info.dli_fname);
        if (path != NULL) {
            opal_show_help_add_dir(dirname(path));
            free(path);
        }
    }
}

static int coll_crux_open(void)
{
    mca_coll_crux_component_t *c = &mca_coll_crux_component;
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    coll_crux_say_loaded();
    c->selected = coll_crux_opted_in();
    if (!c->selected) {
        return OMPI_SUCCESS; /* init_query declines: the framework closes crux */
    }
    add_help_dirs();
    /* A refused value leaves crux filling the collectives from the stock
     * components, its own algorithms off: with crux alone (--mca coll
     * crux) the communicators would otherwise have none. */
    c->algorithms_off = !coll_crux_params_valid(c);
    /* the profile directory: the parameter, else what a batch system's
     * task prolog exported; copied, as the last profile is written at
     * close, after Open MPI freed the parameter's string */
    const char *dir =
        c->profile_dir != NULL && c->profile_dir[0] ? c->profile_dir : getenv("CRUX_PROFILE_DIR");
    c->profile_out = dir != NULL && dir[0] ? strdup(dir) : NULL;
    return coll_crux_fill_open(c->fill_components);
}

static int coll_crux_close(void)
{
    coll_crux_profile_finalize(); /* before the job's id goes */
    free(mca_coll_crux_component.profile_out);
    mca_coll_crux_component.profile_out = NULL;
    coll_crux_job_finalize();
    coll_crux_fill_close();
    if (mca_coll_crux_component.output >= 0) {
        opal_output_close(mca_coll_crux_component.output);
        mca_coll_crux_component.output = -1;
    }
    return OMPI_SUCCESS;
}
