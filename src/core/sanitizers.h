/* core/sanitizers.h — which sanitizer a translation unit is built under, in C and C++ alike
 * (GCC defines __SANITIZE_ADDRESS__; Clang answers __has_feature).
 *  - TRAINER_ASAN: 1 under AddressSanitizer, else 0.
 *  - TRAINER_MSAN: 1 under MemorySanitizer (Clang only), else 0.
 */
#ifndef TRAINER_SANITIZERS_H
#define TRAINER_SANITIZERS_H

#if defined(__SANITIZE_ADDRESS__)
#define TRAINER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRAINER_ASAN 1
#endif
#endif
#ifndef TRAINER_ASAN
#define TRAINER_ASAN 0
#endif

#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
#define TRAINER_MSAN 1
#endif
#endif
#ifndef TRAINER_MSAN
#define TRAINER_MSAN 0
#endif

#endif
