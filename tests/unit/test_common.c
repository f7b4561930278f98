/* test_common.c — core/common.c's make_dirs (mkdir -p): nested folders are created, an existing
 * folder is accepted, and a path through or onto a regular file, or one too long, is refused with
 * a message that names the path. write_file_atomic: a second write replaces the first whole; one
 * that cannot create its file fails naming it, and no temporary file is left. temp_name_stale
 * tells a dead writer's temporary (<stem>.tmp.<pid>) from a running one's and from other names. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "testutil.h"

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int main(void) {
    const char *tmp = test_tmpdir();
    char path[600], file[600];
    Err err = {0};

    snprintf(path, sizeof path, "%s/a/b/c", tmp);
    EXPECT(make_dirs(path, &err) == STATUS_OK, "make_dirs %s: %s", path, err.msg);
    EXPECT(is_dir(path), "%s was not created", path);
    EXPECT(make_dirs(path, &err) == STATUS_OK, "again on an existing folder: %s", err.msg);
    snprintf(path, sizeof path, "%s/a/b/d/", tmp); /* a trailing slash */
    EXPECT(make_dirs(path, &err) == STATUS_OK, "make_dirs %s: %s", path, err.msg);
    EXPECT(is_dir(path), "%s was not created", path);

    snprintf(file, sizeof file, "%s/f", tmp);
    EXPECT(test_write_file(file, "x", 1) == 0, "cannot write %s", file);
    EXPECT(make_dirs(file, &err) == STATUS_ERR, "a regular file was accepted as a folder");
    EXPECT(strstr(err.msg, file) != NULL, "the message does not name %s: %s", file, err.msg);
    snprintf(path, sizeof path, "%s/f/g", tmp);
    EXPECT(make_dirs(path, &err) == STATUS_ERR, "a folder under a regular file was accepted");
    EXPECT(strstr(err.msg, path) != NULL, "the message does not name %s: %s", path, err.msg);

    char longp[1100];
    memset(longp, 'x', sizeof longp - 1);
    longp[0] = '/', longp[sizeof longp - 1] = 0;
    EXPECT(make_dirs(longp, &err) == STATUS_ERR, "a path of %zu bytes was accepted",
           strlen(longp));
    EXPECT(strstr(err.msg, "too long") != NULL, "message: %s", err.msg);

    /* write_file_atomic: replaces the file whole; a failure names it and leaves it alone */
    snprintf(file, sizeof file, "%s/w.txt", tmp);
    EXPECT(write_file_atomic(file, "first\n", 6, &err) == STATUS_OK, "%s", err.msg);
    EXPECT(write_file_atomic(file, "second", 6, &err) == STATUS_OK, "%s", err.msg);
    size_t n = 0;
    char *got = test_read_file(file, &n);
    EXPECT(got && n == 6 && !memcmp(got, "second", 6), "%s holds '%s'", file, got ? got : "");
    free(got);
    snprintf(path, sizeof path, "%s/f/w.txt", tmp); /* under a regular file: cannot be created */
    EXPECT(write_file_atomic(path, "x", 1, &err) == STATUS_ERR, "%s was written", path);
    EXPECT(strstr(err.msg, path) != NULL && strstr(err.msg, "cannot write"),
           "the message does not name %s: %s", path, err.msg);
    DIR *d = opendir(tmp);
    int leftovers = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        leftovers += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    EXPECT(leftovers == 0, "%d temporary files left in %s", leftovers, tmp);

    /* temp_name_stale: temp_path_for's names whose writer no longer runs (pid 2147483646 is
     * above any pid_max; the parent process runs; the caller's own pid counts as dead) */
    char nm[96];
    EXPECT(temp_name_stale("w.txt.tmp.2147483646", "w.txt"), "a dead writer's temporary");
    EXPECT(temp_name_stale("last.ckpt.tmp.2147483646", NULL), "any stem: a dead writer's");
    snprintf(nm, sizeof nm, "w.txt.tmp.%ld", (long)getpid());
    EXPECT(temp_name_stale(nm, "w.txt"), "the caller's own pid is not counted as running");
    snprintf(nm, sizeof nm, "w.txt.tmp.%ld", (long)getppid());
    EXPECT(!temp_name_stale(nm, "w.txt"), "a running writer's temporary counted as stale");
    EXPECT(!temp_name_stale("w.txt.tmp.2147483646", "v.txt"), "another stem's temporary");
    EXPECT(!temp_name_stale("xw.txt.tmp.2147483646", "w.txt"), "a longer name with the stem");
    EXPECT(!temp_name_stale("w.txt.tmp.12ab", "w.txt"), "no pid after .tmp.");
    EXPECT(!temp_name_stale("w.txt.tmp.", NULL), "nothing after .tmp.");
    EXPECT(!temp_name_stale("w.txt", NULL), "a name without .tmp.");
    return test_report("test_common");
}
