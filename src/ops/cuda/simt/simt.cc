/* ops/cuda/simt/simt.cc — the SIMT emulation's run time: fibers, the block scheduler, barriers,
 * warp collectives, shared memory, schedules and error reports (contract: simt.h, simt_c.h).
 *
 * Fiber switch: on x86-64 a hand-written register switch (simt_ctx_switch below: saves the
 * callee-saved registers, MXCSR and the x87 control word on the old stack, swaps stack
 * pointers); elsewhere, or with SIMT_FORCE_UCONTEXT, swapcontext. Either way every switch is
 * announced to ASan (__sanitizer_start/finish_switch_fiber) and TSan (__tsan_switch_to_fiber):
 * the sanitizers need those annotations, not swapcontext itself (ASan's swapcontext interceptor
 * even clears the whole target stack's shadow on every switch, far slower than the register
 * switch). Fiber stacks are pooled per OS thread, with a guard page. Within a round of the
 * scheduler a fiber that waits or ends switches straight to the next runnable fiber of the
 * round's order, so the scheduler is entered once a round, not once a fiber.
 *
 * TSan mode (SIMT_TSAN defined; this file itself is not instrumented, the kernels are): blocks run
 * on 2 worker OS threads at once; every emulated thread is a TSan fiber, switched with the no-sync
 * flag, so TSan sees the threads of a block as distinct; the only happens-before edges are the
 * launch (start_sync), each completed barrier or warp collective (among its participants) and
 * the end of the grid (end_sync), and the end of a block before the next block on the same
 * worker (block_seq: that block reuses the thread_local __shared__ storage and the fibers). The
 * launch and the block before reach a block's threads, and they reach the grid end, through the
 * worker's own fiber (one acquire and one release of the shared objects a block, not a thread).
 * Limit: so races between two blocks are seen only when they run on different workers (with 2
 * workers taking blocks from one counter, most pairs do); races within a block are all seen.
 * Two workers, not more: TSan's vector clocks have an entry for every fiber ever created (each
 * worker keeps a block's worth), and every acquire and release walks them, so each further worker
 * makes every synchronisation dearer.
 * Source: CUDA C++ Programming Guide §B.6, §B.22, §B.23 (semantics); docs/gpu.md (design facts
 * measured on this machine).
 */
#include "simt.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if TRAINER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(SIMT_TSAN_BUILD)
extern "C" {
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
}
static const unsigned kTsanNoSync = 1u << 0;
#endif

#if defined(__x86_64__) && !defined(SIMT_FORCE_UCONTEXT)
#define SIMT_FAST_SWITCH 1
#endif

/* ---- the register switch (x86-64 System V) -------------------------------------------------- */
#if defined(SIMT_FAST_SWITCH)
/* simt_ctx_switch(save, load): pushes rbp rbx r12-r15 and an 8-byte MXCSR/x87-control word slot,
 * stores rsp in *save, loads rsp = load, pops the same and returns on the new stack.
 * simt_ctx_entry: where a new fiber's first switch returns to; calls r13(r12) (never returns). */
__asm__(".text\n"
        ".globl simt_ctx_switch\n"
        ".type simt_ctx_switch,@function\n"
        "simt_ctx_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size simt_ctx_switch, .-simt_ctx_switch\n"
        ".globl simt_ctx_entry\n"
        ".type simt_ctx_entry,@function\n"
        "simt_ctx_entry:\n"
        "  movq %r12, %rdi\n"
        "  callq *%r13\n"
        "  ud2\n"
        ".size simt_ctx_entry, .-simt_ctx_entry\n");
extern "C" void simt_ctx_switch(void **save, void *load);
extern "C" void simt_ctx_entry(void);
#endif

/* Static __shared__ storage of the plain build (simt.h): the linker's bounds of the section. */
#if !TRAINER_ASAN && !defined(SIMT_TSAN_BUILD)
extern "C" char __start_simt_shared[] __attribute__((weak));
extern "C" char __stop_simt_shared[] __attribute__((weak));
#endif

namespace simt {
namespace detail {
__thread const Ctx *g_ctx = nullptr;
}
} // namespace simt

