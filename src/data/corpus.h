/* data/corpus.h — read and validate parallel text (one sentence a line), gzip or plain, through zlib.
 *
 * Files are read with gzopen/gzread, which decompress gzip transparently. A file that is not gzip
 * data — even one named *.gz — is read as plain text, byte for byte (zlib's "transparent" mode);
 * that is deliberate, so tests and users may pass plain .txt files anywhere a .gz is expected.
 * Such a *.gz file is counted in plain_gz and named in the summary, since it may also be a
 * download gone wrong (binary junk then fails the line-count check or is skipped as invalid
 * UTF-8).
 *
 * What a "line" is:
 *  - lines end at '\n'; a last line without a trailing '\n' is still a line, so "a\nb" and
 *    "a\nb\n" both have 2 lines, "" has 0 and "\n" has 1 (an empty line);
 *  - one '\r' at the end of a line ("\r\n" endings, or a lone trailing '\r' on the last line) is
 *    stripped and counted in crlf_stripped; a '\r' elsewhere in a line (old Mac line ends, or
 *    damage) is kept as text and the line counted in lone_cr — it does not end a line;
 *  - a UTF-8 byte order mark (EF BB BF) at the very start of a file is stripped and counted in
 *    bom_stripped; U+FEFF elsewhere is ordinary text and kept;
 *  - nothing else is changed: no whitespace trimming, no Unicode normalisation (SentencePiece does
 *    its own).
 *  - Lengths are in BYTES after stripping CR/BOM, excluding the terminating NUL.
 *
 * Memory: files are streamed through a fixed 64 KiB read buffer; while a line is assembled at most
 * max_line_bytes + 1 of its bytes are held (when max_line_bytes > 0), so a corrupt file with one
 * gigantic "line" cannot exhaust memory. Only kept lines are stored, each in its own allocation of
 * exactly its length + 1.
 *
 * Errors follow common.h: a Status is returned and Err names the file(s), what went wrong and what
 * to do. Detected: missing/unreadable file (strerror), a truncated gzip file (zlib's "unexpected end
 * of file", checked both after reading and at gzclose), corrupt gzip data (Z_DATA_ERROR, e.g. a bad
 * CRC), parallel files with different line counts (both paths and both counts). Everything is
 * host memory. Source: — (zlib's gz* API; UTF-8 validity per Unicode 15 Table 3-7).
 */
#ifndef TRAINER_DATA_CORPUS_H
#define TRAINER_DATA_CORPUS_H

#include <stddef.h>
#include <stdio.h>

#include "core/common.h"

/* Counts collected while reading. For corpus_load, the line counts are per side (both sides have
 * the same count, or loading fails) and each skipped pair is counted ONCE, under the first reason
 * that applies in the order: empty, too long, invalid UTF-8. crlf_stripped and bom_stripped add up
 * over both files. */
typedef struct {
    long pairs_read;     /* lines read per side */
    long kept;           /* pairs kept (= Corpus.n) */
    long skipped_empty;  /* either side empty or only ASCII whitespace (after stripping CR/BOM;
                          * a line over max_line_bytes counts as too long instead) */
    long skipped_long;   /* either side longer than max_line_bytes bytes */
    long skipped_utf8;   /* either side not strict UTF-8, or containing a NUL byte */
    long crlf_stripped;  /* lines that ended in "\r\n" (or had a trailing lone '\r') */
    long bom_stripped;   /* files that began with a UTF-8 BOM (0..2 for corpus_load) */
    long lone_cr;        /* lines (both sides) holding a '\r' that is not their last byte; kept */
    long plain_gz;       /* files named *.gz that are not gzip, read as plain text (0..2) */
    long max_line_bytes; /* the limit used (<= 0: none), for the summary */
} CorpusStats;

/* n kept pairs; src[i] and tgt[i] are NUL-terminated UTF-8 lines without newline, translations of
 * each other. A zero-initialised Corpus is empty and may be passed to corpus_free. */
typedef struct {
    long n;
    char **src; /* [n] */
    char **tgt; /* [n] */
    CorpusStats stats;
} Corpus;

/* Loads the parallel files src_path and tgt_path (gzip or plain; see above) into c, streaming
 * both in lockstep. Pairs where either side is empty/whitespace-only, longer than max_line_bytes
 * bytes (no limit if max_line_bytes <= 0), or not strict UTF-8 / containing a NUL byte are skipped
 * and counted in c->stats; the others are kept in file order.
 * Errors (c is left empty, safe to corpus_free): a file missing or unreadable; a truncated or
 * corrupt gzip file; different line counts (the message names both files and both counts); and
 * no usable pair at all — both files empty, or every pair skipped — since an empty training or
 * evaluation set is always a mistake (the message says which case and the skip counts). */
Status corpus_load(Corpus *c, const char *src_path, const char *tgt_path, long max_line_bytes,
                   Err *err);

