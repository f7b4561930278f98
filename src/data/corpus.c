/* corpus.c — streamed, validated reading of (parallel) text files through zlib. See corpus.h. */
#include "data/corpus.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { READ_BUF_BYTES = 64 * 1024 };

/* ---------------------------------------------------------------------------------------------
 * Line reader: one open file, a fixed read buffer, and a growable line buffer that holds at most
 * limit + 1 bytes of the current line (the rest is counted, not stored).
 * ------------------------------------------------------------------------------------------- */
typedef struct {
    gzFile gz;
    const char *path;
    unsigned char *buf; /* [READ_BUF_BYTES] */
    size_t buf_len, buf_pos;
    int eof;        /* gzread reported the end of the data */
    int started;    /* the first fill (and BOM check) has happened */
    int had_bom;
    char *line;     /* [line_cap], NUL-terminated stored bytes of the current line */
    size_t line_cap;
    long lineno;    /* lines returned so far */
} LineReader;

/* The current line as returned by lr_next. */
typedef struct {
    const char *text; /* stored bytes (all of them unless overlong), NUL-terminated */
    size_t len;       /* true length in bytes after stripping CR */
    int overlong;     /* limit > 0 and len > limit; text is then incomplete */
    int had_cr;       /* a trailing '\r' was stripped */
    int lone_cr;      /* a '\r' is left inside the (stored part of the) line */
} LineView;

/* Describes zlib's error state of r into err. Returns STATUS_ERR. */
static Status lr_zlib_error(LineReader *r, int errnum, const char *zmsg, int saved_errno,
                            Err *err) {
    const char *redo = "re-create or re-download it (e.g. data/get_multi30k.sh for Multi30k)";
    if (errnum == Z_BUF_ERROR)
        return err_set(err, "%s: truncated gzip file (the compressed data ends in the middle of "
                            "the stream); %s", r->path, redo);
    if (errnum == Z_DATA_ERROR)
        return err_set(err, "%s: corrupt gzip data (%s); %s", r->path,
                       zmsg ? zmsg : "data error", redo);
    if (errnum == Z_ERRNO)
        return err_set(err, "%s: read error: %s; check that it is a readable regular file",
                       r->path, strerror(saved_errno));
    if (errnum == Z_MEM_ERROR)
        return err_set(err, "%s: out of memory while decompressing", r->path);
    return err_set(err, "%s: zlib error %d (%s) while reading; %s", r->path, errnum,
                   zmsg ? zmsg : "?", redo);
}

static Status lr_open(LineReader *r, const char *path, Err *err) {
    memset(r, 0, sizeof *r);
    r->path = path;
    errno = 0;
    r->gz = gzopen(path, "rb");
    if (!r->gz) {
        if (errno)
            return err_set(err, "cannot open %s: %s; check the path (run data/get_multi30k.sh to "
                                "fetch Multi30k)", path, strerror(errno));
        return err_set(err, "cannot open %s: out of memory in zlib", path);
    }
    gzbuffer(r->gz, 128 * 1024);
    r->buf = xmalloc(READ_BUF_BYTES);
    r->line_cap = 256;
    r->line = xmalloc(r->line_cap);
    return STATUS_OK;
}

/* Closes r. If check is set (the file was read to its end without error), reports gzclose's
 * verdict: Z_BUF_ERROR there means the data ended inside a gzip member (truncated file). */
static Status lr_close(LineReader *r, int check, Err *err) {
    Status st = STATUS_OK;
    if (r->gz) {
        int rc = gzclose_r(r->gz);
        r->gz = NULL;
        if (check && rc != Z_OK) {
            if (rc == Z_BUF_ERROR)
                st = lr_zlib_error(r, Z_BUF_ERROR, NULL, 0, err);
            else if (rc == Z_ERRNO)
                st = err_set(err, "%s: error while closing: %s", r->path, strerror(errno));
            else
                st = lr_zlib_error(r, rc, NULL, 0, err);
        }
    }
    free(r->buf);
    free(r->line);
    r->buf = NULL;
    r->line = NULL;
    return st;
}

