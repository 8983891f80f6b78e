/* The UCX channel between nodes (crux_net.h), for RDMA fabrics.
 *
 * Levels: a queue pair's service level and traffic class are fixed when
 * UCX creates it from its interface's configuration, so each level in use
 * has its own UCP context (configured with UCX_IB_SL and
 * UCX_IB_TRAFFIC_CLASS through ucp_config_modify on that context's own
 * configuration, never the process environment, which other UCX users in
 * the process share), worker and endpoints, made the first time a step
 * runs at that level.  Worker addresses go round the same out-of-band
 * allgather as the TCP channel's cards.
 *
 * Steps (their list and reduction: crux_net_step.c): member p's shard of
 * step s travels as one tagged message, tag (s << 20) | p, so a receive
 * can be posted for every peer at once and steps in flight never mix.
 * Endpoints are in peer error mode: a peer that dies fails every step that
 * still waits on it (CRUX_ERR_PEER), and a peer that closes its endpoints
 * after its last step fails nothing. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ucp/api/ucp.h>

#include "coll/net/crux_net_internal.h"
#include "coll/oob/crux_oob_internal.h"

#define UCX_RANK_BITS 20 /* members per channel: fewer than 2^20 */
/* How long closing waits for the endpoints to flush what they still hold,
 * and opening for them to be connected. */
#define UCX_CLOSE_TIMEOUT_S   10
#define UCX_CONNECT_TIMEOUT_S 30
/* The step number whose tags say hello on a new level: steps never reach
 * it (2^44 - 1 of them). */
#define UCX_HELLO_SEQ ((UINT64_C(1) << (64 - UCX_RANK_BITS)) - 1)

typedef struct net_ucx net_ucx_t;

typedef struct {
    net_ucx_t *net;
    int peer;
} ucx_ep_arg_t;

/* One level's UCX: its configuration stays to be read back. */
typedef struct {
    int sl, tc;
    ucp_config_t *config;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h *eps;      /* per member; NULL for this one */
    ucx_ep_arg_t *args; /* the endpoints' error handler arguments */
} ucx_level_t;

struct net_ucx {
    crux_net_t base;
    crux_coll_oob_t oob;
    ucx_level_t *levels;
    int nlevels, current;
    char *dead;     /* per member: its endpoint reported an error */
    int32_t *marks; /* room for every member's (sl, tc) */
    uint64_t seq;   /* steps started: the next one's number */
};

/* A step's send (index p) or receive (index size + p) with peer p. */
typedef struct {
    net_ucx_t *net;
    crux_net_op_t *op;
    ucp_worker_h worker;
    void *req; /* in flight; NULL once finished */
    int peer;
    int finished; /* set by a completion that came inside the posting call */
} ucx_req_t;

static ucp_tag_t tag_of(uint64_t seq, int sender)
{
    return (seq << UCX_RANK_BITS) | (ucp_tag_t)sender;
}

/* Whether a step in flight still waits on peer p. */
static int waits_on(const net_ucx_t *net, int p)
{
    for (const crux_net_op_t *op = net->base.head; op != NULL; op = op->next) {
        const ucx_req_t *r = op->xport;
        if (!op->done && r != NULL && (r[p].req != NULL || r[net->base.size + p].req != NULL)) {
            return 1;
        }
    }
    return 0;
}

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    (void)status;
    ucx_ep_arg_t *a = arg;
    a->net->dead[a->peer] = 1;
    if (waits_on(a->net, a->peer) && a->net->base.failed == CRUX_OK) {
        a->net->base.failed = CRUX_ERR_PEER;
    }
}

static void completed(ucx_req_t *r, void *request, ucs_status_t status)
{
    r->finished = 1;
    r->req = NULL;
    ucp_request_free(request);
    if (status != UCS_OK) {
        r->net->dead[r->peer] = 1;
        if (r->net->base.failed == CRUX_OK) {
            r->net->base.failed = CRUX_ERR_PEER;
        }
        return;
    }
    crux_net_passed(&r->net->base, r->op);
}

static void sent(void *request, ucs_status_t status, void *user_data)
{
    completed(user_data, request, status);
}

static void received(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                     void *user_data)
{
    (void)info;
    completed(user_data, request, status);
}

/* Track what a posting call returned: finished at once, failed, or in
 * flight with its callback to come. */
static crux_status_t track(net_ucx_t *net, ucx_req_t *r, ucs_status_ptr_t ptr)
{
    if (UCS_PTR_IS_ERR(ptr)) {
        return CRUX_ERR_IO;
    }
    if (ptr == NULL) {
        crux_net_passed(&net->base, r->op);
    } else if (!r->finished) {
        r->req = ptr;
    }
    return CRUX_OK;
}

