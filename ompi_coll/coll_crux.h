/* The crux coll component for Open MPI: a thin adapter between Open MPI's
 * coll framework and libcrux_coll (crux_coll.h), written the way coll/han
 * and coll/ucc are:
 *   coll_crux_component.c  component, MCA parameters (all registered there)
 *   coll_crux_request.c    the Allreduce selection's axes: a communicator's
 *                          request from the parameters and its info keys
 *   coll_crux_optin.c      whether crux takes part in the job (opt-in)
 *   coll_crux_module.c     per-communicator module: the previous module, the
 *                          size bounds libcrux_coll's selection gives it
 *   coll_crux_fill.c       stock components crux opens when it runs alone
 *   coll_crux_group.c      the libcrux_coll groups of a communicator (shared
 *                          memory, multipath engine) in its slots
 *                          (crux_share_slot_t), their set-ups kept apart
 *                          between threads
 *   coll_crux_share.c      groups shared between communicators: the process
 *                          names for libcrux_coll's crux_share_acquire
 *   coll_crux_hier.c       the subcommunicators of libcrux_coll's layout plan
 *                          (crux_layout_plan, crux_layout_handoff), and the
 *                          cross communicator's Allreduces its inter-group
 *                          step takes (crux_layout_allreduce)
 *   coll_crux_topo.c       this machine's topology, loaded once
 *   coll_crux_device.c     CUDA device buffers: staging with MPI's extents
 *   coll_crux_net.c        the channel of the inter-node step: crux_net_open,
 *                          crux_net_follow_route and crux_net_mark given the
 *                          parameters, the job's level and route; what they
 *                          did, said
 *   coll_crux_route.c      the ranks' host names for the route's paths
 *   coll_crux_job.c        the job's place in crux-sched's schedule (level,
 *                          network settings, arbitration): libcrux_job
 *   coll_crux_profile.c    the job's communication profile for crux-sched:
 *                          calls timed into libcrux_prio's crux_recorder_t
 *   coll_crux_dtype.c      MPI datatypes and ops to crux's
 *   coll_crux_allreduce.c  MPI_Allreduce: translate, select (libcrux_coll's
 *                          crux_allreduce_select or its memo), run
 *                          (crux_allreduce_run over the module's targets),
 *                          fall back
 * Whatever crux does not handle goes to the module that was selected before
 * it on the communicator. */
#ifndef MCA_COLL_CRUX_H
#define MCA_COLL_CRUX_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/coll.h"
#include "opal/util/output.h"

#include "coll/crux_coll.h"
#include "coll/crux_dev.h"
#include "coll/crux_net.h"
#include "sched/crux_job.h"

BEGIN_C_DECLS

typedef struct {
    mca_coll_base_component_2_0_0_t super;

    /* MCA parameters (coll_crux_<name>) */
    int priority;
    int verbose;
    /* the Allreduce selection's axes (crux_request_t), as value indices of
     * crux_request_values(): the older single knob, then each axis */
    int allreduce_algorithm;
    int allreduce_topology;
    int allreduce_handoff;
    int allreduce_memory_path;
    size_t allreduce_min_bytes;  /* below: previous module */
    size_t small_max_bytes;      /* the small Allreduce up to this size, on one node ... */
    size_t hier_small_max_bytes; /* ... and across nodes */
    size_t small_whole_max_bytes;
    size_t stage_size;
    size_t chunk_size;
    size_t stream_min_bytes; /* results this large bypass the cache */
    int far_latency_ns;      /* peers slower than this get a streamed stage; 0: 90 */
    char *job_id;            /* the job's id in the priority file */
    char *priority_file;
    int priority_poll_ms;
    int arb_max_wait_us; /* longest wait for a higher-level job */
    char *arb_path;
    char *profile_dir;
    char
        *profile_out; /* a copy of profile_dir, else CRUX_PROFILE_DIR, else NULL (coll_crux_open) */
    int profile_interval_s;
    int group_size;        /* > 0: groups of this many consecutive ranks */
    size_t hier_min_bytes; /* auto: hierarchical from this size up */
    int hier_depth;        /* chunks in the inter-group step at once */
    bool use_cma;
    char *shm_mds;
    char *fill_components;

    bool enable;         /* coll_crux_enable: take part though the selection does not name crux */
    bool selected;       /* taking part in this job (coll_crux_optin.c) */
    bool algorithms_off; /* a parameter was refused: only the stock components run */
    int output;          /* opal_output stream for verbose messages */
    int net;             /* crux_net_kind_t: the channel of the inter-node step */
    char *net_if;        /* where the TCP channel listens ("": the first address up) */
    int net_setup_timeout_ms; /* the TCP channel's set-up, from the last rank's arrival */
} mca_coll_crux_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_crux_component_t mca_coll_crux_component;

