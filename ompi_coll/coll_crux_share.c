/* Groups shared between communicators: libcrux_coll's sharing
 * (crux_share_acquire: the agreement, the limit and the release of the
 * least recently used group) given a communicator's process names,
 * whether this process's threads call collectives at once
 * (MPI_THREAD_MULTIPLE: then nothing is shared), and each kind's test of
 * a broken group; what happened said at verbosity 1 and 2.
 *
 * The calls of the communicators sharing a group go through it one after
 * the other, in each process's order; MPI has every process call the
 * blocking collectives of communicators over the same processes in one
 * order (else they may deadlock). */
#include <stdlib.h>
#include <string.h>

#include "ompi_config.h"

#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"

#include "ompi_coll/coll_crux.h"

static const char *const kind_names[COLL_CRUX_KINDS] = { "shared-memory", "engine",
                                                         "hierarchical" };

static uint64_t name_of(ompi_communicator_t *comm, int rank)
{
    const ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    uint64_t name = 0;
    memcpy(&name, &proc->super.proc_name,
           sizeof(name) < sizeof(proc->super.proc_name) ? sizeof(name)
                                                        : sizeof(proc->super.proc_name));
    return name;
}

static int shm_broken(void *group)
{
    return crux_coll_group_broken(group);
}

static int engine_broken(void *group)
{
    return crux_engine_group_broken(group);
}

static int layout_broken(void *group)
{
    const mca_coll_crux_layout_t *l = group;
    return crux_layout_broken(&l->super);
}

crux_status_t coll_crux_share_acquire(const coll_crux_share_request_t *req, crux_share_t **share)
{
    static int (*const broken[COLL_CRUX_KINDS])(void *) = { shm_broken, engine_broken,
                                                            layout_broken };
    int size = ompi_comm_size(req->comm);
    crux_share_how_t how;
    uint64_t *names = malloc((size_t)size * sizeof(*names));
    for (int r = 0; names != NULL && r < size; r++) {
        names[r] = name_of(req->comm, r);
    }
    const crux_share_request_t request = {
        .oob = req->oob,
        .names = names, /* NULL: takes part, proposes nothing */
        .kind = req->kind,
        .variant = req->variant,
        .pin = req->pin,
        .alone = ompi_mpi_thread_multiple,
        .build = req->build,
        .destroy = req->destroy,
        .broken = broken[req->kind],
        .arg = req->arg,
    };
    crux_status_t st = crux_share_acquire(&request, share, &how);
    free(names);
    if (how == CRUX_SHARE_MADE_ROOM) {
        COLL_CRUX_VERBOSE(2,
                          "communicator %s: the least recently used %s group over its processes "
                          "released to make room (crux's limit of %d)",
                          req->comm->c_name, kind_names[req->kind], CRUX_SHARE_MAX);
    }
    if (how == CRUX_SHARE_FULL) {
        COLL_CRUX_VERBOSE(1,
                          "communicator %s: a process holds %d %s groups already (crux's limit, "
                          "docs/design/resources.md)",
                          req->comm->c_name, CRUX_SHARE_MAX, kind_names[req->kind]);
    }
    return st;
}
