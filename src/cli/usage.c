/* usage.c — the usage text of `trainer`: every command's (cli_usage, for --help and after a bad
 * command line) and those of eval, translate, score and average, which their own --help prints
 * (cli.h). It calls no other file of src/cli, so the commands that print it (main.c, train.c,
 * average.c) and those it prints from do not call each other in a circle. */
#include <stdio.h>

#include "cli/cli.h"
#include "data/corpus.h" /* CORPUS_SEP */

void cli_usage(FILE *f) {
    fprintf(f,
            "usage:\n"
            "  trainer [train] --config FILE [--set section.key=value]... [--resume]\n"
            "      train a model; --resume continues from <save_dir>/last.ckpt\n");
    cli_eval_usage(f);
    cli_translate_usage(f);
    cli_score_usage(f);
    fprintf(f,
            "  trainer compare RUN_DIR|CONFIG|ARCHIVE... [--out DIR] [--beam K] [--len-penalty A]\n"
            "                  [--sentences i,j,k] [--test-src FILE --test-tgt FILE]...\n"
            "                  [--device cpu|cuda] [--baseline CONFIG]\n"
            "                  [--budget steps=N|epochs=N|hours=H] [--seeds s1,s2,...]\n"
            "      a report comparing runs (tables, curves, attention heatmaps, significance\n"
            "      against --baseline) in DIR; configs are trained first (--budget: each under\n"
            "      that budget; --seeds: once per seed); trainer compare --help for more\n"
            "  trainer archive RUN_DIR --out DIR [--test-src FILE --test-tgt FILE]... [--beam K]\n"
            "                  [--len-penalty A] [--sentences i,j,k] [--device cpu|cuda]\n"
            "                  [--threads N] [--config FILE] [--name NAME]\n"
            "      keep a run's card, config, metrics, test translations and attention in DIR,\n"
            "      without its checkpoints (a report reads it as a run)\n"
            "  trainer study STUDY.ini [--jobs N] [--only GLOBS] [--status] [--report]\n"
            "                [--prepare] [--device cpu|cuda]\n"
            "      train the plan's missing runs, archive each and write its report\n");
    cli_average_usage(f);
    fprintf(f,
            "  trainer --help     this text and every config key\n"
            "  trainer --version  the source revision and what this build can run\n\n");
}

void cli_eval_usage(FILE *f) {
    fprintf(f,
            "  trainer eval --checkpoint FILE[,FILE...] --src FILE --ref FILE [--ref FILE]...\n"
            "               [--beam K] [--len-penalty A] [--out FILE] [--json]\n"
            "               [--device cpu|cuda] [--threads N] [--crop-long]\n"
            "               [--batch-tokens N] [--batch-size N] [--concat K]\n"
            "      translate --src and score it against the references: BLEU and chrF as\n"
            "      sacreBLEU computes them by default (its signature lines; several --ref as\n"
            "      sacreBLEU takes several references) and the perplexity of the first --ref;\n"
            "      greedy by default, beam search with --beam K (length penalty A, Wu et al.\n"
            "      2016 eq. 14; default 1.0 with a beam, 0 when greedy); every line is\n"
            "      scored, as translate translates it: an empty line gives an empty\n"
            "      translation, bytes that are not UTF-8 are read as U+FFFD (a warning names\n"
            "      the lines), and a source line over the model's data.max_line_bytes is\n"
            "      refused, naming its line\n"
            "      --crop-long    cut such source lines to data.max_line_bytes bytes instead,\n"
            "                     and a source of more subword tokens than the model reads\n"
            "                     (model.linformer_max_len) to that many (stderr says how many;\n"
            "                     without it such a source is refused, naming its line)\n"
            "      --batch-tokens N  padded target tokens per decoding batch (default 6000)\n"
            "      --batch-size N    sentences per decoding batch at most (default: any)\n"
            "      --checkpoint a.ckpt,b.ckpt  an ensemble: the mean of the models'\n"
            "                     log-probabilities at each step (one SentencePiece model);\n"
            "                     its perplexity is given per model\n"
            "      --concat K     join K lines an example with \" " CORPUS_SEP " \" between\n"
            "                     them (default: the model's data.concat): BLEU and chrF\n"
            "                     score the examples as documents, the separators left\n"
            "                     out, and a sentence BLEU the translations split at the\n"
            "                     separators, over the examples that split into K lines\n"
            "      --out FILE     write the translations, one a line (an example a line\n"
            "                     when joined)\n"
            "      --threads N    CPU threads (default: the checkpoint's train.threads)\n"
            "      --json         print only a JSON object on stdout (the lines above go to\n"
            "                     stderr): bleu, chrf, ppl (for an ensemble ppl_models,\n"
            "                     one a model, and models, their count; a ppl is null\n"
            "                     when it overflowed),\n"
            "                     with joined lines concat, split_mismatches (examples\n"
            "                     that did not split right) and bleu_split (null: none did),\n"
            "                     sentences, seconds, beam, len_penalty, threads, nrefs,\n"
            "                     bleu_signature, chrf_signature\n");
}