/* How a communicator's ranks split into groups (coll_crux_hier.c):
 * libcrux_coll's layout (its groups, the channel between nodes) and the
 * communicators and references that hold it. */
typedef struct {
    crux_layout_t super;
    ompi_communicator_t *local_comm; /* the ranks of this rank's group */
    ompi_communicator_t *cross_comm; /* local rank i of every group */
    crux_share_t *share;             /* the reference that holds group or lanes */
    crux_share_t *small_share;       /* with lanes, the reference that holds small */
    const char **hosts; /* cross_comm's ranks' host names (the route's paths); NULL: none */
} mca_coll_crux_layout_t;

typedef struct {
    mca_coll_base_module_t super;

    /* The functions crux falls back to, and the module each belongs to
     * (retained while saved). */
    mca_coll_base_module_allreduce_fn_t previous_allreduce;
    mca_coll_base_module_t *previous_allreduce_module;
    mca_coll_base_module_allgather_fn_t previous_allgather;
    mca_coll_base_module_t *previous_allgather_module;

    ompi_communicator_t *comm;
    crux_request_t request;             /* what the Allreduce selection is asked */
    crux_select_sizes_t sizes;          /* the size parameters, as the selection takes them */
    crux_select_bounds_t bounds;        /* what they mean for this request and communicator */
    crux_coll_oob_t oob;                /* the exchange over comm (the previous allgather) */
    crux_select_memo_t memo;            /* the last small call's datatype, op and algorithm */
    crux_dev_host_pair_t host_pair;     /* the last call's buffers, in host memory */
    bool all_local;                     /* every rank on this node */
    bool building;                      /* making subcommunicators: fall back */
    crux_share_slot_t group_slot;       /* the flat shared-memory group, over all ranks */
    crux_share_slot_t layout_slot;      /* the groups of the hierarchical algorithm */
    crux_share_slot_t engine_slot;      /* the engine group: lanes, device buffers */
    struct crux_dev_pinned *dev_pinned; /* pinned host buffers (the host-staged path) */
    uint32_t logged;                    /* bit 1 << alg: said at verbose 2 */
} mca_coll_crux_module_t;

OBJ_CLASS_DECLARATION(mca_coll_crux_module_t);

/* component */
int mca_coll_crux_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_crux_comm_query(ompi_communicator_t *comm, int *priority);

/* A message of help-mpi-coll-crux.txt on stderr, by this process, or with
 * 'node_once' by the node's first process alone (coll_crux_say.c). */
void coll_crux_say(bool node_once, const char *topic, ...);

/* Whether crux takes part in this job: the coll selection names it or
 * coll_crux_enable is set; said at verbosity 1 (coll_crux_optin.c). */
bool coll_crux_opted_in(void);
/* At verbosity 1, the path of the loaded mca_coll_crux.so and crux's version. */
void coll_crux_say_loaded(void);

/* the parameters' range checks (coll_crux_params.c): false, said once
 * through the help file, when a value is refused */
bool coll_crux_params_valid(const mca_coll_crux_component_t *c);

/* The stock components crux fills the empty slots from when it runs alone:
 * by default those Open MPI's own selection would use; those of this list
 * not named fill whatever slots the named ones leave (coll_crux_fill.c). */
#define COLL_CRUX_FILL_DEFAULT "self,inter,tuned,basic,libnbc"
int coll_crux_fill_open(const char *names);
int coll_crux_fill_init_query(bool enable_progress_threads, bool enable_mpi_threads);
int coll_crux_fill_comm(ompi_communicator_t *comm);
void coll_crux_fill_close(void);

/* libcrux_coll's configuration from the MCA parameters, and group creation
 * kept apart between threads (UCX's component discovery is process-wide) */
crux_coll_config_t coll_crux_config(void);
/* The exchange over the module's communicator: the previous module's
 * allgather, which never enters crux. */
crux_coll_oob_t coll_crux_module_oob(mca_coll_crux_module_t *module);
/* The component's size parameters, as the selection takes them. */
crux_select_sizes_t coll_crux_select_sizes(void);
crux_status_t coll_crux_group_create(const crux_coll_oob_t *oob, const crux_coll_config_t *config,
                                     crux_coll_group_t **group_p);

/* the group behind a communicator; NULL when it cannot be had */
crux_coll_group_t *coll_crux_get_group(mca_coll_crux_module_t *module);