static crux_status_t ucx_post(crux_net_t *base, crux_net_op_t *op)
{
    net_ucx_t *net = (net_ucx_t *)base;
    ucx_level_t *l = &net->levels[net->current];
    int size = base->size;
    ucx_req_t *reqs = calloc(2 * (size_t)size, sizeof(*reqs));
    if (reqs == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    op->xport = reqs;
    uint64_t seq = net->seq++;
    crux_status_t status = CRUX_OK;
    for (int p = 0; p < size && status == CRUX_OK; p++) {
        if (p == base->rank) {
            continue;
        }
        if (net->dead[p]) {
            return CRUX_ERR_PEER;
        }
        ucx_req_t *rr = &reqs[size + p], *sr = &reqs[p];
        *rr = (ucx_req_t){ .net = net, .op = op, .worker = l->worker, .peer = p };
        *sr = *rr;
        ucp_request_param_t rparam = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
            .cb.recv = received,
            .user_data = rr,
        };
        status = track(net, rr,
                       ucp_tag_recv_nbx(l->worker, crux_net_slot(op, p), op->bytes, tag_of(seq, p),
                                        (ucp_tag_t)-1, &rparam));
        if (status != CRUX_OK) {
            break;
        }
        ucp_request_param_t sparam = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
            .cb.send = sent,
            .user_data = sr,
        };
        status = track(
            net, sr,
            ucp_tag_send_nbx(l->eps[p], op->buf, op->bytes, tag_of(seq, base->rank), &sparam));
        base->sent += op->bytes;
    }
    return status;
}

/* Every level's worker: steps started before a level change still finish
 * on the context they started on. */
static void ucx_progress(crux_net_t *base)
{
    net_ucx_t *net = (net_ucx_t *)base;
    for (int i = 0; i < net->nlevels && base->failed == CRUX_OK; i++) {
        while (ucp_worker_progress(net->levels[i].worker) != 0 && base->failed == CRUX_OK) {
        }
    }
}

/* Progress 'worker' until 'req' is done, at most until 'deadline': its
 * status, UCS_INPROGRESS when it did not finish (it is released then, and
 * UCX frees it when it does). */
static ucs_status_t wait_request(ucp_worker_h worker, void *req, time_t deadline)
{
    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    ucs_status_t status;
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS && time(NULL) < deadline) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(req);
    return status;
}

static void level_close(net_ucx_t *net, ucx_level_t *l)
{
    /* a failed channel's peers may be gone: no flushing towards them */
    int force = net->base.failed != CRUX_OK;
    time_t deadline = time(NULL) + UCX_CLOSE_TIMEOUT_S;
    for (int p = 0; l->eps != NULL && p < net->base.size; p++) {
        if (l->eps[p] == NULL) {
            continue;
        }
        ucp_request_param_t param = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
            .flags = force || net->dead[p] ? UCP_EP_CLOSE_FLAG_FORCE : 0,
        };
        if (wait_request(l->worker, ucp_ep_close_nbx(l->eps[p], &param), deadline) ==
                UCS_INPROGRESS &&
            !param.flags) {
            param.flags = UCP_EP_CLOSE_FLAG_FORCE;
            (void)wait_request(l->worker, ucp_ep_close_nbx(l->eps[p], &param), deadline + 1);
        }
    }
    if (l->worker != NULL) {
        ucp_worker_destroy(l->worker);
    }
    if (l->context != NULL) {
        ucp_cleanup(l->context);
    }
    if (l->config != NULL) {
        ucp_config_release(l->config);
    }
    free(l->eps);
    free(l->args);
}

static void ucx_close(crux_net_t *base)
{
    net_ucx_t *net = (net_ucx_t *)base;
    /* steps that failed still have requests: no callback may come later
     * (a cancelled receive may call its callback at once, which frees it) */
    for (crux_net_op_t *op = base->head; op != NULL; op = op->next) {
        ucx_req_t *reqs = op->xport;
        for (int i = 0; reqs != NULL && i < 2 * base->size; i++) {
            void *req = reqs[i].req;
            if (req != NULL) {
                ucp_request_cancel(reqs[i].worker, req);
            }
            if (reqs[i].req != NULL) {
                reqs[i].req = NULL;
                ucp_request_free(req);
            }
        }
    }
    for (int i = 0; i < net->nlevels; i++) {
        level_close(net, &net->levels[i]);
    }
    free(net->levels);
    free(net->dead);
    free(net->marks);
}

