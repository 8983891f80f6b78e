/* Checks of an hwloc XML file made before hwloc reads it.
 *
 * hwloc says little when an import fails (errno EINVAL, details only with
 * HWLOC_XML_VERBOSE=1), so the common faults are recognised here to give a
 * one-line reason: a missing or unreadable file, something that is not an
 * hwloc export, a truncated file, a file from a newer hwloc.
 *
 * Some faults hwloc does not reject but crashes on (found by fuzz_topo_xml):
 * hwloc 2.9 dereferences an object's cpuset, complete_cpuset, nodeset and
 * complete_nodeset without checking they were given.  Every hwloc export
 * writes all four for each object of the CPU and memory tree, and a
 * complete_ set with its plain twin on any object, so a file where one is
 * missing is refused here, before hwloc sees it.  Likewise a declared encoding other
 * than UTF-8 (hwloc writes nothing else): libxml2 then loads an iconv
 * converter and leaks it when the parse fails.
 *
 * It also records how many objects each NVLinkBandwidth matrix names: hwloc
 * silently drops the members it cannot find in the topology, so comparing
 * with what it loaded is the only way to notice a matrix naming unknown
 * objects. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topo/crux_topo_internal.h"

static crux_status_t fail(crux_status_t status, char *err, size_t errlen, const char *path,
                          const char *reason)
{
    if (errlen)
        snprintf(err, errlen, "%s: %s", path, reason);
    return status;
}

/* Reads a regular file of at most CRUX_TOPO_MAX_XML_BYTES.  A FIFO would
 * block the reader, /dev/zero would fill its memory: anything that is not
 * a regular file is refused before a byte is read, and so is a file larger
 * than the cap. */
static crux_status_t read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
    char reason[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        snprintf(reason, sizeof(reason), "cannot open: %s", strerror(e));
        return fail(e == ENOENT ? CRUX_ERR_NOT_FOUND : CRUX_ERR_IO, err, errlen, path, reason);
    }
    struct stat sb;
    crux_status_t st = CRUX_ERR_IO; /* refused unread: a file that cannot be read */
    char *buf = NULL;
    size_t n = 0;
    if (fstat(fd, &sb) != 0) {
        snprintf(reason, sizeof(reason), "cannot read: %s", strerror(errno));
        st = CRUX_ERR_IO;
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(reason, sizeof(reason), "not a regular file");
        goto out;
    }
    if (sb.st_size > CRUX_TOPO_MAX_XML_BYTES) {
        snprintf(reason, sizeof(reason), "%lld bytes, more than the %d read at most",
                 (long long)sb.st_size, CRUX_TOPO_MAX_XML_BYTES);
        goto out;
    }
    /* one byte more than the size: a file that grew since is noticed */
    size_t cap = (size_t)sb.st_size + 1;
    buf = malloc(cap + 1);
    if (!buf) {
        snprintf(reason, sizeof(reason), "out of memory reading it");
        st = CRUX_ERR_NO_MEMORY;
        goto out;
    }
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(reason, sizeof(reason), "cannot read: %s", strerror(errno));
            st = CRUX_ERR_IO;
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n == cap) {
        snprintf(reason, sizeof(reason), "changed while being read");
        goto out;
    }
    close(fd);
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return CRUX_OK;
out:
    free(buf);
    close(fd);
    return fail(st, err, errlen, path, reason);
}

/* The value of attribute attr in the tag text [tag, end) (tag points to
 * its '<'), copied to out; 0 if absent. */
