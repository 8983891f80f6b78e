/* crux-sched daemon: jobs register in a spool directory, one file per job,
 *   <id>.job      a job object as in the job list (figures may be missing
 *                 when a profile gives them; "id" defaults to <id>)
 *   <id>.profile  the job's measured profile (crux_profile.h)
 *   <id>.end      deregistration: the daemon removes the job's files
 * (deleting <id>.job and <id>.profile deregisters too).  Files starting
 * with '.' are ignored, so writers can create them hidden and rename.  On
 * every change (inotify) the daemon replans and rewrites the priority file
 * atomically, --settle-ms after the change: changes meanwhile are planned
 * with it, and no later change postpones it.
 *
 * With --profiles DIR, jobs' profiles may also come from DIR, a directory
 * the jobs themselves write (the spool stays writable by the batch system
 * only): DIR/<id>.profile counts only for a job registered in the spool
 * with a "uid", and only when that user owns the file.  A job with neither
 * figures nor a profile yet is planned from --default-compute-s and
 * --default-bytes.  Every user can create files in DIR, so its events are
 * handled apart from the spool's: only <id>.profile of a registered job
 * counts, the directory is looked at no more often than every
 * PROFILE_LOOK_MS, and a replan for a profile waits at least as long as the
 * last plan took, so that no user's churn there can hold or swamp the
 * daemon. */
#define _GNU_SOURCE /* strverscmp */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crux_version.h"
#include "sched/crux_prio.h"
#include "sched/crux_profile.h"
#include "sched/runtime/crux_prio_util.h"
#include "sched/tool/crux_sched_tool.h"

static const char daemon_usage[] =
    "usage: crux-sched daemon --spool DIR --cluster FILE --out PRIOFILE [OPTIONS]\n"
    "Watches DIR for <id>.job, <id>.profile and <id>.end files and replans on every\n"
    "change; each stderr line starts with the UTC time.\n"
    "  --levels K, --reserve R, --orders M, --seed S, --priorities MODEL\n"
    "                          as for crux-sched plan\n"
    "  --policy NAME           who decides paths and levels, one of crux-sim's policies\n"
    "                          a priority file can carry: crux-full, crux-full-paper,\n"
    "                          crux-pa, crux-ps, crux-ps-pa, crux-pa-net, crux-ps-pa-net,\n"
    "                          taccl, none (default: crux-sched plan's, as --priorities\n"
    "                          says: crux-full-paper, or crux-full with network)\n"
    "  --report FILE           rewrite a text report after each plan\n"
    "  --settle-ms N           replan N ms after a change, 0-60000 (200)\n"
    "  --once                  process the spool once and exit (2 if a file was rejected)\n"
    "  --profiles DIR2         also read <id>.profile of registered jobs from DIR2,\n"
    "                          when the job's \"uid\" owns the file\n"
    "  --default-compute-s S   compute_s of a job with no figures and no profile yet,\n"
    "                          1e-6-1e6 (1)\n"
    "  --default-bytes B       its allreduce_bytes, 0-1e15 (1e8)\n"
    "Exit status: 0 success (or stopped by SIGINT/SIGTERM), 1 runtime failure,\n"
    "2 usage or input error.\n";

typedef struct {
    char id[256];
    int has_job, has_prof;
    tool_job_t job;
    crux_profile_t prof;
    int prof_from_user;         /* the profile came from --profiles */
    crux_sched_place_t *pplace; /* placement built from the profile */
    int nplace;
} entry_t;

/* How often, at most, the profile directory's events are read. */
#define PROFILE_LOOK_MS 50

/* A registered job's profile in --profiles as last planned: its identity,
 * to tell whether it changed when the directory's events were lost. */
typedef struct {
    char id[256];
    int exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} registered_t;

typedef struct {
    const char *spool, *out, *report, *profiles;
    double default_compute_s, default_bytes;
    const crux_sched_cluster_t *c;
    const crux_sched_nettable_t *table;
    crux_sched_options_t o;
    int policy;        /* crux_sched_policy_t, or -1: crux_sched_plan_run */
    registered_t *reg; /* the jobs of the last plan, sorted by id */
    int nreg;
} daemon_t;