namespace {

using simt::detail::Ctx;
using simt::detail::WarpOp;

enum State { ST_RUN, ST_BAR, ST_WARP, ST_DONE };

#if TRAINER_ASAN || defined(SIMT_TSAN_BUILD)
const size_t kStackBytes = 512 * 1024;
#else
const size_t kStackBytes = 64 * 1024;
#endif

struct Exec;

/* One emulated thread. */
struct Fiber {
    Ctx ctx;
    State state;
    unsigned linear; /* linear thread index in the block */
    /* what it waits for */
    const char *file;
    int line;
    WarpOp op;
    unsigned mask;
    unsigned arg;
    int width;
    uint64_t val, result;
    /* its context */
    char *stack_lo;    /* usable stack [stack_lo, stack_lo + kStackBytes) */
    void *sp;          /* fast switch: saved stack pointer */
    ucontext_t *uc;    /* ucontext switch */
    void *asan_fake;   /* ASan fake-stack handle while switched out */
    void *tsan_fiber;  /* TSan fiber (created once, reused by every block of this OS thread) */
};

struct Launch {
    const char *kernel, *file;
    int line;
    dim3 grid, block;
    size_t smem;
    simt::detail::BodyFn fn;
    const void *body;
    int kind;
    unsigned long long seed;
    unsigned long long launch_no;
    unsigned nthreads;
    std::atomic<bool> failed{false};
    std::mutex mu;
    std::string msg;
    char start_sync; /* TSan: the launch's happens-before object (launch -> every thread) */
    char end_sync;   /* TSan: the grid-end happens-before object (every thread -> return) */
};

/* Per OS thread: the scheduler, its fibers and their stacks. */
struct Exec {
    std::vector<std::unique_ptr<Fiber>> fibers;
    std::vector<unsigned> order;
    Launch *L = nullptr;
    Fiber *cur = nullptr;
    unsigned pos = 0; /* the running fiber's place in order (this round) */
    void *sched_sp = nullptr;
    ucontext_t sched_uc;
    const void *sched_stack_bottom = nullptr; /* ASan: the scheduler's stack (this OS thread's) */
    size_t sched_stack_size = 0;
    void *tsan_main = nullptr;
    char block_seq = 0; /* TSan: block end -> the next block of this OS thread (reused storage) */
    unsigned char *dyn = nullptr;
    size_t dyn_size = 0;
    bool dyn_valid = false;
    uint3 bid{0, 0, 0};
    unsigned nthreads = 0;
    bool block_failed = false;
    unsigned long long rng = 0;
    ~Exec() {
        for (auto &f : fibers) {
            if (f->stack_lo) munmap(f->stack_lo - getpagesize(), kStackBytes + getpagesize());
            delete f->uc;
        }
        free(dyn);
    }
};

thread_local std::unique_ptr<Exec> tl_exec;

std::mutex g_mu; /* guards the settings and the recorded error below */
bool g_sched_set = false;
int g_kind = SIMT_FORWARD;
unsigned long long g_seed = 0;
bool g_record = false;
bool g_have_error = false;
std::string g_error;
std::atomic<unsigned long long> g_threads_run{0};
std::atomic<unsigned long long> g_launch_no{0};

unsigned long long splitmix(unsigned long long *s) {
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A uniform index in [0, n). */
unsigned rand_below(unsigned long long *s, unsigned n) {
    return (unsigned)(((splitmix(s) >> 32) * (unsigned long long)n) >> 32);
}

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

/* Ends the launch with an error: prints and aborts, or records it (record mode). */
void fail(Launch *L, const std::string &what) {
    std::string m = fmt("simt: kernel %s (launched at %s:%d): ", L->kernel, L->file, L->line) + what;
    bool record;
    {
        std::lock_guard<std::mutex> g(g_mu);
        record = g_record;
    }
    if (!record) {
        fprintf(stderr, "%s\n", m.c_str());
        fflush(stderr);
        abort();
    }
    std::lock_guard<std::mutex> g(L->mu);
    if (!L->failed.load()) {
        L->msg = m;
        L->failed.store(true);
    }
}

std::string block_name(const Exec *E) {
    return fmt("block (%u,%u,%u)", E->bid.x, E->bid.y, E->bid.z);
}
std::string thread_name(const Fiber *f) {
    return fmt("thread (%u,%u,%u) [lane %u of warp %u]", f->ctx.tid.x, f->ctx.tid.y, f->ctx.tid.z,
               f->linear % 32, f->linear / 32);
}
void block_fail(Exec *E, const std::string &what) {
    E->block_failed = true;
    fail(E->L, block_name(E) + ": " + what);
}

const char *op_name(WarpOp op) {
    switch (op) {
    case simt::detail::OP_SYNCWARP: return "__syncwarp";
    case simt::detail::OP_SHFL_IDX: return "__shfl_sync";
    case simt::detail::OP_SHFL_UP: return "__shfl_up_sync";
    case simt::detail::OP_SHFL_DOWN: return "__shfl_down_sync";
    case simt::detail::OP_SHFL_XOR: return "__shfl_xor_sync";
    case simt::detail::OP_BALLOT: return "__ballot_sync";
    case simt::detail::OP_ANY: return "__any_sync";
    case simt::detail::OP_ALL: return "__all_sync";
    }
    return "?";
}

bool same_site(const char *f1, int l1, const char *f2, int l2) {
    return l1 == l2 && (f1 == f2 || strcmp(f1, f2) == 0);
}

/* ---- fibers ---------------------------------------------------------------------------------- */

char *alloc_stack() {
    size_t page = (size_t)getpagesize();
    void *m = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        fprintf(stderr, "simt: cannot map a %zu-byte fiber stack (out of memory)\n", kStackBytes);
        abort();
    }
    mprotect(m, page, PROT_NONE); /* guard page: an overflow faults */
    return (char *)m + page;
}

[[noreturn]] void fiber_main(Fiber *f);

/* The first fiber at place >= k of this round's order that can run (E->pos = its place), or
 * nullptr. */
Fiber *next_runnable(Exec *E, unsigned k) {
    for (; k < E->nthreads; k++) {
        Fiber *f = E->fibers[E->order[k]].get();
        if (f->state == ST_RUN) {
            E->pos = k;
            return f;
        }
    }
    return nullptr;
}

/* Scheduler -> fiber f (at place E->pos of this round's order); returns when the fibers that
 * follow it in the round have each waited or ended (yield below chains them), or the block has
 * failed. */
void resume(Exec *E, Fiber *f) {
    E->cur = f;
    simt::detail::g_ctx = &f->ctx;
#if TRAINER_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f->stack_lo, kStackBytes);
#endif
#if defined(SIMT_TSAN_BUILD)
    __tsan_switch_to_fiber(f->tsan_fiber, kTsanNoSync);
#endif
#if defined(SIMT_FAST_SWITCH)
    simt_ctx_switch(&E->sched_sp, f->sp);
#else
    swapcontext(&E->sched_uc, f->uc);
#endif
#if TRAINER_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    simt::detail::g_ctx = nullptr;
    E->cur = nullptr;
}

/* Fiber f, which now waits or has ended (final: it is never resumed), hands over to the next
 * runnable fiber of the round (after E->pos in E->order), or to the scheduler when there is none
 * or the block has failed: one switch a fiber rather than two, in the order the round would
 * resume them. Returns when f is resumed. */
void yield(Exec *E, Fiber *f, bool final) {
    Fiber *g = E->block_failed ? nullptr : next_runnable(E, E->pos + 1);
#if !TRAINER_ASAN
    (void)final;
#endif
    if (g) {
        E->cur = g;
        simt::detail::g_ctx = &g->ctx;
#if TRAINER_ASAN
        __sanitizer_start_switch_fiber(final ? nullptr : &f->asan_fake, g->stack_lo, kStackBytes);
#endif
#if defined(SIMT_TSAN_BUILD)
        __tsan_switch_to_fiber(g->tsan_fiber, kTsanNoSync);
#endif
#if defined(SIMT_FAST_SWITCH)
        simt_ctx_switch(&f->sp, g->sp);
#else
        swapcontext(f->uc, g->uc);
#endif
    } else {
#if TRAINER_ASAN
        __sanitizer_start_switch_fiber(final ? nullptr : &f->asan_fake, E->sched_stack_bottom,
                                       E->sched_stack_size);
#endif
#if defined(SIMT_TSAN_BUILD)
        __tsan_switch_to_fiber(E->tsan_main, kTsanNoSync);
#endif
#if defined(SIMT_FAST_SWITCH)
        simt_ctx_switch(&f->sp, E->sched_sp);
#else
        swapcontext(f->uc, &E->sched_uc);
#endif
    }
#if TRAINER_ASAN
    __sanitizer_finish_switch_fiber(f->asan_fake, nullptr, nullptr);
#endif
}

#if !defined(SIMT_FAST_SWITCH)
void uc_entry() { fiber_main(tl_exec->cur); }
#endif

void fiber_main(Fiber *f) {
    Exec *E = tl_exec.get();
#if TRAINER_ASAN
    /* the stack it came from: the first fiber an OS thread runs is entered from the scheduler,
     * whose stack is then recorded; the others may come from another fiber */
    const void *from_bottom = nullptr;
    size_t from_size = 0;
    __sanitizer_finish_switch_fiber(nullptr, &from_bottom, &from_size);
    if (!E->sched_stack_bottom) {
        E->sched_stack_bottom = from_bottom;
        E->sched_stack_size = from_size;
    }
#endif
    E->L->fn(E->L->body);
    f->state = ST_DONE;
    yield(E, f, true);
    abort(); /* never resumed */
}

/* Makes f start the kernel body at its next resume. */
void fiber_prepare(Fiber *f) {
    if (!f->stack_lo) f->stack_lo = alloc_stack();
#if TRAINER_ASAN
    /* frames of a fiber abandoned by a failed launch leave poisoned redzones behind; a fiber
     * that ended leaves only its entry frames, at the top */
    if (f->state == ST_DONE)
        __asan_unpoison_memory_region(f->stack_lo + kStackBytes - 8192, 8192);
    else
        __asan_unpoison_memory_region(f->stack_lo, kStackBytes);
#endif
#if defined(SIMT_FAST_SWITCH)
    /* the initial frame simt_ctx_switch pops: control word slot, r15, r14, r13 = entry function,
     * r12 = fiber, rbx, rbp, return address = simt_ctx_entry; rsp after the ret is 16-aligned */
    uintptr_t top = ((uintptr_t)f->stack_lo + kStackBytes) & ~(uintptr_t)15;
    uint64_t *ret_slot = (uint64_t *)(top - 24);
    uint64_t *p = ret_slot - 7;
    uint32_t ctl[2] = {0x1F80u, 0x037Fu}; /* default MXCSR, x87 control word */
    memcpy(&p[0], ctl, 8);
    p[1] = 0;                                  /* r15 */
    p[2] = 0;                                  /* r14 */
    p[3] = (uint64_t)(uintptr_t)&fiber_main;   /* r13 */
    p[4] = (uint64_t)(uintptr_t)f;             /* r12 */
    p[5] = 0;                                  /* rbx */
    p[6] = 0;                                  /* rbp */
    p[7] = (uint64_t)(uintptr_t)&simt_ctx_entry;
    f->sp = p;
#else
    if (!f->uc) f->uc = new ucontext_t;
    getcontext(f->uc);
    f->uc->uc_stack.ss_sp = f->stack_lo;
    f->uc->uc_stack.ss_size = kStackBytes;
    f->uc->uc_link = nullptr;
    makecontext(f->uc, (void (*)())uc_entry, 0);
#endif
}

Fiber *fiber_of(Exec *E, unsigned i) {
    while (E->fibers.size() <= i) {
        std::unique_ptr<Fiber> f(new Fiber());
        f->state = ST_BAR; /* a fresh stack: prepared in full */
        E->fibers.push_back(std::move(f));
    }
    return E->fibers[i].get();
}

Exec *exec_here() {
    if (!tl_exec) tl_exec.reset(new Exec());
    return tl_exec.get();
}

/* ---- TSan happens-before among the participants of a completed barrier or collective -------- */
#if defined(SIMT_TSAN_BUILD)
void tsan_complete(Exec *E, Fiber **part, unsigned n) {
    /* a fresh sync object each time: it holds exactly these participants' histories */
    char *obj = (char *)malloc(1);
    for (unsigned i = 0; i < n; i++) {
        __tsan_switch_to_fiber(part[i]->tsan_fiber, kTsanNoSync);
        __tsan_release(obj);
    }
    for (unsigned i = 0; i < n; i++) {
        __tsan_switch_to_fiber(part[i]->tsan_fiber, kTsanNoSync);
        __tsan_acquire(obj);
    }
    __tsan_switch_to_fiber(E->tsan_main, kTsanNoSync);
    free(obj);
}
#endif

/* ---- the block scheduler --------------------------------------------------------------------- */

/* Completes every warp collective whose lanes have all arrived; reports the first lane that can
 * never complete. Returns true if any completed. */
bool complete_warps(Exec *E) {
    unsigned n = E->nthreads;
    bool any = false;
    Fiber *part[32];
    for (unsigned base = 0; base < n; base += 32) {
        unsigned lanes = n - base < 32 ? n - base : 32;
        for (unsigned l = 0; l < lanes; l++) {
            Fiber *f = E->fibers[base + l].get();
            if (f->state != ST_WARP) continue;
            unsigned M = f->mask;
            if (!((M >> l) & 1u)) {
                block_fail(E, fmt("%s at %s:%d by %s: its mask 0x%08x does not name the calling "
                                  "lane %u",
                                  op_name(f->op), f->file, f->line, thread_name(f).c_str(), M, l));
                return false;
            }
            unsigned np = 0;
            for (unsigned j = 0; j < 32; j++) {
                if (!((M >> j) & 1u)) continue;
                if (j >= lanes) {
                    block_fail(E, fmt("%s at %s:%d by %s: mask 0x%08x names lane %u, which does "
                                      "not exist (the block has %u threads; this warp has %u "
                                      "lanes)",
                                      op_name(f->op), f->file, f->line, thread_name(f).c_str(), M,
                                      j, n, lanes));
                    return false;
                }
                Fiber *g = E->fibers[base + j].get();
                if (g->state == ST_DONE) {
                    block_fail(E, fmt("%s at %s:%d by %s: mask 0x%08x names lane %u, which has "
                                      "exited",
                                      op_name(f->op), f->file, f->line, thread_name(f).c_str(), M,
                                      j));
                    return false;
                }
                if (g->state == ST_BAR) {
                    block_fail(E, fmt("%s at %s:%d by %s: mask 0x%08x names lane %u, which waits "
                                      "at __syncthreads at %s:%d (deadlock)",
                                      op_name(f->op), f->file, f->line, thread_name(f).c_str(), M,
                                      j, g->file, g->line));
                    return false;
                }
                if (g->op != f->op || g->mask != M || g->width != f->width) {
                    block_fail(E, fmt("mismatched warp collective: %s waits at %s at %s:%d with "
                                      "mask 0x%08x, but lane %u waits at %s at %s:%d with mask "
                                      "0x%08x",
                                      thread_name(f).c_str(), op_name(f->op), f->file, f->line, M,
                                      j, op_name(g->op), g->file, g->line, g->mask));
                    return false;
                }
                part[np++] = g;
            }
            /* every lane of M is here: compute the results by CUDA's rules */
            unsigned w = (unsigned)f->width;
            unsigned ballot = 0;
            for (unsigned i = 0; i < np; i++)
                if (part[i]->val) ballot |= 1u << (part[i]->linear - base);
            for (unsigned i = 0; i < np; i++) {
                Fiber *g = part[i];
                unsigned j = g->linear - base, src = j;
                switch (f->op) {
                case simt::detail::OP_SYNCWARP: g->result = 0; break;
                case simt::detail::OP_BALLOT: g->result = ballot; break;
                case simt::detail::OP_ANY: g->result = ballot != 0; break;
                case simt::detail::OP_ALL: g->result = ballot == M; break;
                default:
                    if (f->op == simt::detail::OP_SHFL_IDX) {
                        src = (j & ~(w - 1)) + (g->arg & (w - 1));
                    } else if (f->op == simt::detail::OP_SHFL_UP) {
                        src = (j & (w - 1)) >= g->arg ? j - g->arg : j;
                    } else if (f->op == simt::detail::OP_SHFL_DOWN) {
                        src = (j & (w - 1)) + g->arg < w ? j + g->arg : j;
                    } else { /* xor: a later group (or past the warp) gives the own value */
                        unsigned s = j ^ (g->arg & 31u);
                        src = s >= ((j / w) + 1) * w ? j : s;
                    }
                    if (src < lanes && ((M >> src) & 1u))
                        g->result = E->fibers[base + src]->val;
                    else
                        g->result = ~(uint64_t)0; /* an inactive source lane: poison */
                }
            }
#if defined(SIMT_TSAN_BUILD)
            tsan_complete(E, part, np);
#endif
            for (unsigned i = 0; i < np; i++) part[i]->state = ST_RUN;
            any = true;
        }
    }
    return any;
}

/* Releases the block barrier if every thread waits at the same __syncthreads, else reports. */
void complete_barrier(Exec *E) {
    unsigned n = E->nthreads;
    Fiber *first = nullptr;
    for (unsigned i = 0; i < n; i++) {
        Fiber *f = E->fibers[i].get();
        if (f->state == ST_BAR) {
            first = f;
            break;
        }
    }
    if (!first) { /* cannot happen: no fiber runnable, none at a collective, not all done */
        block_fail(E, "internal error: no runnable thread and nothing to complete");
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        Fiber *f = E->fibers[i].get();
        if (f->state == ST_DONE) {
            block_fail(E, fmt("__syncthreads at %s:%d (waited at by %s) is never reached by %s, "
                              "which has returned (every thread of the block must reach it)",
                              first->file, first->line, thread_name(first).c_str(),
                              thread_name(f).c_str()));
            return;
        }
        if (!same_site(f->file, f->line, first->file, first->line)) {
            block_fail(E, fmt("divergent barrier: %s waits at __syncthreads at %s:%d, %s at "
                              "__syncthreads at %s:%d",
                              thread_name(first).c_str(), first->file, first->line,
                              thread_name(f).c_str(), f->file, f->line));
            return;
        }
    }
#if defined(SIMT_TSAN_BUILD)
    std::vector<Fiber *> part(n);
    for (unsigned i = 0; i < n; i++) part[i] = E->fibers[i].get();
    tsan_complete(E, part.data(), n);
#endif
    for (unsigned i = 0; i < n; i++) E->fibers[i]->state = ST_RUN;
}

/* memset without the (TSan-intercepted) memset call: the scheduler's refill of the dynamic shared
 * memory is not an access of any emulated thread. */
void poison_fill(unsigned char *p, size_t n) {
    volatile unsigned char *q = p;
    for (size_t i = 0; i < n; i++) q[i] = 0xFF;
}

void run_block(Exec *E, Launch *L, unsigned long long block_linear) {
    const dim3 g = L->grid, b = L->block;
    E->bid = uint3{(unsigned)(block_linear % g.x), (unsigned)(block_linear / g.x % g.y),
                   (unsigned)(block_linear / ((unsigned long long)g.x * g.y))};
    unsigned n = L->nthreads;
    E->nthreads = n;
    E->block_failed = false;
#if !TRAINER_ASAN && !defined(SIMT_TSAN_BUILD)
    uintptr_t sh_lo = (uintptr_t)__start_simt_shared, sh_hi = (uintptr_t)__stop_simt_shared;
    if (sh_lo && sh_hi > sh_lo) memset(__start_simt_shared, 0xFF, sh_hi - sh_lo);
#endif
    if (L->smem) poison_fill(E->dyn, L->smem);
    fiber_of(E, n - 1);
#if defined(SIMT_TSAN_BUILD)
    __tsan_acquire(&L->start_sync); /* the worker's main fiber: after the launch */
    __tsan_release(&E->block_seq);  /* ... and before the block's threads */
#endif
    for (unsigned i = 0; i < n; i++) {
        Fiber *f = E->fibers[i].get();
        f->ctx.tid = uint3{i % b.x, i / b.x % b.y, i / (b.x * b.y)};
        f->ctx.bid = E->bid;
        f->ctx.bdim = b;
        f->ctx.gdim = g;
        f->linear = i;
        fiber_prepare(f);
        f->state = ST_RUN;
#if defined(SIMT_TSAN_BUILD)
        if (!f->tsan_fiber) f->tsan_fiber = __tsan_create_fiber(0);
        /* the launch (and the block before on this worker) happens before every thread, through
         * this worker's main fiber (below), and nothing else does */
        __tsan_switch_to_fiber(f->tsan_fiber, kTsanNoSync);
        __tsan_acquire(&E->block_seq);
        __tsan_switch_to_fiber(E->tsan_main, kTsanNoSync);
#endif
    }
    E->order.resize(n);
    unsigned long long rng = L->seed ^ (L->launch_no * 0xD1B54A32D192ED03ull) ^
                             (block_linear * 0x9E3779B97F4A7C15ull);
    for (;;) {
        /* one round: resume every runnable fiber once, in the schedule's order */
        if (L->kind == SIMT_REVERSE) {
            for (unsigned i = 0; i < n; i++) E->order[i] = n - 1 - i;
        } else {
            for (unsigned i = 0; i < n; i++) E->order[i] = i;
            if (L->kind == SIMT_RANDOM)
                for (unsigned i = n - 1; i > 0; i--) {
                    unsigned j = rand_below(&rng, i + 1);
                    unsigned t = E->order[i];
                    E->order[i] = E->order[j];
                    E->order[j] = t;
                }
        }
        if (Fiber *f = next_runnable(E, 0))
            resume(E, f); /* and, chained, every runnable fiber after it */
        if (E->block_failed) goto out;
        unsigned done = 0;
        for (unsigned i = 0; i < n; i++) done += E->fibers[i]->state == ST_DONE;
        if (done == n) break;
        if (complete_warps(E)) continue;
        if (E->block_failed) goto out;
        complete_barrier(E);
        if (E->block_failed) goto out;
    }
out:
#if defined(SIMT_TSAN_BUILD)
    /* every thread (also those a failure abandoned) happens before the grid end and before the
     * next block of this OS thread, which reuses the shared memory and the fibers */
    for (unsigned i = 0; i < n; i++) {
        __tsan_switch_to_fiber(E->fibers[i]->tsan_fiber, kTsanNoSync);
        __tsan_release(&E->block_seq);
    }
    __tsan_switch_to_fiber(E->tsan_main, kTsanNoSync);
    __tsan_acquire(&E->block_seq); /* the worker's main fiber joins the block's threads */
    __tsan_release(&L->end_sync);
#endif
    g_threads_run.fetch_add(n, std::memory_order_relaxed);
}

/* Makes this OS thread's dynamic shared buffer exactly smem bytes. */
void exec_begin_launch(Exec *E, Launch *L) {
    E->L = L;
    if (!E->dyn_valid || E->dyn_size != L->smem) {
        free(E->dyn);
        E->dyn = (unsigned char *)malloc(L->smem);
        if (!E->dyn && L->smem) {
            fprintf(stderr, "simt: cannot allocate %zu bytes of dynamic shared memory\n", L->smem);
            abort();
        }
        E->dyn_size = L->smem;
        E->dyn_valid = true;
    }
#if defined(SIMT_TSAN_BUILD)
    E->tsan_main = __tsan_get_current_fiber(); /* run_block releases block_seq from it */
#endif
}

#if defined(SIMT_TSAN_BUILD)
/* TSan mode: kWorkers OS threads that run blocks, started at the first launch, kept for the
 * process (their TSan fibers are reused across blocks and launches: creating one is costly). */
const unsigned kWorkers = 2;
struct Pool {
    std::mutex mu;
    std::condition_variable cv, done_cv;
    Launch *job = nullptr;
    unsigned long long nblocks = 0, gen = 0;
    const std::function<unsigned long long(unsigned long long)> *block_at = nullptr;
    std::atomic<unsigned long long> next{0};
    unsigned busy = 0;
};

void worker_main(Pool *P) {
    Exec *E = exec_here();
    unsigned long long seen = 0;
    for (;;) {
        Launch *L;
        {
            std::unique_lock<std::mutex> lk(P->mu);
            P->cv.wait(lk, [&]() { return P->gen != seen; });
            seen = P->gen;
            L = P->job;
        }
        exec_begin_launch(E, L);
        for (;;) {
            unsigned long long k = P->next.fetch_add(1, std::memory_order_relaxed);
            if (k >= P->nblocks || L->failed.load(std::memory_order_relaxed)) break;
            run_block(E, L, (*P->block_at)(k));
        }
        E->L = nullptr;
        std::lock_guard<std::mutex> lk(P->mu);
        if (--P->busy == 0) P->done_cv.notify_all();
    }
}

Pool &pool() {
    static Pool *P = nullptr;
    static std::once_flag once;
    std::call_once(once, []() {
        P = new Pool();
        for (unsigned w = 0; w < kWorkers; w++) std::thread(worker_main, P).detach();
    });
    return *P;
}
#endif

void schedule_from_env_locked() {
    if (g_sched_set) return;
    g_sched_set = true;
    const char *s = getenv("SIMT_SCHEDULE");
    if (!s || !*s || strcmp(s, "forward") == 0) {
        g_kind = SIMT_FORWARD;
    } else if (strcmp(s, "reverse") == 0) {
        g_kind = SIMT_REVERSE;
    } else if (strncmp(s, "random:", 7) == 0 && s[7]) {
        char *end = nullptr;
        unsigned long long seed = strtoull(s + 7, &end, 10);
        if (*end) {
            fprintf(stderr, "simt: SIMT_SCHEDULE=%s: the seed after random: must be a decimal "
                            "integer (e.g. random:1)\n", s);
            exit(2);
        }
        g_kind = SIMT_RANDOM;
        g_seed = seed;
    } else {
        fprintf(stderr, "simt: SIMT_SCHEDULE=%s is not a schedule: use forward, reverse or "
                        "random:SEED (a decimal seed)\n", s);
        exit(2);
    }
}

} // namespace

