/* compare.h — `trainer compare`: one table, curves and attention maps for several trained runs.
 *
 *   trainer compare RUN... [--out DIR] [--beam K] [--len-penalty A] [--sentences i,j,k]
 *                          [--test-src FILE --test-tgt FILE] [--device cpu|cuda]
 *
 * RUN is either
 *  - a run folder written by `trainer train` (train.save_dir, e.g. checkpoints/luong) holding
 *    best.ckpt and metrics.jsonl; its name is the folder's last component; or
 *  - a config .ini file: its run folder is config_save_dir() of the loaded (and validated)
 *    config, its name run.name. If that folder has no best.ckpt yet, the run is trained first
 *    (train_run; resumed from last.ckpt when an interrupted run left one), then compared.
 * Names are reduced to [A-Za-z0-9._-] (other bytes become '_') and made unique ("name_2", ...)
 * because they also name files.
 *
 * For each run: best.ckpt is loaded (checkpoint_load; --device overrides the stored
 * train.device); metrics.jsonl is read with a tolerant key lookup ("key": number; unparsable
 * lines are skipped with a warning on stderr); the test set — the checkpoint's
 * data.test_src/test_tgt (for a config RUN: the .ini's), or --test-src/--test-tgt for every run —
 * is loaded with corpus_load (pairs with an empty or over-long side are skipped, so sentence
 * indices count kept pairs) and translated twice: greedily and with beam K (default 5) and
 * length penalty α (default 1.0; Wu et al. 2016 eq. 14), scored with sacreBLEU-compatible corpus
 * BLEU and chrF (metrics.h).
 *
 * Table columns (compare.md, compare.csv, and the Markdown table on stdout):
 *   run, model (rnn|transformer), cell (lstm|gru; "—" for a transformer), attention
 *   (config_attention_text: the RNN's kind, or the Transformer's "self/dec self/cross" kinds,
 *   one name when all agree), input feeding (yes|no; "—" for a transformer), parameters (floats),
 *   epochs (highest epoch with a validation line), training time (the last validation line's
 *   "elapsed", seconds; Markdown shows h/min/s), tokens/s (mean "tok_s" of the train lines),
 *   peak memory MiB (max "peak_rss_mb" of the validation lines; "—" / empty when absent: runs from
 *   before that key), best validation perplexity (min "val_ppl"), best validation BLEU
 *   (max "val_bleu"), test BLEU and chrF (percent) greedy, test BLEU and chrF with beam K.
 *   A missing value is "—" in Markdown and an empty field in CSV; CSV numbers are plain
 *   (no units, '.' decimal point, RFC 4180 quoting for text).
 *
 * Files written in DIR (default "compare" in the current folder, created with its parents):
 *   compare.md   the table, a line naming the machine (CPU "model name" from /proc/cpuinfo,
 *                online cores, date), the decoding settings, the runs' folders and test sets,
 *                and image links to the PNGs below (or why a map was skipped);
 *   compare.csv  the same columns;
 *   curves.png   validation BLEU and perplexity (log scale) by epoch of every run, two panels
 *                (plot_curves_png);
 *   attention_<run>_<i>.png  the greedy translation's attention of test sentence i (0-based;
 *                --sentences, default 0,1,2 — those beyond a short test set are left out unless
 *                given explicitly, which is an error) for each run with an attention; runs with
 *                model.attention = none are skipped with a note in compare.md.
 *
 * Needs the gnuplot program (checked before any training or decoding).
 */
#ifndef TRAINER_EVAL_COMPARE_H
#define TRAINER_EVAL_COMPARE_H

/* Runs `trainer compare` with the arguments after "compare" (argv[0] is the first RUN or
 * option). Progress and errors go to stderr, the Markdown table to stdout. Returns the exit
 * code: 0 success; 1 a failure (training, a checkpoint, metrics or test file that cannot be
 * read, a test set missing from a config, decoding, gnuplot, writing DIR) — the message names
 * the file and what to do; 2 a bad command line (unknown option, bad value, no RUN, a RUN that
 * is neither a run folder with best.ckpt and metrics.jsonl nor a loadable config file). */
int cmd_compare(int argc, char **argv);

#endif