static volatile sig_atomic_t stop; /* the signal that stopped the daemon */

static void on_signal(int sig)
{
    stop = sig;
}

static int has_suffix(const char *s, const char *suf, size_t *base)
{
    size_t n = strlen(s), k = strlen(suf);
    if (n <= k || strcmp(s + n - k, suf) != 0)
        return 0;
    *base = n - k;
    return 1;
}

static entry_t *entry_for(entry_t **es, int *n, int *cap, const char *id)
{
    for (int i = 0; i < *n; i++)
        if (strcmp((*es)[i].id, id) == 0)
            return &(*es)[i];
    if (*n == *cap) {
        int ncap = *cap ? 2 * *cap : 64;
        entry_t *p = realloc(*es, (size_t)ncap * sizeof(*p));
        if (p == NULL)
            return NULL;
        *es = p;
        *cap = ncap;
    }
    entry_t *e = &(*es)[(*n)++];
    memset(e, 0, sizeof(*e));
    snprintf(e->id, sizeof(e->id), "%s", id);
    return e;
}

static void remove_job(const daemon_t *d, const char *id)
{
    static const char *const suf[] = { ".job", ".profile", ".end" };
    char path[4096];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s%s", d->spool, id, suf[i]);
        unlink(path);
    }
    if (d->profiles) {
        snprintf(path, sizeof(path), "%s/%s.profile", d->profiles, id);
        unlink(path);
    }
}

/* The profile a registered job wrote into --profiles: 1 when loaded, 0
 * when there is none, -1 when it was refused (said on stderr). */
static int load_user_profile(const daemon_t *d, entry_t *e)
{
    char path[4096], err[512];
    snprintf(path, sizeof(path), "%s/%s.profile", d->profiles, e->id);
    char *text;
    size_t len;
    struct stat st;
    crux_status_t s =
        prio_read_max(path, 1 << 20, PRIO_READ_NOFOLLOW, &text, &len, &st, err, sizeof(err));
    if (s == CRUX_ERR_NOT_FOUND)
        return 0;
    if (s != CRUX_OK) {
        tool_log("%s", err);
        return -1;
    }
    int rc = -1;
    if (!e->job.has_uid)
        tool_error(path, 0, "job %s was registered without a \"uid\": profile ignored", e->id);
    else if (st.st_uid != (uid_t)e->job.uid)
        tool_error(path, 0, "owned by uid %u, not by the job's owner %d: ignored",
                   (unsigned)st.st_uid, e->job.uid);
    else if (st.st_nlink != 1) /* a hard link to a file of the owner's, made by another */
        tool_error(path, 0, "%lu hard links, not 1: ignored", (unsigned long)st.st_nlink);
    else if (crux_profile_parse(text, len, path, &e->prof, err, sizeof(err)) != CRUX_OK)
        tool_log("%s", err);
    else if (strcmp(e->prof.job, e->id) != 0) {
        tool_error(path, 1, "job \"%s\" differs from the file name", e->prof.job);
        crux_profile_clear(&e->prof);
    } else
        rc = 1;
    free(text);
    return rc;
}

/* The placement a profile gives (its ranks per host, on each host's first
 * GPUs), into e->pplace; names of one host (its own and the batch system's)
 * count as one.  0, or -1 when a host is unknown or has fewer GPUs than
 * ranks (said, naming the file). */
static int profile_placement(const crux_sched_cluster_t *c, entry_t *e, const char *path)
{
    int n = 0, *ranks = calloc((size_t)e->prof.nhosts, sizeof(int));
    e->pplace = calloc((size_t)e->prof.nhosts, sizeof(*e->pplace));
    if (e->pplace == NULL || ranks == NULL) {
        free(ranks);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < e->prof.nhosts && rc == 0; i++) {
        int h = crux_sched_cluster_find_host(c, e->prof.hosts[i]), k = 0;
        crux_sched_host_info_t hi;
        while (k < n && e->pplace[k].host != h)
            k++;
        if (h >= 0 && k == n)
            e->pplace[n++].host = h;
        if (h < 0 || crux_sched_host_info(c, h, &hi) != CRUX_OK ||
            (ranks[k] += e->prof.host_ranks[i]) > hi.gpus) {
            tool_error(path, 0, "unknown host \"%s\" or more ranks than it has GPUs",
                       e->prof.hosts[i]);
            rc = -1;
        }
    }
    for (int k = 0; k < n; k++)
        e->pplace[k].gpus = ranks[k] >= 64 ? ~0ULL : (1ULL << ranks[k]) - 1;
    free(ranks);
    e->nplace = rc == 0 ? n : 0;
    return rc;
}

