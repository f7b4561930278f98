/* test_common.c — core/common.c's make_dirs (mkdir -p): nested folders are created, an existing
 * folder is accepted, and a path through or onto a regular file, or one too long, is refused with
 * a message that names the path. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
    return test_report("test_common");
}