/* A message each way with every peer on a level's new endpoints, so that
 * UCX has connected them when the level opens: a peer that dies while UCX
 * still exchanges its connection messages aborts this process inside UCX
 * 1.13 (a pending count assertion), where once connected it fails a step.
 * The worker is progressed throughout, as peers need its answers. */
static crux_status_t handshake(net_ucx_t *net, ucx_level_t *l, char *err, size_t errlen)
{
    static const uint64_t hello = 1; /* outlives a send left to a closing endpoint */
    int size = net->base.size;
    void **reqs = calloc(2 * (size_t)size, sizeof(*reqs));
    uint64_t *in = calloc((size_t)size, sizeof(*in));
    if (reqs == NULL || in == NULL) {
        free(reqs);
        free(in);
        snprintf(err, errlen, "out of memory");
        return CRUX_ERR_NO_MEMORY;
    }
    ucp_request_param_t param = { .op_attr_mask = 0 };
    for (int p = 0; p < size; p++) {
        if (p != net->base.rank) {
            reqs[p] = ucp_tag_recv_nbx(l->worker, &in[p], sizeof(*in), tag_of(UCX_HELLO_SEQ, p),
                                       (ucp_tag_t)-1, &param);
            reqs[size + p] = ucp_tag_send_nbx(l->eps[p], &hello, sizeof(hello),
                                              tag_of(UCX_HELLO_SEQ, net->base.rank), &param);
        }
    }
    crux_status_t status = CRUX_OK;
    time_t deadline = time(NULL) + UCX_CONNECT_TIMEOUT_S;
    for (int left = 1; left && status == CRUX_OK;) {
        left = 0;
        for (int i = 0; i < 2 * size && status == CRUX_OK; i++) {
            ucs_status_t us = reqs[i] == NULL           ? UCS_OK
                              : UCS_PTR_IS_ERR(reqs[i]) ? UCS_PTR_STATUS(reqs[i])
                                                        : ucp_request_check_status(reqs[i]);
            if (us == UCS_INPROGRESS && time(NULL) >= deadline) {
                us = UCS_ERR_TIMED_OUT;
            }
            if (us != UCS_OK && us != UCS_INPROGRESS) {
                snprintf(err, errlen, "connecting to member %d: %s", i % size,
                         ucs_status_string(us));
                status = CRUX_ERR_PEER;
            }
            left |= us == UCS_INPROGRESS;
        }
        if (left && status == CRUX_OK) {
            ucp_worker_progress(l->worker);
        }
    }
    /* a receive still posted is cancelled before its buffer goes; one that
     * will not let go keeps it */
    int keep = 0;
    for (int i = 0; i < 2 * size; i++) {
        if (reqs[i] == NULL || UCS_PTR_IS_ERR(reqs[i])) {
            continue;
        }
        if (ucp_request_check_status(reqs[i]) == UCS_INPROGRESS) {
            ucp_request_cancel(l->worker, reqs[i]);
            ucp_worker_progress(l->worker);
            keep |= i < size && ucp_request_check_status(reqs[i]) == UCS_INPROGRESS;
        }
        ucp_request_free(reqs[i]);
    }
    free(reqs);
    if (!keep) {
        free(in);
    }
    return status;
}

/* A level's context, worker and endpoints, collectively: every member
 * makes its own, the worker addresses go round, and the outcome is agreed. */