/* ---- the API --------------------------------------------------------------------------------- */

namespace simt {
namespace detail {

void syncthreads(const char *file, int line) {
    Exec *E = tl_exec.get();
    Fiber *f = E ? E->cur : nullptr;
    if (!f) {
        fprintf(stderr, "simt: __syncthreads at %s:%d called outside a kernel\n", file, line);
        abort();
    }
    f->state = ST_BAR;
    f->file = file;
    f->line = line;
    yield(E, f, false);
}

uint64_t warp_op(WarpOp op, unsigned mask, uint64_t val, unsigned arg, int width, const char *file,
                 int line) {
    Exec *E = tl_exec.get();
    Fiber *f = E ? E->cur : nullptr;
    if (!f) {
        fprintf(stderr, "simt: %s at %s:%d called outside a kernel\n", op_name(op), file, line);
        abort();
    }
    if (width < 1 || width > 32 || (width & (width - 1))) {
        block_fail(E, fmt("%s at %s:%d by %s: width %d is not a power of two in 1..32",
                          op_name(op), file, line, thread_name(f).c_str(), width));
        f->state = ST_BAR; /* never resumed: the launch ends */
        yield(E, f, false);
    }
    f->state = ST_WARP;
    f->op = op;
    f->mask = mask;
    f->val = val;
    f->arg = arg;
    f->width = width;
    f->file = file;
    f->line = line;
    yield(E, f, false);
    return f->result;
}

unsigned activemask() {
    Exec *E = tl_exec.get();
    Fiber *f = E ? E->cur : nullptr;
    if (!f) {
        fprintf(stderr, "simt: __activemask called outside a kernel\n");
        abort();
    }
    unsigned base = f->linear & ~31u, m = 0;
    for (unsigned j = 0; j < 32 && base + j < E->nthreads; j++)
        if (E->fibers[base + j]->state != ST_DONE) m |= 1u << j;
    return m;
}

void launch_impl(const char *kernel, const char *file, int line, dim3 grid, dim3 block,
                 size_t smem_bytes, BodyFn fn, const void *body) {
    Launch L;
    L.kernel = kernel;
    L.file = file;
    L.line = line;
    L.grid = grid;
    L.block = block;
    L.smem = smem_bytes;
    L.fn = fn;
    L.body = body;
    {
        std::lock_guard<std::mutex> g(g_mu);
        schedule_from_env_locked();
        L.kind = g_kind;
        L.seed = g_seed;
    }
    L.launch_no = g_launch_no.fetch_add(1);
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 || block.y > 1024 ||
        block.z > 64 || threads > 1024) {
        fail(&L, fmt("bad block (%u,%u,%u): each dimension > 0, x and y <= 1024, z <= 64, and at "
                     "most 1024 threads in all",
                     block.x, block.y, block.z));
    } else if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u ||
               grid.y > 65535 || grid.z > 65535) {
        fail(&L, fmt("bad grid (%u,%u,%u): each dimension > 0, x <= 2^31-1, y and z <= 65535",
                     grid.x, grid.y, grid.z));
    } else if (smem_bytes > 227 * 1024) {
        fail(&L, fmt("%zu bytes of dynamic shared memory: at most 227 KiB (232448 bytes)",
                     smem_bytes));
    }
    if (!L.failed.load()) {
        L.nthreads = (unsigned)threads;
        unsigned long long nb = (unsigned long long)grid.x * grid.y * grid.z;
        std::vector<unsigned long long> perm;
        if (L.kind == SIMT_RANDOM) {
            perm.resize(nb);
            for (unsigned long long i = 0; i < nb; i++) perm[i] = i;
            unsigned long long rng = L.seed ^ (L.launch_no * 0xA0761D6478BD642Full);
            for (unsigned long long i = nb - 1; i > 0; i--) {
                unsigned long long j = splitmix(&rng) % (i + 1);
                std::swap(perm[i], perm[j]);
            }
        }
        auto block_at = [&](unsigned long long k) {
            return L.kind == SIMT_RANDOM ? perm[k] : L.kind == SIMT_REVERSE ? nb - 1 - k : k;
        };
#if defined(SIMT_TSAN_BUILD)
        /* blocks on the worker threads at once; the relaxed counter gives no happens-before */
        Pool &P = pool();
        std::function<unsigned long long(unsigned long long)> at = block_at;
        __tsan_release(&L.start_sync);
        {
            std::unique_lock<std::mutex> lk(P.mu);
            P.job = &L;
            P.nblocks = nb;
            P.block_at = &at;
            P.next.store(0, std::memory_order_relaxed);
            P.busy = kWorkers;
            P.gen++;
            P.cv.notify_all();
            P.done_cv.wait(lk, [&]() { return P.busy == 0; });
            P.job = nullptr;
        }
        __tsan_acquire(&L.end_sync);
#else
        Exec *E = exec_here();
        exec_begin_launch(E, &L);
        for (unsigned long long k = 0; k < nb && !L.failed.load(); k++) run_block(E, &L, block_at(k));
        E->L = nullptr;
#endif
    }
    if (L.failed.load()) {
        std::string m;
        {
            std::lock_guard<std::mutex> g(L.mu);
            m = L.msg;
        }
        std::lock_guard<std::mutex> g(g_mu);
        g_have_error = true;
        g_error = m;
    }
}

} // namespace detail