/* Refills the read buffer. Returns STATUS_OK (buf_len == 0 and eof set at the end of the data). */
static Status lr_fill(LineReader *r, Err *err) {
    errno = 0;
    int got = gzread(r->gz, r->buf, READ_BUF_BYTES);
    int saved_errno = errno;
    int errnum = Z_OK;
    const char *zmsg = gzerror(r->gz, &errnum);
    /* gzread returns a short count or 0 (not -1) on a truncated stream, so always ask gzerror. */
    if (got < 0 || errnum != Z_OK) return lr_zlib_error(r, errnum, zmsg, saved_errno, err);
    r->buf_len = (size_t)got;
    r->buf_pos = 0;
    if (got < READ_BUF_BYTES) r->eof = 1; /* gzread only returns short at the end of data */
    if (!r->started) {
        r->started = 1;
        /* gzread fills the whole request unless the data ends, so a BOM is never split here. */
        if (r->buf_len >= 3 && r->buf[0] == 0xEF && r->buf[1] == 0xBB && r->buf[2] == 0xBF) {
            r->buf_pos = 3;
            r->had_bom = 1;
        }
    }
    return STATUS_OK;
}

/* Appends n bytes to the current line, storing at most cap_bytes in total (SIZE_MAX: all). */
static void lr_append(LineReader *r, size_t *stored, const unsigned char *p, size_t n,
                      size_t cap_bytes) {
    if (*stored >= cap_bytes) return;
    if (n > cap_bytes - *stored) n = cap_bytes - *stored;
    if (*stored + n + 1 > r->line_cap) {
        size_t cap = r->line_cap;
        while (*stored + n + 1 > cap) cap *= 2;
        r->line = xrealloc(r->line, cap);
        r->line_cap = cap;
    }
    memcpy(r->line + *stored, p, n);
    *stored += n;
}

/* Reads the next line. Returns 1 (line in *v), 0 (end of file) or STATUS_ERR (< 0). limit > 0
 * bounds the bytes stored per line to limit + 1; longer lines come back with v->overlong set. */
static int lr_next(LineReader *r, long limit, LineView *v, Err *err) {
    size_t cap_bytes = limit > 0 ? (size_t)limit + 1 : (size_t)-1;
    size_t stored = 0, total = 0;
    unsigned char last = 0;
    int any = 0; /* saw at least one byte or the newline of this line */
    for (;;) {
        if (r->buf_pos == r->buf_len) {
            if (r->eof) break;
            if (lr_fill(r, err) != STATUS_OK) return STATUS_ERR;
            if (r->buf_pos == r->buf_len) {
                if (r->eof) break;
                continue;
            }
        }
        const unsigned char *start = r->buf + r->buf_pos;
        size_t avail = r->buf_len - r->buf_pos;
        const unsigned char *nl = memchr(start, '\n', avail);
        size_t n = nl ? (size_t)(nl - start) : avail;
        if (n) {
            lr_append(r, &stored, start, n, cap_bytes);
            total += n;
            last = start[n - 1];
        }
        any = 1;
        if (nl) {
            r->buf_pos += n + 1;
            goto got_line;
        }
        r->buf_pos += n;
    }
    if (!any) return 0; /* clean end of file: no partial last line */
got_line:
    v->had_cr = (total > 0 && last == '\r');
    if (v->had_cr) {
        total--;
        if (stored > total) stored = total; /* the CR was stored: drop it */
    }
    r->line[stored] = '\0';
    v->text = r->line;
    v->lone_cr = memchr(r->line, '\r', stored) != NULL;
    v->len = total;
    v->overlong = limit > 0 && total > (size_t)limit;
    r->lineno++;
    return 1;
}

/* ---------------------------------------------------------------------------------------------
 * UTF-8
 * ------------------------------------------------------------------------------------------- */
/* The length (1..4) of the strict UTF-8 sequence that starts at s[i] (i < n), or 0 when none
 * does there (a NUL byte, a stray continuation byte, an overlong form, a surrogate, a code point
 * above U+10FFFF, or a sequence cut short). */
static size_t utf8_seq_len(const unsigned char *s, size_t n, size_t i) {
    unsigned c = s[i];
    if (c == 0) return 0;
    if (c < 0x80) return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;      /* no overlong 3-byte forms */
        else if (c == 0xED) hi = 0x9F; /* no surrogates U+D800..U+DFFF */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;      /* no overlong 4-byte forms */
        else if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        return 0; /* 0x80..0xC1 (continuation / overlong 2-byte lead) or 0xF5..0xFF */
    }
    if (n - i - 1 < need) return 0;
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k <= need; k++)
        if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
    return need + 1;
}

int corpus_utf8_valid(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0, k; i < n; i += k)
        if ((k = utf8_seq_len(s, n, i)) == 0) return 0;
    return 1;
}

