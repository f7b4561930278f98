// spm.cc — the C API of spm.h over SentencePiece's C++ API. The only C++ file in the project.
//
// Rules kept here:
//  - no C++ exception leaves this file: every entry point catches std::exception and (...);
//  - a non-OK sentencepiece::util::Status becomes STATUS_ERR with the library's message in Err;
//  - everything handed to C is malloc'd (freed by the caller with free()).
//
// Determinism of spm_train (SentencePiece 0.1.97, Debian's version; checked by experiment):
//  - The only randomness in unigram training is the sampling of input sentences when the corpus
//    has more lines than input_sentence_size (2,000,000 here; Multi30k has ~58k lines, so no
//    sampling happens for us). There is no "random_seed" training option. Experiment: with a
//    500-line cap on 3000 lines, the model was identical across processes and for any value of
//    sentencepiece::SetRandomGeneratorSeed (or none), i.e. this version samples reproducibly.
//    Belt and braces for other versions, where sampling draws from a thread-local std::mt19937
//    seeded on first use from the SetRandomGeneratorSeed value: we set a fixed seed and train in
//    a fresh std::thread, so every call starts from the same generator state.
//  - The EM steps split sentences over num_threads workers; the experiment gave different piece
//    scores for 2 and 4 threads. So the model is reproducible for the same input and the same
//    num_threads only: callers should pass a fixed num_threads (from the config), not the core
//    count of the machine.
//  - The model proto records the trainer options, including model_prefix and the input file
//    names, so byte-identical models also need the same prefix and input paths.

#include "data/spm.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

struct Spm {
    sentencepiece::SentencePieceProcessor sp;
    int vocab = 0;
};