/* Prints one summary line for c to f, e.g.
 * "train: 29000 pairs read, 28997 kept, skipped: 1 empty, 2 too long (>1000 bytes), 0 invalid
 *  UTF-8; 0 CRLF, 0 BOM" (on one line), followed, only when they are not 0, by
 *  ", N lone CR (kept)" and "; N .gz file(s) not gzip (read as plain text)".
 * label may be NULL ("corpus"). No errors. */
void corpus_print_summary(const Corpus *c, const char *label, FILE *f);

/* The text between two joined sentences (data.concat): the piece CORPUS_SEP with a space on
 * each side. A joint SentencePiece model trained for joined examples holds CORPUS_SEP as a
 * user-defined symbol (one piece, never split). */
#define CORPUS_SEP "<sep>"

/* Joins the pairs of c into groups of k consecutive pairs in order (the last group may hold
 * fewer): each side of group g becomes its sentences joined by " " CORPUS_SEP " ", so that
 * c->n becomes ceil(n / k); k = 1 changes nothing. The stats stay those of the file. Source:
 * document-level examples by concatenation (Junczys-Dowmunt 2019, "Microsoft Translator at WMT
 * 2019", §2: sentences of a document joined with a separator). Errors (c unchanged): k < 1; a
 * sentence that holds CORPUS_SEP itself (it would end up split in two; the message names the
 * pair, counted from 1 among the kept pairs, and what to do). */
Status corpus_concat(Corpus *c, int k, Err *err);

/* lines[0..n) joined k at a time as corpus_concat joins one side, into *out (malloc'd array of
 * *nout = ceil(n / k) malloc'd strings; free with corpus_free_lines). Errors: as corpus_concat's
 * (the message names the line, from 1). */
Status corpus_join_lines(char *const *lines, long n, int k, char ***out, long *nout, Err *err);

/* The sentences of a joined line: writes the count of its parts (separated by each occurrence
 * of CORPUS_SEP) to *nparts and returns the line with each separator and the spaces around it
 * replaced by one space (malloc'd; the document text that document BLEU scores). parts, if non-NULL, receives *nparts malloc'd strings (each part
 * trimmed of the spaces next to the separators; the caller frees them) and must have room for
 * max_parts; with more parts than that only the first max_parts are stored. No errors. */
char *corpus_split_joined(const char *line, int *nparts, char **parts, int max_parts);

/* Frees everything c owns and zeroes it. Safe on a zeroed or already-freed Corpus and on NULL. */
void corpus_free(Corpus *c);

/* Reads every line of one file (gzip or plain) into *lines (malloc'd array of *n malloc'd
 * NUL-terminated strings; free with corpus_free_lines). Strips a leading BOM and one trailing CR
 * per line, but otherwise keeps every line as it is, in order: empty lines and invalid UTF-8 are
 * kept and not flagged (check with corpus_utf8_valid if needed). No line is ever truncated.
 * max_line_bytes (> 0) is a safety limit: a line longer than that is an ERROR naming the file, the
 * line number and its length (such a "line" usually means a binary or wrong file); <= 0 means no
 * limit and unbounded memory per line. A line containing a NUL byte is an error too, since it
 * could not be represented as a C string.
 * stats, if non-NULL, is zeroed and filled: pairs_read = kept = *n (lines read), crlf_stripped,
 * bom_stripped (0 or 1), lone_cr, plain_gz (0 or 1); the skipped_* fields stay 0. An empty file gives *n = 0 and STATUS_OK.
 * Other errors as for corpus_load (missing/unreadable file, truncated/corrupt gzip); on error
 * *lines = NULL and *n = 0. */
Status corpus_read_lines(const char *path, long max_line_bytes, char ***lines, long *n,
                         CorpusStats *stats, Err *err);

/* Frees an array from corpus_read_lines (n strings, then the array). NULL is fine. */
void corpus_free_lines(char **lines, long n);

/* 1 if the n bytes at s are strict UTF-8 (Unicode 15 Table 3-7: no overlong forms, no surrogates
 * U+D800..U+DFFF, nothing above U+10FFFF, no truncated sequences) and contain no NUL byte; else 0. */
int corpus_utf8_valid(const char *s, size_t n);

/* Makes the NUL-terminated malloc'd string *line strict UTF-8 (corpus_utf8_valid): every byte
 * that does not belong to a valid sequence becomes one U+FFFD (EF BF BD, the replacement
 * character), the rest is kept as it is; *line is then reallocated. Returns 1 when a byte was
 * replaced, 0 when the line was valid (and is left untouched). No errors. Source: Unicode 15
 * §3.9 (U+FFFD substitution, one per byte). */
int corpus_utf8_repair(char **line);

/* Cuts the NUL-terminated UTF-8 string line to at most max_bytes bytes, at a character boundary
 * (never inside a multi-byte sequence), in place. Returns its new length in bytes. No errors. */
size_t corpus_utf8_crop(char *line, size_t max_bytes);

#endif