void *dynamic_shared() {
    Exec *E = tl_exec.get();
    if (!E || !E->cur) {
        fprintf(stderr, "simt: dynamic_shared() (DYN_SHARED) called outside a kernel\n");
        abort();
    }
    return E->dyn;
}

} // namespace simt

extern "C" {

void simt_set_schedule(int kind, unsigned long long seed) {
    if (kind != SIMT_FORWARD && kind != SIMT_REVERSE && kind != SIMT_RANDOM) {
        fprintf(stderr, "simt_set_schedule: kind %d is not SIMT_FORWARD (0), SIMT_REVERSE (1) or "
                        "SIMT_RANDOM (2)\n", kind);
        abort();
    }
    std::lock_guard<std::mutex> g(g_mu);
    g_sched_set = true;
    g_kind = kind;
    g_seed = seed;
}

void simt_set_fail_mode(int record) {
    std::lock_guard<std::mutex> g(g_mu);
    g_record = record != 0;
}

int simt_take_error(char *msg, size_t len) {
    std::lock_guard<std::mutex> g(g_mu);
    if (!g_have_error) return 0;
    g_have_error = false;
    if (msg && len) snprintf(msg, len, "%s", g_error.c_str());
    return 1;
}

unsigned long long simt_threads_run(void) { return g_threads_run.load(); }

int simt_static_shared_poisoned(void) {
#if TRAINER_ASAN || defined(SIMT_TSAN_BUILD)
    return 0;
#else
    return 1;
#endif
}

int simt_concurrent_blocks(void) {
#if defined(SIMT_TSAN_BUILD)
    return (int)kWorkers;
#else
    return 1;
#endif
}

const char *simt_switch_kind(void) {
#if defined(SIMT_FAST_SWITCH)
    return "asm";
#else
    return "ucontext";
#endif
}

} // extern "C"
