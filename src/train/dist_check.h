/* train/dist_check.h — the start-up check of a data-parallel run: every rank compares
 * what it is about to train with, with rank 0's, before any work, so that ranks started with
 * another config, another build or other data are refused instead of training a model no one
 * asked for.
 *
 * Compared: the resolved config (config_to_ini of the config after the file and every --set;
 * CRC32 of the text, and, where it differs, the keys: config_diff against rank 0's text, sent
 * by MPI_Bcast), the binary (size and CRC32 of /proc/self/exe: a build id that needs no build
 * step), and the training files data.train_src and data.train_tgt (size and CRC32 of the bytes
 * as stored, as each rank's working folder resolves the path). The records are exchanged with
 * one MPI_Allgather (dist_allgather), so every rank reaches the same verdict. Units: bytes.
 * Source: zlib's crc32 (docs/design.md §8); MPI 3.1 MPI_Bcast, MPI_Allgather.
 */
#ifndef TRAINER_DIST_CHECK_H
#define TRAINER_DIST_CHECK_H

#include "core/common.h"
#include "train/config.h"

/* With one rank: nothing to compare, STATUS_OK at once (no file is read). Otherwise every rank
 * must call it. Errors (the same message on every rank): "rank R (host H) differs from rank 0:
 * config (train.lr: 0.003 -> 0.002); binary /proc/self/exe (N bytes, CRC32 X; rank 0:
 * ...); data.train_src PATH (...) ...; start every rank with the same binary, config, --set
 * options and data files" for the first rank that differs (and how many others do), or a file a
 * rank cannot read (named, with strerror). */
Status dist_check_ranks(const Config *cfg, Err *err);

#endif
