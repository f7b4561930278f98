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

// common.h has no extern "C" guard of its own: include it with C linkage before spm.h does.
extern "C" {
#include "common.h"
}
#include "data/spm.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

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

// Checks the project's fixed special ids and caches the vocabulary size.
Status check_loaded(Spm *s, Err *err, const char *what) {
    const auto &sp = s->sp;
    s->vocab = sp.GetPieceSize();
    if (s->vocab <= SPM_EOS_ID) {
        return err_set(err, "%s: the SentencePiece model has only %d pieces; retrain it with the trainer",
                       what, s->vocab);
    }
    if (sp.pad_id() != SPM_PAD_ID || sp.unk_id() != SPM_UNK_ID || sp.bos_id() != SPM_BOS_ID ||
        sp.eos_id() != SPM_EOS_ID) {
        return err_set(err,
                       "%s: the SentencePiece model has pad/unk/bos/eos ids %d/%d/%d/%d, but the "
                       "trainer requires %d/%d/%d/%d; retrain the model with the trainer",
                       what, sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id(), SPM_PAD_ID,
                       SPM_UNK_ID, SPM_BOS_ID, SPM_EOS_ID);
    }
    return STATUS_OK;
}

}  // namespace

extern "C" {

Status spm_train(const char *const *text_files, int n_files, int vocab_size,
                 const char *model_prefix, int num_threads, Err *err) {
    try {
        if (n_files <= 0 || !text_files) return err_set(err, "spm_train: no input text files given");
        if (!model_prefix || !*model_prefix) return err_set(err, "spm_train: empty model prefix");
        if (vocab_size <= SPM_EOS_ID + 1) {
            return err_set(err, "spm_train: vocab_size %d is too small (needs > %d)", vocab_size,
                           SPM_EOS_ID + 1);
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
            {"pad_id", std::to_string(SPM_PAD_ID)},
            {"unk_id", std::to_string(SPM_UNK_ID)},
            {"bos_id", std::to_string(SPM_BOS_ID)},
            {"eos_id", std::to_string(SPM_EOS_ID)},
            {"pad_piece", "<pad>"},
            {"unk_piece", "<unk>"},
            {"bos_piece", "<s>"},
            {"eos_piece", "</s>"},
            {"minloglevel", "2"},  // errors only (they come back to us as a Status anyway)
        };

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
            if (id == SPM_PAD_ID || id == SPM_BOS_ID || id == SPM_EOS_ID) continue;
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

}  // extern "C"