/* Groups shared by the communicators over the same processes in the same
 * order, counted: libcrux_coll's crux_share_acquire given the
 * communicator's process names (coll_crux_share.c).  A kind of group is
 * the shared-memory group, the engine group, or the layout of the
 * hierarchical algorithm (its subcommunicators and what they hold).
 * Acquire is collective over 'comm' (its members exchange through 'oob'):
 * it takes the group the members agree on, or builds one with 'build'
 * (collective too), and returns a reference (crux_share_use,
 * crux_share_release).  A pinned reference (a layout's groups) keeps its
 * group from being released to make room. */
typedef enum {
    COLL_CRUX_SHM,
    COLL_CRUX_ENGINE,
    COLL_CRUX_LAYOUT,
    COLL_CRUX_KINDS
} coll_crux_kind_t;
_Static_assert(COLL_CRUX_KINDS <= CRUX_SHARE_KINDS, "a kind of libcrux_coll's sharing each");
typedef struct {
    ompi_communicator_t *comm;
    const crux_coll_oob_t *oob; /* an allgather over comm that never enters crux */
    coll_crux_kind_t kind;
    /* what else a group of the kind must match to be shared: a layout is
     * built with or without the engine's lanes by the asked hand-off */
    int variant;
    bool pin;
    /* builds a group over comm, collectively, exchanging through oob */
    crux_status_t (*build)(void *arg, const crux_coll_oob_t *oob, void **group);
    /* destroys a group 'build' made, once its last reference is gone */
    void (*destroy)(void *group);
    void *arg;
} coll_crux_share_request_t;
crux_status_t coll_crux_share_acquire(const coll_crux_share_request_t *request,
                                      crux_share_t **share);
/* the builders and destroyers of the shared-memory and engine groups, for
 * coll_crux_share_request_t (coll_crux_group.c; the layout's are
 * coll_crux_hier.c's own) */
crux_status_t coll_crux_shm_group_build(void *arg, const crux_coll_oob_t *oob, void **group);
/* ... a shared-memory group within a layout's rank group
 * (crux_layout_group_config; 'arg' not NULL: the small Allreduce's slots
 * alone) */
crux_status_t coll_crux_layout_group_build(void *arg, const crux_coll_oob_t *oob, void **group);
void coll_crux_shm_group_destroy(void *group);
crux_status_t coll_crux_engine_group_build(void *arg, const crux_coll_oob_t *oob, void **group);
void coll_crux_engine_group_destroy(void *group);
/* The module's group of the kind 'how' names (its kind, build and
 * destroy; the module gives comm, oob and arg) in 'slot'
 * (crux_share_slot_get: acquired when needed, in the same call on every
 * member; NULL once it could not be had, *status saying why the first
 * time). */
void *coll_crux_module_group(mca_coll_crux_module_t *module, const coll_crux_share_request_t *how,
                             crux_share_slot_t *slot, crux_status_t *status);

/* the communicator's groups, built on first use or shared with the
 * communicators over the same processes in the same order; NULL when the
 * hierarchical algorithm does not apply (one group, groups of one, or
 * uneven groups) or crux's limit of layouts is reached */
const mca_coll_crux_layout_t *coll_crux_get_layout(mca_coll_crux_module_t *module);
/* a module's references, dropped (its groups may be released meanwhile) */
void coll_crux_module_release(mca_coll_crux_module_t *module);

/* the job (coll_crux_job.c, libcrux_job): enter before crux moves an
 * Allreduce's data, exit after; between them this process holds the host's
 * arbitration at the job's level */
void coll_crux_job_init(void);
const char *coll_crux_job_id(void);
void coll_crux_job_enter(crux_job_ticket_t *ticket);
void coll_crux_job_exit(crux_job_ticket_t *ticket);
void coll_crux_job_finalize(void);

/* the profile (coll_crux_profile.c): only the job's leader records */
/* where the leader writes the profile, NULL for nowhere; resolved once:
 * this is asked on every Allreduce, small ones included */
static inline const char *coll_crux_profile_dir(void)
{
    return mca_coll_crux_component.profile_out;
}
static inline bool coll_crux_profile_configured(void)
{
    return mca_coll_crux_component.profile_out != NULL;
}
double coll_crux_now(void);
bool coll_crux_profiling(void);
void coll_crux_profile_record(size_t bytes, double start, double end);
/* at the component's close: the window still open, however short */
void coll_crux_profile_finalize(void);

