/* A trial import of an hwloc XML file in a child process.
 *
 * hwloc 2.9's XML importer trusts its input: fuzz_topo_xml found files it
 * crashes on (crux_topo_xmlcheck.c refuses the kinds understood), and more
 * combinations of damaged attributes crash it further on, in ways no short
 * list of checks covers.  A topology file is not trusted input to crux (a
 * user may hand crux-topo anything), so hwloc first imports it in a child:
 * only a file the child survives is imported in this process. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "topo/crux_topo_internal.h"

#define TRIAL_SECONDS 60 /* hwloc takes milliseconds on real exports */

enum { TRIAL_LOADED = 0, TRIAL_REJECTED = 2 }; /* the child's exit codes */

crux_status_t crux_topo_xml_trial(const char *path, const char *text, size_t len, char *err,
                                  size_t errlen)
{
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "%s: cannot try hwloc's import in a child process: %s", path,
                 strerror(errno));
        return CRUX_ERR_IO;
    }
    if (pid == 0) {
        hwloc_topology_t topo;
        char ignored[8];
        /* quiet: hwloc's complaints (and a sanitizer's report of its crash)
         * would repeat what the import proper or the message below says */
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        /* die of a crash, without the process's handlers (Open MPI's
         * backtrace printer, a fuzzer's crash reporter) */
        static const int deadly[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
        for (size_t i = 0; i < sizeof(deadly) / sizeof(deadly[0]); i++)
            signal(deadly[i], SIG_DFL);
        alarm(TRIAL_SECONDS);
        int loaded =
            crux_topo_hwloc_open(path, text, len, &topo, ignored, sizeof(ignored)) == CRUX_OK;
        _exit(loaded ? TRIAL_LOADED : TRIAL_REJECTED); /* no atexit handlers, no flush */
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno == ECHILD) /* SIGCHLD ignored by the caller: the child was reaped unseen */
            return CRUX_OK;
        if (errno != EINTR) {
            snprintf(err, errlen, "%s: lost hwloc's trial import: %s", path, strerror(errno));
            return CRUX_ERR_IO;
        }
    }
    if (WIFEXITED(status) &&
        (WEXITSTATUS(status) == TRIAL_LOADED || WEXITSTATUS(status) == TRIAL_REJECTED))
        return CRUX_OK; /* a rejection is reported by the import proper, with its reason */
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        snprintf(err, errlen, "%s: hwloc did not finish importing it in %d s", path, TRIAL_SECONDS);
    else if (WIFSIGNALED(status))
        snprintf(err, errlen, "%s: hwloc crashes importing it (%s): a damaged file", path,
                 strsignal(WTERMSIG(status)));
    else
        snprintf(err, errlen, "%s: hwloc crashes importing it (exit %d): a damaged file", path,
                 WEXITSTATUS(status));
    return CRUX_ERR_INVALID;
}
