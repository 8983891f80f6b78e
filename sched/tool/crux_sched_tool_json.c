/* JSON documents for crux-sched: json-c parses; this file only adds
 * line numbers to its errors and finds the line of an array element so
 * that errors about, say, the 812th job name its line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/runtime/crux_prio_util.h"
#include "sched/tool/crux_sched_tool.h"

static int line_at(const char *text, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off && text[i]; i++)
        line += text[i] == '\n';
    return line;
}

static int doc_parse(tool_doc_t *doc);

int tool_doc_load(tool_doc_t *doc, const char *path)
{
    char err[512];
    memset(doc, 0, sizeof(*doc));
    doc->path = path;
    crux_status_t st = prio_read_all(path, 0, &doc->text, &doc->len, NULL, err, sizeof(err));
    if (st != CRUX_OK) {
        size_t n = strlen(path); /* err is "path: why" */
        const char *why = strncmp(err, path, n) == 0 && err[n] == ':' ? err + n + 2 : err;
        tool_error(path, 0, "%s", why);
        /* too large or not a regular file: the input is wrong; else it
         * could not be read */
        return st == CRUX_ERR_INVALID ? TOOL_INPUT : TOOL_RUNTIME;
    }
    return doc_parse(doc);
}

int tool_doc_parse(tool_doc_t *doc, const char *name, const char *text, size_t len)
{
    memset(doc, 0, sizeof(*doc));
    doc->path = name;
    doc->text = malloc(len + 1);
    if (doc->text == NULL) {
        tool_error(name, 0, "out of memory");
        return TOOL_RUNTIME;
    }
    memcpy(doc->text, text, len);
    doc->text[len] = '\0';
    doc->len = len;
    return doc_parse(doc);
}

/* doc->text (NUL-terminated) and doc->len set: parse it. */
static int doc_parse(tool_doc_t *doc)
{
    const char *path = doc->path;
    json_tokener *tok = json_tokener_new();
    if (tok == NULL) {
        tool_error(path, 0, "out of memory");
        return TOOL_RUNTIME;
    }
    doc->root = json_tokener_parse_ex(tok, doc->text, (int)doc->len);
    enum json_tokener_error je = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (doc->root == NULL || je != json_tokener_success) {
        if (je == json_tokener_continue)
            tool_error(path, line_at(doc->text, doc->len), "malformed JSON: unexpected end");
        else
            tool_error(path, line_at(doc->text, end), "malformed JSON: %s",
                       json_tokener_error_desc(je));
        json_object_put(doc->root);
        doc->root = NULL;
        return TOOL_INPUT;
    }
    for (size_t i = end; i < doc->len; i++)
        if (!strchr(" \t\r\n", doc->text[i])) {
            tool_error(path, line_at(doc->text, i), "malformed JSON: text after the document");
            return TOOL_INPUT;
        }
    if (!json_object_is_type(doc->root, json_type_object)) {
        tool_error(path, 1, "expected a JSON object");
        return TOOL_INPUT;
    }
    return TOOL_OK;
}

void tool_doc_free(tool_doc_t *doc)
{
    json_object_put(doc->root);
    free(doc->text);
    memset(doc, 0, sizeof(*doc));
}

/* Skip a JSON string starting at text[i] == '"'; returns the index past it. */
static size_t skip_string(const char *t, size_t i, size_t n)
{
    for (i++; i < n && t[i] != '"'; i++)
        if (t[i] == '\\')
            i++;
    return i + 1;
}

int tool_doc_line(const tool_doc_t *doc, const char *key, int index)
{
    const char *t = doc->text;
    size_t n = doc->len, klen = strlen(key);
    int depth = 0, in_target = 0, count = 0, expect_elem = 0;
    for (size_t i = 0; i < n;) {
        char ch = t[i];
        if (in_target && expect_elem && !strchr(" \t\r\n", ch)) {
            if (ch == ']')
                return 1;
            if (count++ == index)
                return line_at(t, i);
            expect_elem = 0;
        }
        if (ch == '"') {
            size_t end = skip_string(t, i, n);
            /* a member name of the top-level object followed by ':' */
            if (depth == 1 && !in_target && end - i - 2 == klen &&
                strncmp(t + i + 1, key, klen) == 0) {
                size_t j = end;
                while (j < n && strchr(" \t\r\n", t[j]))
                    j++;
                if (j < n && t[j] == ':') {
                    j++;
                    while (j < n && strchr(" \t\r\n", t[j]))
                        j++;
                    if (j < n && t[j] == '[') {
                        in_target = 1;
                        expect_elem = 1;
                        depth = 2;
                        i = j + 1;
                        continue;
                    }
                }
            }
            i = end;
            continue;
        }
        if (ch == '{' || ch == '[')
            depth++;
        else if (ch == '}' || ch == ']') {
            depth--;
            if (in_target && depth < 2)
                return 1;
        } else if (ch == ',' && in_target && depth == 2)
            expect_elem = 1;
        i++;
    }
    return 1;
}

int tool_fields(json_object *obj, const tool_field_t *fields, int n, const char *const *ignore,
                char *err, size_t errlen)
{
    if (!json_object_is_type(obj, json_type_object)) {
        crux_errf(err, errlen, "expected an object");
        return -1;
    }
    json_object_object_foreach(obj, key, val)
    {
        int k = 0;
        while (k < n && strcmp(fields[k].key, key) != 0)
            k++;
        if (k == n) {
            int skip = 0;
            for (int i = 0; ignore && ignore[i] && !skip; i++)
                skip = strcmp(ignore[i], key) == 0;
            if (skip)
                continue;
            crux_errf(err, errlen, "unknown key \"%s\"", key);
            return -1;
        }
        const tool_field_t *f = &fields[k];
        int ok;
        switch (f->type) {
        case F_INT:
            ok = json_object_is_type(val, json_type_int);
            if (ok) {
                errno = 0;
                int64_t v = json_object_get_int64(val);
                ok = errno == 0 && v >= INT32_MIN && v <= INT32_MAX;
                *(int *)f->out = (int)v;
            }
            break;
        case F_DOUBLE:
            ok = json_object_is_type(val, json_type_int) ||
                 json_object_is_type(val, json_type_double);
            if (ok)
                *(double *)f->out = json_object_get_double(val);
            break;
        default:
            ok = json_object_is_type(val, json_type_string);
            if (ok)
                *(const char **)f->out = json_object_get_string(val);
        }
        if (!ok) {
            crux_errf(err, errlen, "\"%s\" must be %s", key,
                      f->type == F_INT      ? "an integer"
                      : f->type == F_DOUBLE ? "a number"
                                            : "a string");
            return -1;
        }
        if (f->given)
            *f->given = 1;
    }
    return 0;
}