/* device buffers (coll_crux_device.c) */
/* 1 when (cdtype, cop) has a GPU kernel */
bool coll_crux_device_kernel(crux_dtype_t cdtype, crux_op_t cop);
/* Device buffers staged through this communicator's pinned host buffers:
 * stage_in copies the input to 'in' (and sets 'out', for the result, whose
 * stage_out copies it back to rbuf); both as MPI sees buffers (lower bound
 * included). */
typedef struct {
    char *in, *out;
    ptrdiff_t lb;
    size_t bytes;
} coll_crux_staged_t;
int coll_crux_stage_in(mca_coll_crux_module_t *module, const void *sbuf, const void *rbuf,
                       int count, ompi_datatype_t *dtype, coll_crux_staged_t *staged);
int coll_crux_stage_out(const coll_crux_staged_t *staged, void *rbuf);

/* the multipath engine's group of a communicator, built on first use; NULL
 * when it cannot be had (coll_crux_group.c) */
struct crux_engine_group *coll_crux_engine_group(mca_coll_crux_module_t *module);
/* This machine's topology, loaded once (coll_crux_topo.c); NULL when it
 * cannot be. */
struct crux_topo;
const struct crux_topo *coll_crux_topo(void);
/* Give an engine group the topology's GPU paths (coll_crux_device.c). */
void coll_crux_device_topo(struct crux_engine_group *group);
/* An engine group over 'oob' with the component's settings (collective). */
crux_status_t coll_crux_engine_group_create(const crux_coll_oob_t *oob,
                                            struct crux_engine_group **group);
/* Whether the engine group exists and carries host calls over its lanes. */
bool coll_crux_engine_lanes(mca_coll_crux_module_t *module);

/* The job level's network settings, as the priority file last gave them. */
crux_net_level_t coll_crux_job_net_level(void);
/* The job's "route" in the priority file as last read ("" when absent or
 * longer than size); false when the job reads no priority file. */
bool coll_crux_job_route(char *out, size_t size);
#define COLL_CRUX_ROUTE_MAX 4097 /* a priority file's longest token, and its end */
/* The host names of the cross communicator's ranks, in rank order, for
 * the planned paths of a route (coll_crux_route.c; crux_net_open_t's
 * hosts); NULL without memory (free it, not the names). */
const char **coll_crux_route_hosts(ompi_communicator_t *cross);

/* The channel of a layout's inter-node step (coll_crux_net.c): opened by
 * crux_net_open once the layout is built (collective over its cross
 * communicator); before each call made again on a new route
 * (crux_net_follow_route) and marked with the job's current level
 * (crux_net_mark), collective over the cross communicator too. */
void coll_crux_net_open(mca_coll_crux_layout_t *layout, ompi_communicator_t *comm);
void coll_crux_net_mark(mca_coll_crux_layout_t *layout, ompi_communicator_t *comm);

/* One call's inter-group step over a layout: the cross communicator's own
 * Allreduces (coll_crux_hier.c), which libcrux_coll runs the way
 * crux_layout_step chooses. */
typedef struct {
    ompi_communicator_t *cross;
    ompi_datatype_t *dtype;
    struct ompi_op_t *op;
} coll_crux_cross_arg_t;
typedef struct {
    mca_coll_crux_layout_t *layout;
    ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    coll_crux_cross_arg_t arg;
    crux_layout_cross_t cross;
} coll_crux_step_t;
/* The layout and its cross communicator's Allreduces as libcrux_coll's
 * targets, for an algorithm that 'needs' them (crux_alg_needs); its
 * channel marked with the job's level when it needs the channel. */
void coll_crux_hier_targets(coll_crux_step_t *step, unsigned needs, crux_allreduce_targets_t *t);

/* What a communicator asks of the Allreduce selection: the MCA
 * parameters' request, then its info keys "crux_allreduce_algorithm" (the
 * older single knob: every axis) and "crux_allreduce_<axis>" on top
 * (coll_crux_request.c). */
crux_request_t coll_crux_comm_request(ompi_communicator_t *comm);
/* The component's field the MCA parameter of the selection's axis 'axis'
 * (crux_request_axis) is registered on, as a value index. */
int *coll_crux_axis_storage(int axis);

/* datatype and op translation: 0 on success, -1 when crux has no kernel */
int coll_crux_dtype(ompi_datatype_t *dtype, crux_dtype_t *out);
int coll_crux_op(struct ompi_op_t *op, crux_op_t *out);

/* collectives */
int mca_coll_crux_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, ompi_communicator_t *comm,
                            mca_coll_base_module_t *module);

#define COLL_CRUX_VERBOSE(level, ...) \
    opal_output_verbose((level), mca_coll_crux_component.output, "coll:crux: " __VA_ARGS__)

END_C_DECLS

#endif
