/* replay.c: runs a fuzz target over every file of its corpus, no libFuzzer. */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Built with any compiler, so that every corpus (seeds and the inputs of
 * crashes once fixed) runs in the ordinary test suite, and under the
 * sanitizers in the sanitizer build.  Arguments are files or directories
 * (read in name order, one level deep).
 */

static int
replay_file(const char *path)
{
    gchar *data = NULL;
    gsize len = 0;
    GError *error = NULL;

    if (!g_file_get_contents(path, &data, &len, &error)) {
        fprintf(stderr, "replay: %s\n", error->message);
        g_error_free(error);
        return 1;
    }
    /* a copy of exactly len bytes, so ASan sees reads past the input */
    {
        uint8_t *copy = g_memdup2(data, len);

        LLVMFuzzerTestOneInput(copy, len);
        g_free(copy);
    }
    g_free(data);
    return 0;
}

static gint
replay_cmp(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

int
main(int argc, char **argv)
{
    unsigned files = 0;
    int bad = 0;

    for (int i = 1; i < argc; i++) {
        GDir *dir = g_dir_open(argv[i], 0, NULL);
        GPtrArray *names;
        const char *name;

        if (dir == NULL) {
            bad |= replay_file(argv[i]);
            files++;
            continue;
        }
        names = g_ptr_array_new_with_free_func(g_free);
        while ((name = g_dir_read_name(dir)) != NULL) {
            g_ptr_array_add(names, g_build_filename(argv[i], name, NULL));
        }
        g_dir_close(dir);
        g_ptr_array_sort(names, replay_cmp);
        for (guint k = 0; k < names->len; k++) {
            const char *path = g_ptr_array_index(names, k);

            if (g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
                bad |= replay_file(path);
                files++;
            }
        }
        g_ptr_array_unref(names);
    }
    printf("replayed %u inputs\n", files);
    return bad != 0 || files == 0 ? 1 : 0;
}
