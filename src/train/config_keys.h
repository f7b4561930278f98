/* train/config_keys.h — the key table of the run configuration and what is done to one key (its
 * default, the parsing of one value, its text, who reads it), for the three files of the
 * configuration alone: config_keys.c holds the table, config.c parses files and validates
 * (config.h), config_render.c writes a config and the key reference (config.h). Nothing outside
 * src/train/config*.c includes this header. Host memory. Source: — (Marian's one-declaration
 * option table).
 */
#ifndef TRAINER_CONFIG_KEYS_H
#define TRAINER_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "train/config.h"

typedef enum { T_INT, T_LONG, T_U64, T_FLOAT, T_BOOL, T_ENUM, T_STR } KeyType;
/* Who reads a key: every model (R_ALL), one model type, or the models whose attention needs it.
 * A key that the config's model does not read may keep its default but not be given
 * (config_validate), and config_to_ini leaves it out. */
typedef enum {
    R_ALL,       /* every model, and the training */
    R_RNN,       /* model.type = rnn */
    R_TF,        /* model.type = transformer */
    R_HEADS,     /* a Transformer, or an RNN whose attention is multi-head (attention.h) */
    R_LINFORMER, /* a model with a linformer attention */
    R_LOCAL,     /* a model with a luong_local attention */
} KeyReader;

typedef struct {
    const char *section, *key;
    KeyType type;
    size_t off, size;            /* field offset and size in Config */
    const char *def;             /* default, as it would be written in a file */
    double lo, hi;               /* numeric range (T_INT, T_LONG, T_FLOAT) */
    bool lo_open, hi_open;       /* exclusive bounds (T_FLOAT) */
    const char *const *names;    /* T_ENUM: valid names, indexed by the enum value */
    int n_names;
    const char *help;
    KeyReader reads;             /* which models read the key (config_key_read) */
    const char *instead;         /* for a key one model type does not read: what that type
                                    takes instead (the message of config_validate), or NULL */
} KeyDef;

/* The table: every key once, in file order within each section; config_n_keys rows (at most
 * CONFIG_MAX_KEYS, Config.given's flags, which follow its order). */
extern const KeyDef config_keys[];
extern const int config_n_keys;
/* The sections, in file order: run, model, data, train, dist. */
enum { CONFIG_N_SECTIONS = 5 };
extern const char *const config_sections[CONFIG_N_SECTIONS];
/* Each KeyType in words, as the key reference writes it: int, int, uint64, float, ... */
extern const char *const config_key_type_names[];

/* The field of key k in the Config at c, as a T * (CFLD: const). */
#define FLD(c, k, T) ((T *)((char *)(c) + (k)->off))
#define CFLD(c, k, T) ((const T *)((const char *)(c) + (k)->off))

/* 1 when c's model (and training) reads key k (KeyReader). No errors. */
bool config_key_read(const Config *c, const KeyDef *k);

/* The valid names of enum key k, ", "-separated, into buf (n bytes, truncated). No errors. */
void config_key_names(const KeyDef *k, char *buf, size_t n);

/* The accepted values of number key k into buf (n bytes): "[1, 65536]", "[0, 1)",
 * "[0, 18446744073709551615]". No errors. */
void config_key_range(const KeyDef *k, char *buf, size_t n);

/* 1 when v lies within number key k's range (its open and closed bounds). No errors. */
bool config_key_in_range(const KeyDef *k, double v);

/* The value of key k in c as file text (strings unquoted; floats in the fewest digits, at most
 * 9, that read back to the same float) into buf (n bytes). No errors. */
void config_key_value(const Config *c, const KeyDef *k, char *buf, size_t n);

/* Echo of user text s for messages into buf (n bytes): at most 60 bytes, "..." when cut; returns
 * buf. No errors. */
const char *config_echo(const char *s, char *buf, size_t n);

/* Length of the valid UTF-8 sequence at s (n >= 1 bytes available), or 0 if it is invalid
 * (overlong, a surrogate, above U+10FFFF, cut short). No errors. */
size_t config_utf8_len(const unsigned char *s, size_t n);

/* The one setter: parses val (a value's text, trimmed) into key k's field of c. where ("FILE:LINE"
 * or "--set section.key") heads every message. Errors: a value key k does not accept (quotes
 * around a non-string, empty, not a number or out of range, not a bool, not a valid name, an
 * unterminated quote or trailing comment, a control character, invalid UTF-8, too long), each
 * naming the key and what to write; *c is unchanged then. */
Status config_key_set(Config *c, const KeyDef *k, const char *val, const char *where, Err *err);

#endif