/* Complete a job from its profile: the placement (its ranks per host
 * replace the registration's approximate one), compute, overlap, bytes;
 * -1, changing nothing, when its placement is refused. */
static int apply_profile(const crux_sched_cluster_t *c, entry_t *e, const char *path)
{
    crux_profile_iter_t it;
    crux_profile_per_iteration(&e->prof, &it);
    crux_sched_job_t *j = &e->job.job;
    if (profile_placement(c, e, path) != 0)
        return -1;
    j->placement = e->pplace;
    j->nplacement = e->nplace;
    if (!e->job.has_compute)
        j->compute_s = it.compute_s;
    if (!e->job.has_overlap)
        j->overlap = it.overlap;
    if (!e->job.has_bytes && j->nflows == 0)
        j->allreduce_bytes = it.bytes;
    return 0;
}

/* Ids in the order a batch system gives them ("9" before "10"): the plan's
 * job order, which TACCL* routes in. */
static int by_id(const void *a, const void *b)
{
    return strverscmp(((const entry_t *)a)->id, ((const entry_t *)b)->id);
}

/* The identity of a registered job's file in --profiles, into r. */
static void profile_identity(const daemon_t *d, registered_t *r)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s.profile", d->profiles, r->id);
    r->exists = lstat(path, &st) == 0;
    r->dev = r->exists ? st.st_dev : 0;
    r->ino = r->exists ? st.st_ino : 0;
    r->size = r->exists ? st.st_size : 0;
    r->mtime = r->exists ? st.st_mtim : (struct timespec){ 0, 0 };
}

/* The jobs registered in the spool, sorted (es is), and the identity of
 * their profiles in --profiles. */
static void remember_registered(daemon_t *d, const entry_t *es, int n)
{
    free(d->reg);
    d->reg = NULL;
    d->nreg = 0;
    if (!d->profiles || n == 0 || (d->reg = calloc((size_t)n, sizeof(*d->reg))) == NULL)
        return;
    for (int i = 0; i < n; i++) {
        if (!es[i].has_job)
            continue;
        registered_t *r = &d->reg[d->nreg++];
        snprintf(r->id, sizeof(r->id), "%s", es[i].id);
        profile_identity(d, r);
    }
}

static int by_reg_id(const void *key, const void *r)
{
    return strverscmp(key, ((const registered_t *)r)->id);
}

/* Whether a name in the profile directory is a registered job's profile. */
static int is_registered_profile(const daemon_t *d, const char *name)
{
    size_t base;
    char id[256];
    if (name[0] == '.' || !has_suffix(name, ".profile", &base) || base >= sizeof(id))
        return 0;
    snprintf(id, sizeof(id), "%.*s", (int)base, name);
    return bsearch(id, d->reg, (size_t)d->nreg, sizeof(*d->reg), by_reg_id) != NULL;
}

/* Whether any registered job's profile changed since the last plan (when
 * the directory's events were lost: one lstat per job). */
static int registered_profiles_changed(const daemon_t *d)
{
    for (int i = 0; i < d->nreg; i++) {
        registered_t now = d->reg[i];
        profile_identity(d, &now);
        const registered_t *was = &d->reg[i];
        if (now.exists != was->exists || now.dev != was->dev || now.ino != was->ino ||
            now.size != was->size || now.mtime.tv_sec != was->mtime.tv_sec ||
            now.mtime.tv_nsec != was->mtime.tv_nsec)
            return 1;
    }
    return 0;
}

