/* ckpt.c: checkpoint file of a copy. */
#include "ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CKPT_MAGIC "# hbase-salt-migrate checkpoint v1"

static void
ckpt_entry_free(void *p)
{
    struct ckpt_entry *e = p;

    unit_clear(&e->unit);
    g_clear_pointer(&e->after, g_bytes_unref);
    g_free(e);
}

static struct ckpt *
ckpt_alloc(const char *path, const char *job)
{
    struct ckpt *c = g_new0(struct ckpt, 1);

    c->path = g_strdup(path);
    c->job = g_strdup(job);
    c->entries = g_ptr_array_new_with_free_func(ckpt_entry_free);
    return c;
}

struct ckpt_entry *
ckpt_add(struct ckpt *c, const struct unit *u)
{
    struct ckpt_entry *e = g_new0(struct ckpt_entry, 1);

    e->unit.side = u->side;
    e->unit.start = g_bytes_ref(u->start);
    e->unit.end = g_bytes_ref(u->end);
    g_ptr_array_add(c->entries, e);
    return e;
}

struct ckpt *
ckpt_new(const char *path, const char *job, const struct unit *units, guint n)
{
    struct ckpt *c = ckpt_alloc(path, job);

    for (guint i = 0; i < n; i++) {
        ckpt_add(c, &units[i]);
    }
    return c;
}

void
ckpt_free(struct ckpt *c)
{
    if (c == NULL) {
        return;
    }
    g_ptr_array_unref(c->entries);
    g_free(c->path);
    g_free(c->job);
    g_free(c);
}

struct ckpt_entry *
ckpt_find(struct ckpt *c, const struct unit *u)
{
    for (guint i = 0; i < c->entries->len; i++) {
        struct ckpt_entry *e = c->entries->pdata[i];

        if (e->unit.side == u->side &&
            g_bytes_equal(e->unit.start, u->start) &&
            g_bytes_equal(e->unit.end, u->end)) {
            return e;
        }
    }
    return NULL;
}

char *
ckpt_entry_state(const struct ckpt_entry *e)
{
    GString *s = g_string_new(NULL);

    if (e->done) {
        g_string_append(s, "done");
    } else if (e->after != NULL) {
        gsize len;
        const uint8_t *p = g_bytes_get_data(e->after, &len);

        g_string_append(s, "after=");
        for (gsize i = 0; i < len; i++) {
            g_string_append_printf(s, "%02x", p[i]);
        }
    } else {
        g_string_append(s, "todo");
    }
    g_string_append_printf(s,
                           " rows=%" G_GUINT64_FORMAT
                           " cells=%" G_GUINT64_FORMAT
                           " bytes=%" G_GUINT64_FORMAT,
                           e->rows, e->cells, e->bytes);
    return g_string_free(s, FALSE);
}

static gboolean
ckpt_write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return FALSE;
        }
        p += n;
        len -= (size_t)n;
    }
    return TRUE;
}

gboolean
ckpt_save(const struct ckpt *c, GError **error)
{
    g_autoptr(GString) s = NULL;
    g_autofree char *tmp = NULL, *dir = NULL;
    int fd, dfd;

    if (c->path == NULL) {
        return TRUE;
    }
    s = g_string_new(CKPT_MAGIC "\n");
    g_string_append_printf(s, "job %s\n", c->job);
    for (guint i = 0; i < c->entries->len; i++) {
        const struct ckpt_entry *e = c->entries->pdata[i];
        g_autofree char *u = unit_format(&e->unit);
        g_autofree char *st = ckpt_entry_state(e);

        g_string_append_printf(s, "unit %s %s\n", u, st);
    }
    tmp = g_strconcat(c->path, ".tmp", NULL);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
                    "%s: %s", tmp, g_strerror(errno));
        return FALSE;
    }
    if (!ckpt_write_all(fd, s->str, s->len) || fsync(fd) != 0) {
        int err = errno;

        close(fd);
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(err),
                    "%s: %s", tmp, g_strerror(err));
        return FALSE;
    }
    close(fd);
    if (rename(tmp, c->path) != 0) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
                    "%s: %s", c->path, g_strerror(errno));
        return FALSE;
    }
    /* the rename itself must reach the disk before the next batch */
    dir = g_path_get_dirname(c->path);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return TRUE;
}

static gboolean
ckpt_parse_count(const char *field, const char *name, guint64 *v)
{
    size_t n = strlen(name);
    char *end;

    if (strncmp(field, name, n) != 0 || field[n] != '=') {
        return FALSE;
    }
    *v = g_ascii_strtoull(field + n + 1, &end, 10);
    return end != field + n + 1 && *end == '\0';
}

static gboolean
ckpt_parse_entry(struct ckpt *c, char **f, guint n, GError **error)
{
    g_autofree char *unit_text = NULL;
    struct unit u;
    gboolean skip;
    struct ckpt_entry *e;

    if (n != 8) {
        return FALSE;
    }
    unit_text = g_strjoin(" ", f[1], f[2], f[3], NULL);
    if (!unit_parse(unit_text, &u, &skip, error)) {
        return FALSE;
    }
    e = ckpt_add(c, &u);
    unit_clear(&u);
    if (strcmp(f[4], "done") == 0) {
        e->done = TRUE;
    } else if (g_str_has_prefix(f[4], "after=")) {
        struct unit tmp;
        g_autofree char *line = g_strdup_printf("source %s -", f[4] + 6);

        if (!unit_parse(line, &tmp, &skip, NULL) ||
            g_bytes_get_size(tmp.start) == 0) {
            if (!skip) {
                unit_clear(&tmp);
            }
            return FALSE;
        }
        e->after = g_bytes_ref(tmp.start);
        unit_clear(&tmp);
    } else if (strcmp(f[4], "todo") != 0) {
        return FALSE;
    }
    return ckpt_parse_count(f[5], "rows", &e->rows) &&
           ckpt_parse_count(f[6], "cells", &e->cells) &&
           ckpt_parse_count(f[7], "bytes", &e->bytes);
}

gboolean
ckpt_load(const char *path, struct ckpt **out, GError **error)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(GError) err = NULL;
    struct ckpt *c;

    *out = NULL;
    if (!g_file_get_contents(path, &text, NULL, &err)) {
        if (g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
            return TRUE;
        }
        g_propagate_error(error, g_steal_pointer(&err));
        return FALSE;
    }
    lines = g_strsplit(text, "\n", -1);
    if (lines[0] == NULL || strcmp(lines[0], CKPT_MAGIC) != 0 ||
        lines[1] == NULL || !g_str_has_prefix(lines[1], "job ")) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                    "%s: not a hbase-salt-migrate checkpoint", path);
        return FALSE;
    }
    c = ckpt_alloc(path, lines[1] + 4);
    for (guint i = 2; lines[i] != NULL; i++) {
        g_auto(GStrv) f = NULL;

        if (lines[i][0] == '\0') {
            continue;
        }
        f = g_strsplit(lines[i], " ", -1);
        if (strcmp(f[0], "unit") != 0 ||
            !ckpt_parse_entry(c, f, g_strv_length(f), NULL)) {
            g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                        "%s:%u: malformed checkpoint line", path, i + 1);
            ckpt_free(c);
            return FALSE;
        }
    }
    *out = c;
    return TRUE;
}
