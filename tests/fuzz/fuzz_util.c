/* fuzz_util.c — see fuzz_util.h. */
#include "fuzz_util.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_TAGS = 16 };
static char g_paths[MAX_TAGS][512];
static char g_tags[MAX_TAGS][64];
static int g_n;

static void remove_tmp_files(void) {
    for (int i = 0; i < g_n; i++) unlink(g_paths[i]);
}

const char *fuzz_tmp_path(const char *tag) {
    for (int i = 0; i < g_n; i++)
        if (strcmp(g_tags[i], tag) == 0) return g_paths[i];
    if (g_n == MAX_TAGS || strlen(tag) >= sizeof g_tags[0]) {
        fprintf(stderr, "fuzz_tmp_path: too many or too long tags (%s)\n", tag);
        abort();
    }
    const char *dir = "/dev/shm";
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK) != 0) {
        dir = getenv("TMPDIR");
        if (!dir || !*dir) dir = "/tmp";
    }
    if (g_n == 0) atexit(remove_tmp_files);
    snprintf(g_tags[g_n], sizeof g_tags[0], "%s", tag);
    snprintf(g_paths[g_n], sizeof g_paths[0], "%s/trainer-fuzz-%ld-%s", dir, (long)getpid(), tag);
    return g_paths[g_n++];
}

void fuzz_write_file(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    const uint8_t *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            perror(path);
            abort();
        }
        p += w;
        n -= (size_t)w;
    }
    close(fd);
}

uint32_t fuzz_get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

uint64_t fuzz_get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void fuzz_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

void fuzz_quiet_stdout(void) {
    fflush(stdout);
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        close(fd);
    }
}