/* Read the spool, plan, write.  Returns TOOL_INPUT when a file was
 * rejected (the others are still planned), TOOL_RUNTIME on failure. */
static int replan(daemon_t *d)
{
    DIR *dir = opendir(d->spool);
    if (dir == NULL) {
        tool_error(d->spool, 0, "%s", strerror(errno));
        return TOOL_RUNTIME;
    }
    entry_t *es = NULL;
    int n = 0, cap = 0, rejected = 0, rc = TOOL_OK;
    char path[4096], id[256];
    struct dirent *de;
    /* deregistrations first */
    while ((de = readdir(dir)) != NULL) {
        size_t base;
        if (de->d_name[0] != '.' && has_suffix(de->d_name, ".end", &base) && base < sizeof(id)) {
            snprintf(id, sizeof(id), "%.*s", (int)base, de->d_name);
            remove_job(d, id);
            tool_log("crux-sched daemon: job %s deregistered", id);
        }
    }
    rewinddir(dir);
    tool_round_begin(); /* a file refused as before is not named again */
    while ((de = readdir(dir)) != NULL) {
        size_t base;
        int is_job = has_suffix(de->d_name, ".job", &base);
        int is_prof = !is_job && has_suffix(de->d_name, ".profile", &base);
        if (de->d_name[0] == '.' || (!is_job && !is_prof) || base >= sizeof(id))
            continue;
        snprintf(id, sizeof(id), "%.*s", (int)base, de->d_name);
        snprintf(path, sizeof(path), "%s/%s", d->spool, de->d_name);
        entry_t *e = entry_for(&es, &n, &cap, id);
        if (e == NULL) {
            rc = TOOL_RUNTIME;
            break;
        }
        char err[512];
        if (is_job) {
            tool_doc_t doc;
            if (tool_doc_load(&doc, path) != TOOL_OK) {
                rejected++;
            } else if (tool_job_parse(doc.root, d->c, 1, &e->job, err, sizeof(err)) != 0) {
                tool_error(path, 1, "%s", err);
                tool_job_free(&e->job);
                rejected++;
            } else if (e->job.id[0] && strcmp(e->job.id, id) != 0) {
                tool_error(path, 1, "id \"%s\" differs from the file name", e->job.id);
                tool_job_free(&e->job);
                rejected++;
            } else {
                e->has_job = 1;
            }
            tool_doc_free(&doc);
        } else if (crux_profile_load(path, &e->prof, err, sizeof(err)) != CRUX_OK) {
            tool_log("%s", err);
            rejected++;
        } else if (strcmp(e->prof.job, id) != 0) {
            tool_error(path, 1, "job \"%s\" differs from the file name", e->prof.job);
            crux_profile_clear(&e->prof);
            rejected++;
        } else {
            e->has_prof = 1;
        }
    }
    closedir(dir);
    for (int i = 0; rc == TOOL_OK && d->profiles && i < n; i++) {
        if (!es[i].has_job || es[i].has_prof)
            continue;
        int got = load_user_profile(d, &es[i]);
        es[i].has_prof = es[i].prof_from_user = got > 0;
        rejected += got < 0;
    }
    if (n > 1) /* readdir order is arbitrary; es is NULL when the spool is empty */
        qsort(es, (size_t)n, sizeof(*es), by_id);
    crux_sched_plan_t *plan = rc == TOOL_OK ? crux_sched_plan_new(d->c) : NULL;
    int *uids = malloc((size_t)(n ? n : 1) * sizeof(*uids)); /* in the plan's order */
    if (rc == TOOL_OK && (plan == NULL || uids == NULL))
        rc = TOOL_RUNTIME;
    for (int i = 0; rc == TOOL_OK && i < n; i++) {
        entry_t *e = &es[i];
        if (!e->has_job && !e->has_prof)
            continue;
        snprintf(path, sizeof(path), "%s/%s.%s", d->spool, e->id, e->has_job ? "job" : "profile");
        snprintf(e->job.id, sizeof(e->job.id), "%s", e->id);
        e->job.job.id = e->job.id;
        char err[512], prof_path[4096];
        snprintf(prof_path, sizeof(prof_path), "%s/%s.profile",
                 e->prof_from_user ? d->profiles : d->spool, e->id);
        if (e->has_prof && apply_profile(d->c, e, prof_path) != 0) {
            rejected++;
            if (e->job.job.placement == NULL)
                continue;
            e->has_prof = 0; /* planned from its registration alone */
        }
        if (!e->has_prof && e->job.job.placement == NULL) {
            tool_error(path, 1, "job %s: no placement, and no profile yet", e->id);
            rejected++;
            continue;
        }
        /* registered, not measured yet: planned from the defaults */
        if (!e->has_prof && !e->job.has_compute)
            e->job.job.compute_s = d->default_compute_s;
        if (!e->has_prof && !e->job.has_bytes && e->job.job.nflows == 0)
            e->job.job.allreduce_bytes = d->default_bytes;
        int at = crux_sched_plan_jobs(plan);
        if (crux_sched_plan_add_job(plan, &e->job.job, NULL, err, sizeof(err)) != CRUX_OK) {
            tool_error(path, 1, "%s", err);
            rejected++;
        } else {
            uids[at] = e->has_job && e->job.has_uid ? e->job.uid : -1;
        }
    }
    tool_round_end();
    if (rc == TOOL_OK) {
        crux_status_t st = d->policy >= 0
                               ? crux_sched_plan_policy(plan, (crux_sched_policy_t)d->policy, &d->o)
                               : crux_sched_plan_run(plan, &d->o);
        char comment[256];
        snprintf(comment, sizeof(comment), "written by crux-sched daemon from %s%s%s", d->spool,
                 d->policy >= 0 ? ", policy " : "",
                 d->policy >= 0 ? crux_sched_policy_name((crux_sched_policy_t)d->policy) : "");
        if (st != CRUX_OK) {
            tool_error(d->spool, 0, "planning failed: %s", crux_status_string(st));
            rc = TOOL_RUNTIME;
        } else {
            rc = tool_write_priorities(plan, d->table, d->o.levels, d->o.reserve, uids, d->out,
                                       comment);
        }
        if (rc == TOOL_OK && d->report)
            rc = tool_write_report(plan, d->c, d->table, d->o.levels, d->o.reserve, d->report, 0,
                                   "crux-sched daemon");
        if (rc == TOOL_OK)
            tool_log("crux-sched daemon: planned %d job%s (%d file%s rejected), wrote %s",
                     crux_sched_plan_jobs(plan), crux_sched_plan_jobs(plan) == 1 ? "" : "s",
                     rejected, rejected == 1 ? "" : "s", d->out);
    }
    crux_sched_plan_free(plan);
    free(uids);
    if (rc != TOOL_RUNTIME)
        remember_registered(d, es, n);
    for (int i = 0; i < n; i++) {
        tool_job_free(&es[i].job);
        crux_profile_clear(&es[i].prof);
        free(es[i].pplace);
    }
    free(es);
    return rc == TOOL_OK && rejected ? TOOL_INPUT : rc;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads of events at most per look: a directory whose events come faster
 * than they are read must not keep the daemon reading (the rest waits, or
 * overflows the kernel's queue, which is noticed). */
#define MAX_READS 64

/* Drain the spool's events: 1 when there was one. */
static int spool_changed(int fd)
{
    char buf[16384];
    int any = 0;
    for (int i = 0; i < MAX_READS && read(fd, buf, sizeof(buf)) > 0; i++)
        any = 1;
    return any;
}

/* Drain the profile directory's events: 1 when one was about a registered
 * job's profile (or events were lost and such a profile changed). */
static int profiles_changed(const daemon_t *d, int fd)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    int hit = 0, lost = 0;
    ssize_t n;
    for (int i = 0; i < MAX_READS && (n = read(fd, buf, sizeof(buf))) > 0; i++) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            lost |= (ev->mask & IN_Q_OVERFLOW) != 0;
            hit |= ev->len > 0 && !hit && is_registered_profile(d, ev->name);
            p += sizeof(*ev) + ev->len;
        }
    }
    return hit || (lost && registered_profiles_changed(d));
}