int corpus_utf8_repair(char **line) {
    const unsigned char *s = (const unsigned char *)*line;
    size_t n = strlen(*line);
    if (corpus_utf8_valid(*line, n)) return 0;
    char *out = xmalloc(3 * n + 1), *o = out; /* each byte at most one U+FFFD */
    for (size_t i = 0, k; i < n; i += k) {
        k = utf8_seq_len(s, n, i);
        if (k) {
            memcpy(o, s + i, k);
            o += k;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3); /* U+FFFD REPLACEMENT CHARACTER */
            o += 3;
            k = 1;
        }
    }
    *o = '\0';
    free(*line);
    *line = xrealloc(out, (size_t)(o - out) + 1);
    return 1;
}

size_t corpus_utf8_crop(char *line, size_t max_bytes) {
    size_t n = strlen(line);
    if (n <= max_bytes) return n;
    n = max_bytes;
    while (n > 0 && ((unsigned char)line[n] & 0xC0) == 0x80) n--; /* not inside a character */
    line[n] = '\0';
    return n;
}

/* 1 if path ends in ".gz" but r read it as plain text (zlib's transparent mode: no gzip header).
 * Valid once r has read data. */
static int plain_gz(const LineReader *r) {
    size_t n = strlen(r->path);
    return n >= 3 && !strcmp(r->path + n - 3, ".gz") && r->gz && gzdirect(r->gz);
}

static int blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f'))
            return 0;
    return 1;
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* ---------------------------------------------------------------------------------------------
 * Public API
 * ------------------------------------------------------------------------------------------- */