static crux_status_t level_open(net_ucx_t *net, ucx_level_t *l, int sl, int tc, char *err,
                                size_t errlen)
{
    const crux_coll_oob_t *oob = &net->oob;
    int size = net->base.size;
    char value[16], why[128];
    ucs_status_t us;
    *l = (ucx_level_t){ .sl = sl, .tc = tc };
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features = UCP_FEATURE_TAG,
    };
    ucp_worker_params_t wparams = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE,
    };
    ucp_address_t *address = NULL;
    size_t length = 0;
    l->eps = calloc((size_t)size, sizeof(*l->eps));
    l->args = calloc((size_t)size, sizeof(*l->args));
    if (l->eps == NULL || l->args == NULL) {
        us = UCS_ERR_NO_MEMORY;
        snprintf(err, errlen, "out of memory");
    } else if ((us = ucp_config_read(NULL, NULL, &l->config)) != UCS_OK) {
        snprintf(err, errlen, "ucp_config_read: %s", ucs_status_string(us));
    } else if (snprintf(value, sizeof(value), "%d", sl) < 0 ||
               (us = ucp_config_modify(l->config, "IB_SL", value)) != UCS_OK ||
               snprintf(value, sizeof(value), "%d", tc) < 0 ||
               (us = ucp_config_modify(l->config, "IB_TRAFFIC_CLASS", value)) != UCS_OK) {
        snprintf(err, errlen, "ucp_config_modify: %s", ucs_status_string(us));
    } else if (!crux_net_rdma_available(why, sizeof(why)) &&
               (us = ucp_config_modify(l->config, "ZCOPY_THRESH", "inf")) != UCS_OK) {
        /* no RDMA device: UCX's tcp carries the steps, and its zero-copy
         * send completes twice when the peer is gone (an assertion in
         * UCX 1.13 and later): copies instead */
        snprintf(err, errlen, "ucp_config_modify: %s", ucs_status_string(us));
    } else if ((us = ucp_init(&params, l->config, &l->context)) != UCS_OK) {
        snprintf(err, errlen, "ucp_init: %s", ucs_status_string(us));
    } else if ((us = ucp_worker_create(l->context, &wparams, &l->worker)) != UCS_OK) {
        snprintf(err, errlen, "ucp_worker_create: %s", ucs_status_string(us));
    } else if ((us = ucp_worker_get_address(l->worker, &address, &length)) != UCS_OK) {
        snprintf(err, errlen, "ucp_worker_get_address: %s", ucs_status_string(us));
    }
    /* the longest address, then every address padded to it */
    uint64_t mine[2] = { (uint64_t)(us == UCS_OK ? CRUX_OK : CRUX_ERR_NO_RESOURCE), length };
    uint64_t *lens = calloc((size_t)size, sizeof(mine));
    crux_status_t status = CRUX_ERR_PEER;
    size_t longest = 0;
    if (lens != NULL && oob->allgather(mine, lens, sizeof(mine), oob->arg) == 0) {
        status = CRUX_OK;
        for (int p = 0; p < size; p++) {
            status = status != CRUX_OK ? status : (crux_status_t)(int64_t)lens[2 * p];
            longest = lens[2 * p + 1] > longest ? lens[2 * p + 1] : longest;
        }
    }
    unsigned char *card = NULL, *all = NULL;
    if (status == CRUX_OK) {
        card = calloc(1, longest);
        all = calloc((size_t)size, longest);
        status = crux_oob_agree(oob, card != NULL && all != NULL ? CRUX_OK : CRUX_ERR_NO_MEMORY, 1,
                                NULL);
    }
    if (status == CRUX_OK) {
        memcpy(card, address, length);
        status = oob->allgather(card, all, longest, oob->arg) == 0 ? CRUX_OK : CRUX_ERR_PEER;
    }
    for (int p = 0; p < size && status == CRUX_OK; p++) {
        if (p == net->base.rank) {
            continue;
        }
        l->args[p] = (ucx_ep_arg_t){ net, p };
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                          UCP_EP_PARAM_FIELD_ERR_HANDLER,
            .address = (const ucp_address_t *)(all + (size_t)p * longest),
            .err_mode = UCP_ERR_HANDLING_MODE_PEER,
            .err_handler = { ep_error, &l->args[p] },
        };
        if ((us = ucp_ep_create(l->worker, &ep, &l->eps[p])) != UCS_OK) {
            l->eps[p] = NULL;
            snprintf(err, errlen, "ucp_ep_create to member %d: %s", p, ucs_status_string(us));
            status = CRUX_ERR_PEER;
        }
    }
    status = crux_oob_agree(oob, status, 1, NULL);
    if (status == CRUX_OK) {
        status = handshake(net, l, err, errlen);
    }
    if (address != NULL) {
        ucp_worker_release_address(l->worker, address);
    }
    free(lens);
    free(card);
    free(all);
    return crux_oob_agree(oob, status, 1, NULL);
}

static const crux_net_ops_t ucx_ops;