/* Wait for changes in the spool (and the profile directory) and replan,
 * until SIGINT or SIGTERM.  A replan comes settle_ms after the first change
 * not yet planned; one for a profile also waits, from the end of the last
 * plan, as long as that plan took. */
static int watch(daemon_t *d, int settle_ms)
{
    const uint32_t events = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE;
    int sfd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK), pfd = -1;
    const char *bad = NULL;
    if (sfd < 0 || inotify_add_watch(sfd, d->spool, events) < 0)
        bad = d->spool;
    else if (d->profiles && ((pfd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) < 0 ||
                             inotify_add_watch(pfd, d->profiles, events) < 0))
        bad = d->profiles;
    if (bad != NULL) {
        tool_error(bad, 0, "cannot watch: %s", strerror(errno));
        if (sfd >= 0)
            close(sfd);
        if (pfd >= 0)
            close(pfd);
        return TOOL_RUNTIME;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal; /* no SA_RESTART: poll returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    tool_log("crux-sched daemon: version %s, watching %s%s%s, %d levels (%d reserved), writing %s",
             crux_version(), d->spool, d->profiles ? " and " : "", d->profiles ? d->profiles : "",
             d->o.levels, d->o.reserve, d->out);
    int64_t t0 = mono_ms();
    int rc = replan(d);
    int64_t plan_ms = mono_ms() - t0, planned_at = mono_ms();
    if (rc == TOOL_RUNTIME) {
        close(sfd);
        if (pfd >= 0)
            close(pfd);
        return rc;
    }
    /* the times at which the oldest unplanned change of each kind came
     * (-1: none), and when the profile directory may be read next */
    int64_t spool_since = -1, prof_since = -1, prof_look = 0;
    while (!stop) {
        int64_t now = mono_ms(), due = -1;
        if (spool_since >= 0)
            due = spool_since + settle_ms;
        if (prof_since >= 0) {
            int64_t prof_due = prof_since + settle_ms, after = planned_at + plan_ms;
            prof_due = prof_due > after ? prof_due : after;
            due = due < 0 || prof_due < due ? prof_due : due;
        }
        if (due >= 0 && now >= due) {
            t0 = now;
            if (replan(d) == TOOL_RUNTIME)
                tool_log("crux-sched daemon: keeping the previous priority file");
            planned_at = mono_ms();
            plan_ms = planned_at - t0;
            spool_since = prof_since = -1;
            continue;
        }
        /* the profile directory is left unread until prof_look */
        int look = pfd >= 0 && now >= prof_look;
        int64_t wait = due >= 0 ? due - now : -1;
        if (pfd >= 0 && !look && (wait < 0 || prof_look - now < wait))
            wait = prof_look - now;
        struct pollfd p[2] = { { sfd, POLLIN, 0 }, { look ? pfd : -1, POLLIN, 0 } };
        if (poll(p, 2, wait < 0 ? -1 : wait > INT_MAX ? INT_MAX : (int)wait) <= 0)
            continue;
        now = mono_ms();
        if ((p[0].revents & POLLIN) && spool_changed(sfd) && spool_since < 0)
            spool_since = now;
        if (p[1].revents & POLLIN) {
            if (profiles_changed(d, pfd) && prof_since < 0)
                prof_since = now;
            prof_look = now + PROFILE_LOOK_MS;
        }
    }
    close(sfd);
    if (pfd >= 0)
        close(pfd);
    tool_log("crux-sched daemon: stopped by %s", stop == SIGINT ? "SIGINT" : "SIGTERM");
    return TOOL_OK;
}