namespace {

constexpr unsigned kTrainSeed = 20240601u;  // fixed seed for input sampling (see above)
constexpr int kInputSentenceCap = 2000000;

Status from_spm_status(const sentencepiece::util::Status &st, Err *err, const char *what) {
    return err_set(err, "%s: SentencePiece: %s", what, st.ToString().c_str());
}

// ---- the normalisation tables of a model, checked before SentencePiece may use them ----
//
// SentencePiece (0.1.97, Debian's) trusts a model's precompiled character map: a NormalizerSpec's
// precompiled_charsmap = u32 trie size T, T bytes of a darts-clone double array (4-byte units),
// then NUL-terminated replacement strings that the trie's values point into. Its Normalizer
// walks the trie without bounds checks and calls strlen on &strings[value], so a damaged or
// crafted table — a model stored in a checkpoint is input — makes spm_encode / spm_decode read
// out of bounds and crash (found by fuzzing: tests/fuzz/regressions/spm/). We therefore walk
// every state reachable in the trie, as darts-clone's commonPrefixSearch would, and require
// that every unit it may read lies in the array and every value points at a NUL-terminated
// string inside the table. darts-clone unit layout (darts.h, DoubleArrayUnit): has_leaf = bit 8,
// value = bits 0..30, label = bit 31 and bits 0..7, offset = (unit >> 10) << ((unit & 512) >> 6).

uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

// Returns nullptr if the table is safe, else the reason.
const char *charsmap_problem(const unsigned char *p, size_t n) {
    if (n == 0) return nullptr;  // no table: SentencePiece does not build a trie
    if (n <= 4) return nullptr;  // SentencePiece refuses it itself ("blob ... is broken")
    uint32_t trie_bytes = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                          (uint32_t)p[3] << 24;
    if (trie_bytes >= n) return nullptr;  // refused by SentencePiece too
    size_t units = trie_bytes / 4;
    const unsigned char *strings = p + 4 + trie_bytes;
    size_t strings_n = n - 4 - trie_bytes;
    if (units == 0) return "its trie is empty";
    auto unit = [p](size_t i) {
        const unsigned char *q = p + 4 + 4 * i;
        return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    };
    std::vector<char> seen(units, 0);
    std::vector<uint32_t> todo{0};  // node positions; the search starts at unit 0
    seen[0] = 1;
    while (!todo.empty()) {
        uint32_t node = todo.back();
        todo.pop_back();
        uint32_t base = node ^ unit_offset(unit(node));
        if ((size_t)(base | 0xffu) >= units) return "its trie points outside itself";
        for (uint32_t c = 0; c < 256; c++) {
            uint32_t child = base ^ c, u = unit(child);
            if ((u & ((1u << 31) | 0xffu)) != c) continue;  // label: no transition on c
            if (u & (1u << 8)) {                              // has_leaf: value at the child's base
                uint32_t leaf = child ^ unit_offset(u);
                if ((size_t)leaf >= units) return "its trie points outside itself";
                uint32_t value = unit(leaf) & ((1u << 31) - 1);
                if (value >= strings_n || !std::memchr(strings + value, 0, strings_n - value))
                    return "a replacement string lies outside the table";
            }
            if (!seen[child]) {
                seen[child] = 1;
                todo.push_back(child);
            }
        }
    }
    return nullptr;
}

// Reads a protobuf varint at p[*at..n); false if malformed.
bool read_varint(const unsigned char *p, size_t n, size_t *at, uint64_t *v) {
    *v = 0;
    for (int shift = 0; *at < n && shift < 64; shift += 7) {
        unsigned char b = p[(*at)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

// Calls fn(field, wire type, data, size, value) for each field of a serialized message: for a
// varint (wire type 0) value holds it, for a length-delimited field (2) data and size its bytes,
// for a fixed64 (1) or fixed32 (5) field data its 8 or 4 bytes; fn returns false to stop. False
// if the message is malformed or fn stopped.
template <typename F>
bool for_each_field(const unsigned char *p, size_t n, F fn) {
    size_t at = 0;
    while (at < n) {
        uint64_t key, v = 0;
        if (!read_varint(p, n, &at, &key)) return false;
        int wire = (int)(key & 7);
        const unsigned char *data = p + at;
        size_t size = 0;
        switch (wire) {
        case 0:
            if (!read_varint(p, n, &at, &v)) return false;
            break;
        case 1: size = 8; break;
        case 5: size = 4; break;
        case 2:
            if (!read_varint(p, n, &at, &v) || v > n - at) return false;
            data = p + at, size = (size_t)v;
            break;
        default: return false;
        }
        if (size > n - at) return false;
        at += size;
        if (!fn(key >> 3, wire, data, size, v)) return false;
    }
    return true;
}

// Calls fn(field, data, size) for each length-delimited field of a serialized message; false if
// the message is malformed.
template <typename F>
bool for_each_bytes_field(const unsigned char *p, size_t n, F fn) {
    return for_each_field(p, n, [&](uint64_t field, int wire, const unsigned char *data,
                                    size_t size, uint64_t) {
        return wire != 2 || fn(field, data, size);
    });
}

// Checks the character maps of the normalizer (ModelProto field 3) and denormalizer (field 5)
// specs (NormalizerSpec field 2) of a loaded model, as SentencePiece itself re-serialises it.
Status check_charsmaps(const Spm *s, Err *err, const char *what) {
    std::string proto = s->sp.serialized_model_proto();
    const char *problem = nullptr;
    bool ok = for_each_bytes_field(
        reinterpret_cast<const unsigned char *>(proto.data()), proto.size(),
        [&](uint64_t field, const unsigned char *spec, size_t spec_n) {
            if (field != 3 && field != 5) return true;
            return for_each_bytes_field(spec, spec_n,
                                        [&](uint64_t f2, const unsigned char *map, size_t map_n) {
                                            if (f2 == 2 && !problem)
                                                problem = charsmap_problem(map, map_n);
                                            return true;
                                        });
        });
    if (!ok) problem = "it does not re-serialise to a well-formed protobuf";
    if (problem) {
        return err_set(err, "%s: the SentencePiece model's normalisation table is corrupt (%s); "
                            "use another model or checkpoint, or retrain", what, problem);
    }
    return STATUS_OK;
}

// Checks the project's fixed special ids and the normalisation tables, and caches the
// vocabulary size.
Status check_loaded(Spm *s, Err *err, const char *what) {
    if (check_charsmaps(s, err, what) != STATUS_OK) return STATUS_ERR;
    const auto &sp = s->sp;
    s->vocab = sp.GetPieceSize();
    if (s->vocab <= TOKEN_EOS) {
        return err_set(err, "%s: the SentencePiece model has only %d pieces; retrain it with the trainer",
                       what, s->vocab);
    }
    if (sp.pad_id() != TOKEN_PAD || sp.unk_id() != TOKEN_UNK || sp.bos_id() != TOKEN_BOS ||
        sp.eos_id() != TOKEN_EOS) {
        return err_set(err,
                       "%s: the SentencePiece model has pad/unk/bos/eos ids %d/%d/%d/%d, but the "
                       "trainer requires %d/%d/%d/%d; retrain the model with the trainer",
                       what, sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id(), TOKEN_PAD,
                       TOKEN_UNK, TOKEN_BOS, TOKEN_EOS);
    }
    return STATUS_OK;
}

// ---- spm_hash: FNV-1a over the fields that decide segmentation (spm.h) ----
//
// sentencepiece_model.proto (0.1.97): ModelProto {1 pieces, 2 trainer_spec, 3 normalizer_spec,
// 4 self_test_data, 5 denormalizer_spec}; SentencePiece {1 piece, 2 score (float), 3 type
// (default NORMAL = 1)}; NormalizerSpec {1 name, 2 precompiled_charsmap, 3 add_dummy_prefix,
// 4 remove_extra_whitespaces, 5 escape_whitespaces (each default true), 6
// normalization_rule_tsv}; TrainerSpec {3 model_type (default UNIGRAM = 1), 24
// treat_whitespace_as_suffix, 26 allow_whitespace_only_pieces, 35 byte_fallback (default false),
// 44 unk_surface (default " \xE2\x81\x87 ")}. Every occurrence of a message is read into one
// set of values, later fields over earlier ones, as protobuf merges them.

struct Fnv {
    uint64_t h = 0xcbf29ce484222325ull;
    void bytes(const void *p, size_t n) {
        const unsigned char *b = static_cast<const unsigned char *>(p);
        for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    }
    void u32(uint32_t v) {
        unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                              (unsigned char)(v >> 24)};
        bytes(b, 4);
    }
    void str(const std::string &s) {
        u32((uint32_t)s.size());
        bytes(s.data(), s.size());
    }
};

uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

struct NormSpec {
    bool present = false;
    std::string name, charsmap, rules;
    uint32_t dummy_prefix = 1, remove_extra = 1, escape = 1;
    bool read(const unsigned char *p, size_t n) {
        present = true;
        return for_each_field(p, n, [&](uint64_t f, int wire, const unsigned char *d, size_t sz,
                                        uint64_t v) {
            std::string bytes(reinterpret_cast<const char *>(d), wire == 2 ? sz : 0);
            if (f == 1 && wire == 2) name = bytes;
            else if (f == 2 && wire == 2) charsmap = bytes;
            else if (f == 6 && wire == 2) rules = bytes;
            else if (f == 3 && wire == 0) dummy_prefix = v != 0;
            else if (f == 4 && wire == 0) remove_extra = v != 0;
            else if (f == 5 && wire == 0) escape = v != 0;
            return true;
        });
    }
    void hash(Fnv *h) const {
        h->u32(present);
        h->str(name);
        h->str(charsmap);
        h->u32(dummy_prefix);
        h->u32(remove_extra);
        h->u32(escape);
        h->str(rules);
    }
};

// The hash of a serialized ModelProto with vocab pieces; false if it is malformed.
bool model_hash(const std::string &proto, int vocab, uint64_t *out) {
    const unsigned char *p = reinterpret_cast<const unsigned char *>(proto.data());
    Fnv h;
    h.u32((uint32_t)vocab);
    NormSpec norm, denorm;
    uint32_t model_type = 1, ws_suffix = 0, ws_only = 0, byte_fallback = 0;
    std::string unk_surface = " \xE2\x81\x87 ";
    bool ok = for_each_field(p, proto.size(), [&](uint64_t f, int wire, const unsigned char *d,
                                                  size_t sz, uint64_t) {
        if (wire != 2) return true;
        if (f == 1) { // a piece, hashed in id order as it comes
            std::string piece;
            uint32_t score = 0, type = 1;
            if (!for_each_field(d, sz, [&](uint64_t f2, int w2, const unsigned char *d2,
                                           size_t sz2, uint64_t v2) {
                    if (f2 == 1 && w2 == 2) piece.assign(reinterpret_cast<const char *>(d2), sz2);
                    else if (f2 == 2 && w2 == 5) score = le32(d2);
                    else if (f2 == 3 && w2 == 0) type = (uint32_t)v2;
                    return true;
                }))
                return false;
            h.str(piece);
            h.u32(score);
            h.u32(type);
            return true;
        }
        if (f == 3) return norm.read(d, sz);
        if (f == 5) return denorm.read(d, sz);
        if (f != 2) return true;
        return for_each_field(d, sz, [&](uint64_t f2, int w2, const unsigned char *d2, size_t sz2,
                                         uint64_t v2) {
            if (f2 == 3 && w2 == 0) model_type = (uint32_t)v2;
            else if (f2 == 24 && w2 == 0) ws_suffix = v2 != 0;
            else if (f2 == 26 && w2 == 0) ws_only = v2 != 0;
            else if (f2 == 35 && w2 == 0) byte_fallback = v2 != 0;
            else if (f2 == 44 && w2 == 2)
                unk_surface.assign(reinterpret_cast<const char *>(d2), sz2);
            return true;
        });
    });
    if (!ok) return false;
    norm.hash(&h);
    denorm.hash(&h);
    h.u32(model_type);
    h.u32(ws_suffix);
    h.u32(ws_only);
    h.u32(byte_fallback);
    h.str(unk_surface);
    *out = h.h;
    return true;
}

}  // namespace

extern "C" {

Status spm_train(const char *const *text_files, int n_files, int vocab_size,
                 const char *model_prefix, int num_threads, Err *err) {
    return spm_train_symbols(text_files, n_files, vocab_size, model_prefix, num_threads, NULL,
                             err);
}

Status spm_train_symbols(const char *const *text_files, int n_files, int vocab_size,
                         const char *model_prefix, int num_threads, const char *user_symbols,
                         Err *err) {
    try {
        if (n_files <= 0 || !text_files) return err_set(err, "spm_train: no input text files given");
        if (!model_prefix || !*model_prefix) return err_set(err, "spm_train: empty model prefix");
        if (vocab_size <= TOKEN_EOS + 1) {
            return err_set(err, "spm_train: vocab_size %d is too small (needs > %d)", vocab_size,
                           TOKEN_EOS + 1);
        }
        std::string input;
        for (int i = 0; i < n_files; i++) {
            if (!text_files[i] || !*text_files[i]) {
                return err_set(err, "spm_train: input file %d has an empty name", i);
            }
            if (std::strchr(text_files[i], ',')) {
                return err_set(err,
                               "spm_train: input file '%s' contains ',' which SentencePiece uses to "
                               "separate file names; rename it",
                               text_files[i]);
            }
            if (i) input += ',';
            input += text_files[i];
        }
        if (num_threads <= 0) num_threads = 1;

        std::unordered_map<std::string, std::string> kw = {
            {"input", input},
            {"model_prefix", model_prefix},
            {"model_type", "unigram"},
            {"vocab_size", std::to_string(vocab_size)},
            {"character_coverage", "1.0"},
            {"input_sentence_size", std::to_string(kInputSentenceCap)},
            {"shuffle_input_sentence", "true"},
            {"num_threads", std::to_string(num_threads)},
            {"pad_id", std::to_string(TOKEN_PAD)},
            {"unk_id", std::to_string(TOKEN_UNK)},
            {"bos_id", std::to_string(TOKEN_BOS)},
            {"eos_id", std::to_string(TOKEN_EOS)},
            {"pad_piece", "<pad>"},
            {"unk_piece", "<unk>"},
            {"bos_piece", "<s>"},
            {"eos_piece", "</s>"},
            {"minloglevel", "2"},  // errors only (they come back to us as a Status anyway)
        };

        if (user_symbols && *user_symbols) kw["user_defined_symbols"] = user_symbols;
        sentencepiece::SetRandomGeneratorSeed(kTrainSeed);
        sentencepiece::util::Status st;
        std::string thread_error;
        // A fresh thread: its thread-local generator is seeded from kTrainSeed (see top of file).
        std::thread worker([&]() {
            try {
                st = sentencepiece::SentencePieceTrainer::Train(kw);
            } catch (const std::exception &e) {
                thread_error = e.what();
            } catch (...) {
                thread_error = "unknown C++ exception";
            }
        });
        worker.join();
        if (!thread_error.empty()) {
            return err_set(err, "training SentencePiece model '%s' on %s: %s", model_prefix,
                           input.c_str(), thread_error.c_str());
        }
        if (!st.ok()) {
            return err_set(err, "training SentencePiece model '%s' on %s: SentencePiece: %s",
                           model_prefix, input.c_str(), st.ToString().c_str());
        }
        return STATUS_OK;
    } catch (const std::exception &e) {
        return err_set(err, "training SentencePiece model '%s': %s", model_prefix ? model_prefix : "",
                       e.what());
    } catch (...) {
        return err_set(err, "training SentencePiece model: unknown C++ exception");
    }
}

Status spm_load(Spm **out, const char *model_path, Err *err) {
    *out = nullptr;
    Spm *s = nullptr;
    try {
        s = new Spm();
        std::string what = std::string("SentencePiece model '") + model_path + "'";
        auto st = s->sp.Load(model_path);
        if (!st.ok()) {
            err_set(err, "%s: SentencePiece: %s (check the path; a broken model file can be "
                         "deleted so that a new one is trained)", what.c_str(), st.ToString().c_str());
            goto fail;
        }
        if (check_loaded(s, err, what.c_str()) != STATUS_OK) goto fail;
        *out = s;
        return STATUS_OK;
    } catch (const std::exception &e) {
        err_set(err, "loading SentencePiece model '%s': %s", model_path, e.what());
    } catch (...) {
        err_set(err, "loading SentencePiece model '%s': unknown C++ exception", model_path);
    }
fail:
    delete s;
    return STATUS_ERR;
}

Status spm_load_from_bytes(Spm **out, const void *data, size_t n, Err *err) {
    *out = nullptr;
    Spm *s = nullptr;
    const char *what = "SentencePiece model stored in checkpoint";
    try {
        if (!data && n) return err_set(err, "%s: no data", what);
        s = new Spm();
        auto st = s->sp.LoadFromSerializedProto(
            std::string_view(static_cast<const char *>(data), n));
        if (!st.ok()) {
            from_spm_status(st, err, what);
            goto fail;
        }
        if (check_loaded(s, err, what) != STATUS_OK) goto fail;
        *out = s;
        return STATUS_OK;
    } catch (const std::exception &e) {
        err_set(err, "%s: %s", what, e.what());
    } catch (...) {
        err_set(err, "%s: unknown C++ exception", what);
    }
fail:
    delete s;
    return STATUS_ERR;
}

Status spm_serialize(const Spm *s, void **data, size_t *n, Err *err) {
    *data = nullptr;
    *n = 0;
    try {
        std::string bytes = s->sp.serialized_model_proto();
        if (bytes.empty()) return err_set(err, "serializing SentencePiece model: empty model");
        void *p = std::malloc(bytes.size());
        if (!p) return err_set(err, "serializing SentencePiece model: out of memory");
        std::memcpy(p, bytes.data(), bytes.size());
        *data = p;
        *n = bytes.size();
        return STATUS_OK;
    } catch (const std::exception &e) {
        return err_set(err, "serializing SentencePiece model: %s", e.what());
    } catch (...) {
        return err_set(err, "serializing SentencePiece model: unknown C++ exception");
    }
}

int spm_vocab_size(const Spm *s) { return s->vocab; }

Status spm_hash(const Spm *s, uint64_t *hash, Err *err) {
    *hash = 0;
    try {
        if (!model_hash(s->sp.serialized_model_proto(), s->vocab, hash))
            return err_set(err, "hashing SentencePiece model: it does not re-serialise to a "
                                "well-formed protobuf; use another model, or retrain");
        return STATUS_OK;
    } catch (const std::exception &e) {
        return err_set(err, "hashing SentencePiece model: %s", e.what());
    } catch (...) {
        return err_set(err, "hashing SentencePiece model: unknown C++ exception");
    }
}

Status spm_encode(const Spm *s, const char *text, int **ids, int *n, Err *err) {
    *ids = nullptr;
    *n = 0;
    try {
        std::vector<int> v;
        auto st = s->sp.Encode(std::string_view(text ? text : ""), &v);
        if (!st.ok()) return from_spm_status(st, err, "encoding text");
        if (v.size() > (size_t)0x7fffffff) return err_set(err, "encoding text: too many pieces");
        int *p = static_cast<int *>(std::malloc(v.empty() ? sizeof(int) : v.size() * sizeof(int)));
        if (!p) return err_set(err, "encoding text: out of memory");
        if (!v.empty()) std::memcpy(p, v.data(), v.size() * sizeof(int));
        *ids = p;
        *n = (int)v.size();
        return STATUS_OK;
    } catch (const std::exception &e) {
        return err_set(err, "encoding text: %s", e.what());
    } catch (...) {
        return err_set(err, "encoding text: unknown C++ exception");
    }
}

Status spm_decode(const Spm *s, const int *ids, int n, char **text, Err *err) {
    *text = nullptr;
    try {
        std::vector<int> v;
        v.reserve(n > 0 ? (size_t)n : 0);
        for (int i = 0; i < n; i++) {
            int id = ids[i];
            if (id < 0 || id >= s->vocab) {
                return err_set(err, "decoding ids: id %d at position %d is outside the vocabulary [0, %d)",
                               id, i, s->vocab);
            }
            if (id == TOKEN_PAD || id == TOKEN_BOS || id == TOKEN_EOS) continue;
            v.push_back(id);
        }
        std::string out;
        auto st = s->sp.Decode(v, &out);
        if (!st.ok()) return from_spm_status(st, err, "decoding ids");
        char *p = static_cast<char *>(std::malloc(out.size() + 1));
        if (!p) return err_set(err, "decoding ids: out of memory");
        std::memcpy(p, out.c_str(), out.size() + 1);
        *text = p;
        return STATUS_OK;
    } catch (const std::exception &e) {
        return err_set(err, "decoding ids: %s", e.what());
    } catch (...) {
        return err_set(err, "decoding ids: unknown C++ exception");
    }
}

int spm_piece_id(const Spm *s, const char *piece) {
    if (!s || !piece) return -1;
    try {
        int id = s->sp.PieceToId(piece);
        return id >= 0 && id < s->vocab && s->sp.IdToPiece(id) == piece ? id : -1;
    } catch (...) {
        return -1;
    }
}

const char *spm_piece(const Spm *s, int id) {
    if (!s || id < 0 || id >= s->vocab) return "<out-of-range>";
    try {
        return s->sp.IdToPiece(id).c_str();
    } catch (...) {
        return "<error>";
    }
}

void spm_free(Spm *s) {
    try {
        delete s;
    } catch (...) {
    }
}

Status spm_same(const Spm *a, const Spm *b, int *same, Err *err) {
    uint64_t x = 0, y = 0;
    *same = 0;
    if (spm_hash(a, &x, err) || spm_hash(b, &y, err)) return STATUS_ERR;
    *same = x == y;
    return STATUS_OK;
}

}  // extern "C"