crux_status_t crux_net_ucx_create(const crux_coll_oob_t *oob, const crux_net_level_t *level,
                                  crux_net_t **net_p, char *err, size_t errlen)
{
    *net_p = NULL;
    err[0] = '\0';
    if (oob->size >= (1 << UCX_RANK_BITS)) {
        snprintf(err, errlen, "more than %d members", (1 << UCX_RANK_BITS) - 1);
        return CRUX_ERR_INVALID; /* alike on every member: no agreement needed */
    }
    net_ucx_t *net = calloc(1, sizeof(*net));
    crux_status_t status = CRUX_ERR_NO_MEMORY;
    if (net != NULL) {
        crux_net_init(&net->base, &ucx_ops, CRUX_NET_UCX, oob->rank, oob->size);
        net->oob = *oob;
        snprintf(net->base.address, sizeof(net->base.address), "ucx");
        net->levels = calloc(1, sizeof(*net->levels));
        net->dead = calloc((size_t)oob->size, 1);
        net->marks = calloc((size_t)oob->size, 2 * sizeof(*net->marks));
        if (net->levels != NULL && net->dead != NULL && net->marks != NULL) {
            status = CRUX_OK;
        } else {
            snprintf(err, errlen, "out of memory");
        }
    }
    status = crux_oob_agree(oob, status, 1, NULL);
    int32_t mine[2];
    crux_net_rdma_marks(level, &mine[0], &mine[1]);
    if (status == CRUX_OK && oob->allgather(mine, net->marks, sizeof(mine), oob->arg) != 0) {
        status = CRUX_ERR_PEER;
    }
    if (status == CRUX_OK) {
        /* member 0's level, as crux_net_set_level takes it */
        net->nlevels = 1; /* closed below even when half made */
        status = level_open(net, &net->levels[0], net->marks[0], net->marks[1], err, errlen);
    }
    if (status != CRUX_OK) {
        crux_net_destroy(&net->base);
        return status;
    }
    *net_p = &net->base;
    return CRUX_OK;
}

static int ucx_set_level(crux_net_t *base, const crux_net_level_t *level)
{
    net_ucx_t *net = (net_ucx_t *)base;
    if (base->failed != CRUX_OK) {
        return base->failed;
    }
    /* member 0's level for everyone */
    int32_t mine[2];
    crux_net_rdma_marks(level, &mine[0], &mine[1]);
    if (net->oob.allgather(mine, net->marks, sizeof(mine), net->oob.arg) != 0) {
        base->failed = CRUX_ERR_PEER;
        return CRUX_ERR_PEER;
    }
    int sl = net->marks[0], tc = net->marks[1], found = -1;
    for (int i = 0; i < net->nlevels && found < 0; i++) {
        found = net->levels[i].sl == sl && net->levels[i].tc == tc ? i : -1;
    }
    if (found == net->current) {
        return 0;
    }
    if (found < 0) {
        ucx_level_t *more = realloc(net->levels, (size_t)(net->nlevels + 1) * sizeof(*more));
        crux_status_t status =
            crux_oob_agree(&net->oob, more != NULL ? CRUX_OK : CRUX_ERR_NO_MEMORY, 1, NULL);
        if (more != NULL) {
            net->levels = more;
        }
        if (status != CRUX_OK) {
            return status;
        }
        char err[256];
        ucx_level_t *l = &net->levels[net->nlevels++];
        status = level_open(net, l, sl, tc, err, sizeof(err));
        if (status != CRUX_OK) {
            level_close(net, l);
            net->nlevels--;
            return status;
        }
        found = net->nlevels - 1;
    }
    net->current = found;
    return 1;
}

/* The value 'key' (IB_SL, IB_TRAFFIC_CLASS) has in a configuration, as UCX
 * prints it; -1 when it has none. */
static int config_value(const ucp_config_t *config, const char *key)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (f == NULL) {
        return -1;
    }
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(f);
    int value = -1;
    size_t klen = strlen(key);
    for (char *line = text; line != NULL && *line;) {
        char *end = strchr(line, '\n');
        const char *name = strncmp(line, "UCX_", 4) == 0 ? line + 4 : line;
        if (strncmp(name, key, klen) == 0 && name[klen] == '=') {
            value = atoi(name + klen + 1);
        }
        line = end != NULL ? end + 1 : NULL;
    }
    free(text);
    return value;
}

crux_status_t crux_net_ucx_context(const crux_net_t *base, int *index, int *contexts, int *sl,
                                   int *traffic_class)
{
    if (base->kind != CRUX_NET_UCX) {
        return CRUX_ERR_UNSUPPORTED;
    }
    const net_ucx_t *net = (const net_ucx_t *)base;
    const ucx_level_t *l = &net->levels[net->current];
    *index = net->current;
    *contexts = net->nlevels;
    *sl = config_value(l->config, "IB_SL");
    *traffic_class = config_value(l->config, "IB_TRAFFIC_CLASS");
    return CRUX_OK;
}

static const crux_net_ops_t ucx_ops = {
    .post = ucx_post,
    .progress = ucx_progress,
    .set_level = ucx_set_level,
    .close = ucx_close,
};