int tool_daemon(int argc, char **argv)
{
    static const struct option opts[] = { { "spool", required_argument, NULL, 'd' },
                                          { "cluster", required_argument, NULL, 'c' },
                                          { "out", required_argument, NULL, 'o' },
                                          { "levels", required_argument, NULL, 'k' },
                                          { "reserve", required_argument, NULL, 'r' },
                                          { "orders", required_argument, NULL, 'm' },
                                          { "seed", required_argument, NULL, 's' },
                                          { "priorities", required_argument, NULL, 'N' },
                                          { "policy", required_argument, NULL, 'Y' },
                                          { "report", required_argument, NULL, 'R' },
                                          { "settle-ms", required_argument, NULL, 'S' },
                                          { "once", no_argument, NULL, '1' },
                                          { "profiles", required_argument, NULL, 'P' },
                                          { "default-compute-s", required_argument, NULL, 'C' },
                                          { "default-bytes", required_argument, NULL, 'B' },
                                          { "help", no_argument, NULL, 'h' },
                                          { NULL, 0, NULL, 0 } };
    daemon_t d;
    memset(&d, 0, sizeof(d));
    crux_sched_options_defaults(&d.o);
    d.default_compute_s = 1;
    d.default_bytes = 1e8;
    const char *cluster = NULL;
    int once = 0, settle = 200, opt, priorities_given = 0;
    d.policy = -1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        int bad = 0;
        switch (opt) {
        case 'd': d.spool = optarg; break;
        case 'c': cluster = optarg; break;
        case 'o': d.out = optarg; break;
        case 'k':
            bad = tool_int_opt("daemon", "--levels", optarg, 1, CRUX_SCHED_MAX_LEVELS, &d.o.levels);
            break;
        case 'r':
            bad = tool_int_opt("daemon", "--reserve", optarg, 0, CRUX_SCHED_MAX_LEVELS - 1,
                               &d.o.reserve);
            break;
        case 'm': bad = tool_int_opt("daemon", "--orders", optarg, 1, 1000, &d.o.orders); break;
        case 's': bad = tool_seed_opt("daemon", optarg, &d.o.seed); break;
        case 'N':
            bad = tool_priorities_opt("daemon", optarg, &d.o.priorities);
            priorities_given = 1;
            break;
        case 'Y': bad = tool_policy_opt("daemon", optarg, &d.policy); break;
        case 'R': d.report = optarg; break;
        case 'S': bad = tool_int_opt("daemon", "--settle-ms", optarg, 0, 60000, &settle); break;
        case '1': once = 1; break;
        case 'P': d.profiles = optarg[0] ? optarg : NULL; break; /* "": none */
        case 'C':
            bad = tool_double_opt("daemon", "--default-compute-s", optarg, 1e-6, 1e6,
                                  &d.default_compute_s);
            break;
        case 'B':
            bad = tool_double_opt("daemon", "--default-bytes", optarg, 0, 1e15, &d.default_bytes);
            break;
        case 'h': fputs(daemon_usage, stdout); return TOOL_OK;
        default: return tool_bad_option("daemon", opt, argv);
        }
        if (bad)
            return TOOL_INPUT;
    }
    if (optind != argc) {
        tool_usage_error("daemon", "unexpected argument \"%s\"", argv[optind]);
        return TOOL_INPUT;
    }
    if (!d.spool || !cluster || !d.out) {
        tool_usage_error("daemon", "%s is missing",
                         !d.spool   ? "--spool DIR"
                         : !cluster ? "--cluster FILE"
                                    : "--out PRIOFILE");
        return TOOL_INPUT;
    }
    if (d.policy >= 0 && priorities_given) {
        tool_usage_error("daemon", "--priorities is part of --policy %s: give one of them",
                         crux_sched_policy_name((crux_sched_policy_t)d.policy));
        return TOOL_INPUT;
    }
    if (d.o.reserve >= d.o.levels) {
        tool_usage_error("daemon",
                         "--reserve %d leaves no level for jobs with --levels %d (at most %d)",
                         d.o.reserve, d.o.levels, d.o.levels - 1);
        return TOOL_INPUT;
    }
    tool_log_timestamps(1);
    crux_sched_cluster_t *c = NULL;
    crux_sched_nettable_t table;
    int rc = crux_sched_cluster_load(cluster, &c, &table, d.o.levels);
    if (rc != TOOL_OK)
        return rc;
    d.c = c;
    d.table = &table;
    rc = once ? replan(&d) : watch(&d, settle);
    free(d.reg);
    crux_sched_cluster_free(c);
    return rc;
}
