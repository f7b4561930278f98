/* core/revision.h — the source revision of this build: `git describe --always --dirty` of the
 * source tree when it was built ("unknown" outside a git checkout). Defined in a C file that
 * cmake/git_revision.cmake generates at every build. The facts a report of a run should carry:
 * trainer --version, the first line of a run's log and its metrics.jsonl's "start" records.
 * No errors. Source: — (plain engineering). */
#ifndef TRAINER_CORE_REVISION_H
#define TRAINER_CORE_REVISION_H

const char *trainer_revision(void);

#endif