void cli_translate_usage(FILE *f) {
    fprintf(f,
            "  trainer translate --checkpoint FILE[,FILE...] [--beam K] [--len-penalty A]\n"
            "                    [--nbest K] [--sample topk:K|topp:P|temp:T] [--seed N]\n"
            "                    [--attention-map PNG] [--alignment] [--crop-long]\n"
            "                    [--batch-tokens N] [--batch-size N] [--device cpu|cuda]\n"
            "                    [--threads N] [--stream] [--input FILE] [--output FILE]\n"
            "                    < in > out\n"
            "      translate standard input line by line (greedy, or beam search with --beam),\n"
            "      one output line for each input line (an empty one for an empty one; bytes\n"
            "      that are not UTF-8 are read as U+FFFD, with a warning naming the lines)\n"
            "      --checkpoint a.ckpt,b.ckpt  an ensemble: the mean of the models'\n"
            "                     log-probabilities at each step (one SentencePiece model)\n"
            "      --nbest K      K hypotheses a line, best first, as Marian's n-best lists:\n"
            "                     'i ||| translation ||| score' (i from 0, score log p(Y|X) /\n"
            "                     lp(Y) of the beam search; a beam of K unless --beam is given)\n"
            "      --sample topk:K  draw each token from the K most probable; topp:P from the\n"
            "                     fewest most probable holding probability P (nucleus\n"
            "                     sampling, Holtzman et al. 2020); temp:T from all at\n"
            "                     temperature T (temp:1 samples the model's distribution);\n"
            "                     --seed N (default 0) fixes the draws of each line\n"
            "      --attention-map PNG  draw the attention of the first line's translation\n"
            "                     (its folder must exist)\n"
            "      --alignment    append ' ||| i-j ...' to each line: target word j (0-based,\n"
            "                     whitespace words of the translation) aligned to the source\n"
            "                     word i whose pieces get the most attention (refused for a\n"
            "                     model whose attention keeps no weights)\n"
            "      --crop-long    cut a source line over the model's data.max_line_bytes (a\n"
            "                     model of data.concat = k joined sentences: k times that, and\n"
            "                     the separators) to that many bytes, and a source of more\n"
            "                     subword tokens than the model reads (model.linformer_max_len)\n"
            "                     to that many (stderr says how many); without it such a line\n"
            "                     is refused, naming it\n"
            "      --batch-tokens N  padded target tokens (beam rows included) per decoding\n"
            "                     batch (default 6000); the translations do not depend on it\n"
            "      --batch-size N    sentences per decoding batch at most (default: any)\n"
            "      --input FILE   read FILE (gzip or plain) instead of standard input\n"
            "      --output FILE  write FILE instead of standard output\n"
            "      --threads N    CPU threads (default: the checkpoint's train.threads)\n"
            "      --stream       translate each line as it arrives and flush its translation\n"
            "                     (the default when standard input is a pipe or a terminal;\n"
            "                     a regular file is read whole and decoded in batches, with\n"
            "                     a progress line on stderr when stderr is a terminal)\n");
}

void cli_score_usage(FILE *f) {
    fprintf(f,
            "  trainer score --checkpoint FILE[,FILE...] --src FILE --ref FILE [--normalize]\n"
            "                [--json] [--crop-long] [--batch-tokens N] [--batch-size N]\n"
            "                [--device cpu|cuda] [--threads N]\n"
            "      forced decoding (as marian-scorer, fairseq-score): for each line, log p(ref |\n"
            "      src) in nats, summed over the reference's subword pieces and EOS; one number\n"
            "      a line, in input order (files gzip or plain, of the same number of lines;\n"
            "      an empty source line is refused)\n"
            "      --normalize    the mean log-probability per token instead of the sum\n"
            "      --json         one JSON object a line: line (from 1), logp, tokens,\n"
            "                     logp_per_token\n"
            "      --checkpoint a.ckpt,b.ckpt  an ensemble: the mean of the models'\n"
            "                     log-probabilities at each step (one SentencePiece model)\n"
            "      --crop-long    cut a source line over data.max_line_bytes (k times it and\n"
            "                     the separators for a data.concat = k model; or of more\n"
            "                     tokens than the model reads) instead of refusing it\n"
            "      --batch-tokens N, --batch-size N  padded target tokens and sentences per\n"
            "                     batch (default 6000 tokens, any number of sentences)\n"
            "      --threads N    CPU threads (default: the checkpoint's train.threads)\n");
}

void cli_average_usage(FILE *f) {
    fprintf(f,
            "  trainer average --out FILE CKPT...\n"
            "      average the parameters of checkpoints of one model into FILE, the weights\n"
            "      alone (no optimizer state), with the config and training state of the last\n"
            "      CKPT: to evaluate, translate or fine-tune (train.init_from), not to resume\n");
}
