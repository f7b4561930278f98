/* core/machine.h — what machine this is, in words, for run cards and reports: the CPU model
 * ("model name" of /proc/cpuinfo, with its family and model numbers, which tell processor
 * generations apart where the name does not), or "unknown <arch> CPU". Host strings only; no
 * errors. Source: — (plain engineering). */
#ifndef TRAINER_CORE_MACHINE_H
#define TRAINER_CORE_MACHINE_H

#include <stddef.h>

/* The CPU's description into buf (n bytes, truncated if needed), e.g. "AMD EPYC (family 26,
 * model 2)"; returns buf. */
const char *machine_cpu(char *buf, size_t n);

/* Peak resident set size of this process so far, in MiB (getrusage's ru_maxrss, KiB on
 * Linux); 0 where getrusage fails. */
double machine_peak_rss_mb(void);

/* Runs fn(arg, out) in a forked child and copies the n bytes it leaves in out back into the
 * caller's out, so that what the child measures with machine_peak_rss_mb is its own peak, not
 * this process's. 0 when the child wrote all n bytes and exited with status 0; -1 when pipe or
 * fork failed or the child crashed or exited otherwise (out is then unspecified). POSIX only. */
int machine_run_forked(void (*fn)(const void *arg, void *out), const void *arg, void *out,
                       size_t n);

/* The current UTC time as ISO 8601 ("2026-11-27T23:25:19Z") into buf (n >= 21); returns buf. */
const char *machine_utc_now(char *buf, size_t n);

#endif