static int tag_attr(const char *tag, const char *end, const char *attr, char *out, size_t outlen)
{
    size_t alen = strlen(attr);
    for (const char *p = tag + 1; p + alen + 2 < end; p++) {
        if ((p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n' && p[-1] != '\r') ||
            strncmp(p, attr, alen) != 0 || p[alen] != '=' ||
            (p[alen + 1] != '"' && p[alen + 1] != '\''))
            continue;
        char quote = p[alen + 1];
        const char *v = p + alen + 2, *ve = memchr(v, quote, (size_t)(end - v));
        if (!ve)
            return 0;
        snprintf(out, outlen, "%.*s", (int)(ve - v), v);
        return 1;
    }
    return 0;
}

/* The XML declaration at p, if any, may name no encoding but UTF-8 or its
 * ASCII subset (libxml2 reads one however garbled the declaration is). */
static crux_status_t check_encoding(const char *p, const char *path, char *err, size_t errlen)
{
    const char *end = strncmp(p, "<?xml", 5) ? NULL : strchr(p, '>');
    char encoding[32] = "", reason[96];
    const char *named = end ? strstr(p, "encoding") : NULL;
    if (!named || named > end)
        return CRUX_OK;
    if (tag_attr(p, end, "encoding", encoding, sizeof(encoding)) &&
        (!strcasecmp(encoding, "UTF-8") || !strcasecmp(encoding, "US-ASCII")))
        return CRUX_OK;
    snprintf(reason, sizeof(reason), "encoding \"%.32s\" declared: hwloc exports are UTF-8",
             encoding);
    return fail(CRUX_ERR_INVALID, err, errlen, path, reason);
}

/* Line number of position p in text, for messages. */
static unsigned line_of(const char *text, const char *p)
{
    unsigned line = 1;
    for (const char *q = text; q < p; q++)
        line += *q == '\n';
    return line;
}

/* Whether an object of this type (an hwloc XML type name) sits in the CPU
 * and memory tree, and so has CPU and node sets: all but I/O and Misc. */
static int has_sets(const char *type)
{
    static const char *const outside[] = { "Bridge", "PCIDev", "OSDev", "Misc" };
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
        if (!strcmp(type, outside[i]))
            return 0;
    return 1;
}

/* Refuses an <object> of the CPU and memory tree that lacks one of its four
 * sets, and any object with a set but not its complete_ twin or the other
 * way round (see the top of the file). */
static crux_status_t check_object_sets(const char *text, const char *from, const char *path,
                                       char *err, size_t errlen)
{
    static const char *const sets[] = { "cpuset", "complete_cpuset", "nodeset",
                                        "complete_nodeset" };
    char value[32], type[32], reason[192];
    for (const char *p = strstr(from, "<object"); p; p = strstr(p + 1, "<object")) {
        const char *end = strchr(p, '>');
        if (!end)
            return CRUX_OK; /* truncation is reported by the caller */
        int has[4];
        for (int i = 0; i < 4; i++)
            has[i] = tag_attr(p, end, sets[i], value, sizeof(value));
        int needed = tag_attr(p, end, "type", type, sizeof(type)) && has_sets(type);
        for (int i = 0; i < 4; i++) {
            int twin = i ^ 1; /* cpuset <-> complete_cpuset, nodeset <-> complete_nodeset */
            if (has[i] || !(needed || has[twin]))
                continue;
            if (needed)
                snprintf(reason, sizeof(reason),
                         "line %u: a %s object without %s (hwloc would crash on it)",
                         line_of(text, p), type, sets[i]);
            else
                snprintf(reason, sizeof(reason),
                         "line %u: an object with %s but no %s (hwloc would crash on it)",
                         line_of(text, p), sets[twin], sets[i]);
            return fail(CRUX_ERR_INVALID, err, errlen, path, reason);
        }
    }
    return CRUX_OK;
}

static void find_nvlink_matrices(const char *text, struct crux_topo_xml_facts *facts)
{
    static const char open_tag[] = "<distances2"; /* also <distances2hetero */
    for (const char *p = strstr(text, open_tag); p; p = strstr(p + 1, open_tag)) {
        const char *end = strchr(p, '>');
        char name[64], nbobjs[32];
        if (!end)
            return;
        if (tag_attr(p, end, "name", name, sizeof(name)) && !strcmp(name, "NVLinkBandwidth") &&
            tag_attr(p, end, "nbobjs", nbobjs, sizeof(nbobjs)) &&
            facts->nmatrices < CRUX_TOPO_XML_MAX_MATRICES)
            facts->matrix_nbobjs[facts->nmatrices++] = (unsigned)strtoul(nbobjs, NULL, 10);
    }
}

crux_status_t crux_topo_xml_check(const char *path, const char *given, size_t given_len,
                                  struct crux_topo_xml_facts *facts, char *err, size_t errlen)
{
    char *text;
    size_t len = given_len;
    char reason[256];
    crux_status_t st = CRUX_OK;
    if (given) { /* a copy, so that the checks below may rely on a final NUL */
        if (given_len > CRUX_TOPO_MAX_XML_BYTES) {
            snprintf(reason, sizeof(reason), "%zu bytes, more than the %d read at most", given_len,
                     CRUX_TOPO_MAX_XML_BYTES);
            return fail(CRUX_ERR_INVALID, err, errlen, path, reason);
        }
        if (!(text = malloc(given_len + 1)))
            return fail(CRUX_ERR_NO_MEMORY, err, errlen, path, "out of memory reading it");
        memcpy(text, given, given_len);
        text[given_len] = '\0';
    } else {
        st = read_file(path, &text, &len, err, errlen);
    }
    if (st != CRUX_OK)
        return st;

    memset(facts, 0, sizeof(*facts));
    const char *p = text;
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) /* UTF-8 byte order mark */
        p += 3;
    p += strspn(p, " \t\r\n");
    if (*p == '\0')
        st = fail(CRUX_ERR_INVALID, err, errlen, path, "empty file, not an hwloc XML topology");
    else if (*p != '<' || strlen(p) != len - (size_t)(p - text))
        st = fail(CRUX_ERR_INVALID, err, errlen, path, "not an XML file");
    if (st != CRUX_OK)
        goto out;

    st = check_encoding(p, path, err, errlen);
    if (st != CRUX_OK)
        goto out;

    const char *top = strstr(p, "<topology");
    while (top && top[9] != '>' && top[9] != ' ' && top[9] != '\t' && top[9] != '\n' &&
           top[9] != '\r')
        top = strstr(top + 1, "<topology");
    const char *top_end = top ? strchr(top, '>') : NULL;
    if (!top_end) {
        st = fail(CRUX_ERR_INVALID, err, errlen, path,
                  "not an hwloc XML topology (no <topology> element)");
        goto out;
    }
    char version[32];
    if (tag_attr(top, top_end, "version", version, sizeof(version)) && atoi(version) > 2) {
        snprintf(reason, sizeof(reason),
                 "written by a newer hwloc (XML format %s); hwloc " HWLOC_VERSION
                 " imports formats 1.x and 2.x only",
                 version);
        st = fail(CRUX_ERR_UNSUPPORTED, err, errlen, path, reason);
        goto out;
    }
    if (!strstr(top_end, "</topology>")) {
        st = fail(CRUX_ERR_INVALID, err, errlen, path, "truncated: no closing </topology> tag");
        goto out;
    }
    st = check_object_sets(text, top_end, path, err, errlen);
    if (st == CRUX_OK)
        find_nvlink_matrices(top_end, facts);
out:
    free(text);
    return st;
}
