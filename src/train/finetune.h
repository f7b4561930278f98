/* train/finetune.h — train.init_from: a new run that starts from a trained checkpoint's weights
 * (fine-tuning, continued training on new data), with a fresh optimizer, schedule and step count.
 *
 * The checkpoint's parameters ("param/" records: best.ckpt of a run with train.ema_decay holds
 * the EMA weights there) become the new model's; its Adam moments, EMA, training state and data
 * position are not read. The run keeps the checkpoint's architecture and SentencePiece model:
 * every [model] key but model.dropout and model.rnn_impl must equal the checkpoint's, and
 * data.vocab_size its model's size. The file's CRC-32 is recorded as train.init_from_crc, which
 * config.ini and every checkpoint of the run then hold. Everything here runs once, at the start
 * of a run (rank 0); the model lives on the run's backend. Source: — (OpenNMT-py's train_from
 * with reset_optim, fairseq's --finetune-from-model, Marian's --pretrained-model).
 */
#ifndef TRAINER_FINETUNE_H
#define TRAINER_FINETUNE_H

#include "data/spm.h"
#include "model/model.h"
#include "train/config.h"

/* Builds *m (model_create from cfg->model on be) with the weights of the checkpoint
 * cfg->init_from and gives *spm that checkpoint's SentencePiece model, written as dir/spm.model;
 * sets cfg->init_from_crc to the file's CRC-32 (8 lowercase hex digits). On error *m and *spm
 * hold nothing to free. Errors (each names train.init_from and the file): the file cannot be
 * read; its CRC-32 differs from a given train.init_from_crc; checkpoint_load_weights's; a [model]
 * key of cfg differs from the checkpoint's (every one that differs is named, with both values);
 * data.vocab_size is not its SentencePiece model's size; data.spm_model names another
 * SentencePiece model; a tensor of the built model differs from the checkpoint's (named, with
 * both shapes); the copy of spm.model cannot be written. */
Status init_from_checkpoint(Config *cfg, const char *dir, const Backend *be, Model *m, Spm **spm,
                            Err *err);

#endif