void corpus_free_lines(char **lines, long n) {
    if (!lines) return;
    for (long i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

void corpus_free(Corpus *c) {
    if (!c) return;
    if (c->src) corpus_free_lines(c->src, c->n);
    if (c->tgt) corpus_free_lines(c->tgt, c->n);
    memset(c, 0, sizeof *c);
}

Status corpus_read_lines(const char *path, long max_line_bytes, char ***lines, long *n,
                         CorpusStats *stats, Err *err) {
    Status st = STATUS_ERR;
    LineReader r;
    char **out = NULL;
    long count = 0, cap = 0, crlf = 0, lone_cr = 0;
    int is_plain_gz = 0;
    int opened = 0;
    *lines = NULL;
    *n = 0;
    if (stats) memset(stats, 0, sizeof *stats);
    if (lr_open(&r, path, err) != STATUS_OK) goto cleanup;
    opened = 1;
    for (;;) {
        LineView v;
        int rc = lr_next(&r, max_line_bytes, &v, err);
        if (rc < 0) goto cleanup;
        if (rc == 0) break;
        if (v.overlong) {
            err_set(err, "%s, line %ld: line is %zu bytes, longer than the limit of %ld bytes; "
                         "is this a one-sentence-per-line text file? (split the line or raise "
                         "the limit)", path, r.lineno, v.len, max_line_bytes);
            goto cleanup;
        }
        if (memchr(v.text, '\0', v.len)) {
            err_set(err, "%s, line %ld: contains a NUL byte; is this a text file? (remove the "
                         "NUL bytes)", path, r.lineno);
            goto cleanup;
        }
        crlf += v.had_cr;
        lone_cr += v.lone_cr;
        if (count == cap) {
            cap = cap ? cap * 2 : 1024;
            out = xrealloc(out, (size_t)cap * sizeof *out);
        }
        out[count++] = dup_bytes(v.text, v.len);
    }
    is_plain_gz = plain_gz(&r);
    opened = 0;
    if (lr_close(&r, 1, err) != STATUS_OK) goto cleanup;
    if (stats) {
        stats->pairs_read = stats->kept = count;
        stats->crlf_stripped = crlf;
        stats->lone_cr = lone_cr;
        stats->plain_gz = is_plain_gz;
        stats->bom_stripped = r.had_bom;
        stats->max_line_bytes = max_line_bytes > 0 ? max_line_bytes : 0;
    }
    *lines = out;
    *n = count;
    out = NULL;
    count = 0;
    st = STATUS_OK;
cleanup:
    if (opened) lr_close(&r, 0, NULL);
    corpus_free_lines(out, count);
    if (st != STATUS_OK && stats) memset(stats, 0, sizeof *stats);
    return st;
}

/* Counts the remaining lines of r (after the other file of a pair ended). Returns < 0 on error. */
static long count_rest(LineReader *r, long limit, Err *err) {
    LineView v;
    int rc;
    while ((rc = lr_next(r, limit, &v, err)) == 1) {
    }
    return rc < 0 ? -1 : r->lineno;
}

Status corpus_load(Corpus *c, const char *src_path, const char *tgt_path, long max_line_bytes,
                   Err *err) {
    Status st = STATUS_ERR;
    LineReader rs, rt;
    int open_s = 0, open_t = 0;
    long cap = 0;
    CorpusStats s;
    memset(c, 0, sizeof *c);
    memset(&s, 0, sizeof s);
    s.max_line_bytes = max_line_bytes > 0 ? max_line_bytes : 0;
    if (lr_open(&rs, src_path, err) != STATUS_OK) goto cleanup;
    open_s = 1;
    if (lr_open(&rt, tgt_path, err) != STATUS_OK) goto cleanup;
    open_t = 1;
    for (;;) {
        LineView a, b;
        int ka = lr_next(&rs, max_line_bytes, &a, err);
        if (ka < 0) goto cleanup;
        int kb = lr_next(&rt, max_line_bytes, &b, err);
        if (kb < 0) goto cleanup;
        if (ka == 0 && kb == 0) break;
        if (ka != kb) {
            /* One file ended first: count the rest of the other so both counts can be named. */
            long na = ka ? count_rest(&rs, max_line_bytes, err) : rs.lineno;
            long nb = kb ? count_rest(&rt, max_line_bytes, err) : rt.lineno;
            if (na < 0 || nb < 0) goto cleanup;
            err_set(err, "line count mismatch: %s has %ld lines but %s has %ld lines; parallel "
                         "files must have the same number of lines (line i of one translates "
                         "line i of the other): check that both belong to the same split and "
                         "that neither is truncated", src_path, na, tgt_path, nb);
            goto cleanup;
        }
        s.pairs_read++;
        s.crlf_stripped += a.had_cr + b.had_cr;
        s.lone_cr += a.lone_cr + b.lone_cr;
        /* One reason per pair, in the order empty, too long, invalid UTF-8 (an overlong line is
         * not tested for blankness: only its prefix is stored). */
        if ((!a.overlong && blank(a.text, a.len)) || (!b.overlong && blank(b.text, b.len))) {
            s.skipped_empty++;
            continue;
        }
        if (a.overlong || b.overlong) {
            s.skipped_long++;
            continue;
        }
        if (!corpus_utf8_valid(a.text, a.len) || !corpus_utf8_valid(b.text, b.len)) {
            s.skipped_utf8++;
            continue;
        }
        if (c->n == cap) {
            cap = cap ? cap * 2 : 4096;
            c->src = xrealloc(c->src, (size_t)cap * sizeof *c->src);
            c->tgt = xrealloc(c->tgt, (size_t)cap * sizeof *c->tgt);
        }
        c->src[c->n] = dup_bytes(a.text, a.len);
        c->tgt[c->n] = dup_bytes(b.text, b.len);
        c->n++;
    }
    s.bom_stripped = rs.had_bom + rt.had_bom;
    s.plain_gz = plain_gz(&rs) + plain_gz(&rt);
    open_s = open_t = 0;
    if (lr_close(&rs, 1, err) != STATUS_OK) {
        lr_close(&rt, 0, NULL);
        goto cleanup;
    }
    if (lr_close(&rt, 1, err) != STATUS_OK) goto cleanup;
    s.kept = c->n;
    if (c->n == 0) {
        if (s.pairs_read == 0)
            err_set(err, "no usable sentence pairs in %s / %s: both files are empty; check the "
                         "paths (run data/get_multi30k.sh to fetch Multi30k)", src_path, tgt_path);
        else
            err_set(err, "no usable sentence pairs in %s / %s: all %ld pairs were skipped (%ld "
                         "empty, %ld longer than %ld bytes, %ld invalid UTF-8); check the files' "
                         "contents and encoding, or raise the line-length limit",
                    src_path, tgt_path, s.pairs_read, s.skipped_empty, s.skipped_long,
                    s.max_line_bytes, s.skipped_utf8);
        goto cleanup;
    }
    if (c->n < cap) { /* trim the arrays to size */
        c->src = xrealloc(c->src, (size_t)c->n * sizeof *c->src);
        c->tgt = xrealloc(c->tgt, (size_t)c->n * sizeof *c->tgt);
    }
    c->stats = s;
    st = STATUS_OK;
cleanup:
    if (open_s) lr_close(&rs, 0, NULL);
    if (open_t) lr_close(&rt, 0, NULL);
    if (st != STATUS_OK) corpus_free(c);
    return st;
}

void corpus_print_summary(const Corpus *c, const char *label, FILE *f) {
    const CorpusStats *s = &c->stats;
    char lim[64];
    if (s->max_line_bytes > 0)
        snprintf(lim, sizeof lim, ">%ld bytes", s->max_line_bytes);
    else
        snprintf(lim, sizeof lim, "no limit");
    char extra[160] = "";
    size_t at = 0;
    if (s->lone_cr)
        at += (size_t)snprintf(extra + at, sizeof extra - at, ", %ld lone CR (kept)",
                               s->lone_cr);
    if (s->plain_gz)
        snprintf(extra + at, sizeof extra - at, "; %ld .gz file%s not gzip (read as plain text)",
                 s->plain_gz, s->plain_gz == 1 ? "" : "s");
    fprintf(f, "%s: %ld pairs read, %ld kept, skipped: %ld empty, %ld too long (%s), %ld invalid "
               "UTF-8; %ld CRLF, %ld BOM%s%s\n",
            label ? label : "corpus", s->pairs_read, s->kept, s->skipped_empty, s->skipped_long,
            lim, s->skipped_utf8, s->crlf_stripped, s->bom_stripped, extra,
            s->kept == 0 ? " (no usable pairs)" : "");
}

/* Joins items[0..n) k at a time into *out (ceil(n / k) strings), naming `what` i + 1 in the error
 * about a sentence that already holds the separator. */
static Status join_groups(char *const *items, long n, int k, const char *what, char ***out,
                          long *nout, Err *err) {
    *out = NULL, *nout = 0;
    if (k < 1) return err_set(err, "data.concat = %d: join at least 1 sentence a line", k);
    for (long i = 0; i < n && k > 1; i++)
        if (strstr(items[i], CORPUS_SEP))
            return err_set(err, "%s %ld holds \"%s\", the separator of data.concat between "
                           "joined sentences; remove it from the text, or train with "
                           "data.concat = 1", what, i + 1, CORPUS_SEP);
    long m = (n + k - 1) / k;
    char **o = xmalloc((size_t)(m ? m : 1) * sizeof *o);
    const size_t sep = strlen(" " CORPUS_SEP " ");
    for (long g = 0; g < m; g++) {
        long a = g * k, b = a + k < n ? a + k : n;
        size_t len = 1;
        for (long i = a; i < b; i++) len += strlen(items[i]) + sep;
        char *t = xmalloc(len), *w = t;
        for (long i = a; i < b; i++) {
            if (i > a) w += sprintf(w, " " CORPUS_SEP " ");
            w += sprintf(w, "%s", items[i]);
        }
        o[g] = t;
    }
    *out = o, *nout = m;
    return STATUS_OK;
}

Status corpus_join_lines(char *const *lines, long n, int k, char ***out, long *nout, Err *err) {
    return join_groups(lines, n, k, "line", out, nout, err);
}

Status corpus_concat(Corpus *c, int k, Err *err) {
    if (k == 1) return STATUS_OK;
    char **src, **tgt;
    long ns, nt;
    if (join_groups(c->src, c->n, k, "source sentence", &src, &ns, err)) return STATUS_ERR;
    if (join_groups(c->tgt, c->n, k, "target sentence", &tgt, &nt, err)) {
        corpus_free_lines(src, ns);
        return STATUS_ERR;
    }
    CorpusStats st = c->stats;
    corpus_free(c);
    c->n = ns, c->src = src, c->tgt = tgt, c->stats = st;
    return STATUS_OK;
}

char *corpus_split_joined(const char *line, int *nparts, char **parts, int max_parts) {
    const size_t sl = strlen(CORPUS_SEP);
    char *doc = xmalloc(strlen(line) + 1), *w = doc;
    int count = 0;
    for (const char *part = line;;) {
        const char *sep = strstr(part, CORPUS_SEP);
        const char *a = part, *b = sep ? sep : part + strlen(part);
        if (count) while (a < b && *a == ' ') a++; /* the spaces next to a separator */
        if (sep) while (b > a && b[-1] == ' ') b--;
        if (parts && count < max_parts) {
            parts[count] = xmalloc((size_t)(b - a) + 1);
            memcpy(parts[count], a, (size_t)(b - a));
            parts[count][b - a] = 0;
        }
        count++;
        if (w > doc && b > a) *w++ = ' ';
        memcpy(w, a, (size_t)(b - a));
        w += b - a;
        if (!sep) break;
        part = sep + sl;
    }
    *w = 0;
    *nparts = count;
    return doc;
}
