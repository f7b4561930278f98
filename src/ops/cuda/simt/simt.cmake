# The SIMT emulation (target simt, a static library) and the tests of tests/simt (label simt);
# included by the top-level CMakeLists.txt when TRAINER_SIMT is ON (docs/design.md §11).
#
#   -DTRAINER_SIMT_TSAN=ON   (gcc) TSan mode: simt is built with SIMT_TSAN (blocks on several OS
#                            threads, thread_local __shared__, TSan fibers) and everything that
#                            links it is compiled and linked with -fsanitize=thread; the library
#                            itself stays uninstrumented (its own bookkeeping is not a race).
#                            scripts/simt_tsan.sh configures, builds and runs it.
#   -DTRAINER_SANITIZE=ON    (ASan+UBSan, the top-level option) works with TRAINER_SIMT: fibers
#                            switch with swapcontext and tell ASan; test_simt_asan_overrun runs.
option(TRAINER_SIMT_TSAN "SIMT emulation and its tests under ThreadSanitizer (gcc)" OFF)
find_package(Threads REQUIRED)

set(SIMT_DIR ${CMAKE_SOURCE_DIR}/src/ops/cuda/simt)
add_library(simt STATIC ${SIMT_DIR}/simt.cc)
target_include_directories(simt PUBLIC ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(simt PUBLIC Threads::Threads)
if(TRAINER_SIMT_TSAN)
  if(TRAINER_SANITIZE)
    message(FATAL_ERROR "TRAINER_SIMT_TSAN and TRAINER_SANITIZE cannot be combined (TSan and ASan "
            "exclude each other): use separate build folders")
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    message(FATAL_ERROR "TRAINER_SIMT_TSAN needs gcc (clang 14's TSan missed the races it must "
            "find): configure with -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++")
  endif()
  target_compile_definitions(simt PUBLIC SIMT_TSAN=1)
  target_compile_options(simt INTERFACE -fsanitize=thread -g)
  target_link_options(simt INTERFACE -fsanitize=thread)
endif()

# The same library with swapcontext instead of the register switch (plain builds only), so that
# the tests cover both switches.
set(SIMT_SWITCHES simt)
if(NOT TRAINER_SIMT_TSAN AND NOT TRAINER_SANITIZE)
  add_library(simt_ucontext STATIC ${SIMT_DIR}/simt.cc)
  target_include_directories(simt_ucontext PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_compile_definitions(simt_ucontext PRIVATE SIMT_FORCE_UCONTEXT=1)
  target_link_libraries(simt_ucontext PUBLIC Threads::Threads)
  list(APPEND SIMT_SWITCHES simt_ucontext)
endif()

set(SIMT_TEST_ENV "")
if(TRAINER_SANITIZE)
  set(SIMT_TEST_ENV "TRAINER_SANITIZE=1;ASAN_OPTIONS=detect_leaks=1:abort_on_error=0;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()

# test_simt: correct kernels under every schedule, the planted bugs of tests/simt/planted.cuh,
# the C API and a throughput line. test_simt_ucontext: the same on the swapcontext switch.
foreach(lib ${SIMT_SWITCHES})
  if(lib STREQUAL "simt")
    set(name test_simt)
  else()
    set(name test_${lib})
  endif()
  add_executable(${name} ${CMAKE_SOURCE_DIR}/tests/simt/test_simt.cc)
  target_link_libraries(${name} PRIVATE ${lib})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS simt ENVIRONMENT "${SIMT_TEST_ENV}")
endforeach()

# The C API from C.
add_executable(test_simt_c ${CMAKE_SOURCE_DIR}/tests/simt/test_simt_c.c)
target_link_libraries(test_simt_c PRIVATE simt)
target_include_directories(test_simt_c PRIVATE ${CMAKE_SOURCE_DIR}/src)
add_test(NAME test_simt_c COMMAND test_simt_c)
set_tests_properties(test_simt_c PROPERTIES LABELS simt ENVIRONMENT "${SIMT_TEST_ENV}")

# Planted bugs only a sanitizer can show: each must be reported (a harness that catches nothing
# proves nothing).
if(TRAINER_SANITIZE)
  add_executable(test_simt_asan_overrun ${CMAKE_SOURCE_DIR}/tests/simt/asan_overrun.cc)
  target_link_libraries(test_simt_asan_overrun PRIVATE simt)
  add_test(NAME test_simt_asan_overrun COMMAND test_simt_asan_overrun)
  set_tests_properties(test_simt_asan_overrun PROPERTIES LABELS simt WILL_FAIL FALSE
    PASS_REGULAR_EXPRESSION "AddressSanitizer: heap-buffer-overflow"
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0")
  # a static __shared__ array overrun in a kernel with dynamic shared memory too
  add_executable(test_simt_asan_static_overrun ${CMAKE_SOURCE_DIR}/tests/simt/asan_static_overrun.cc)
  target_link_libraries(test_simt_asan_static_overrun PRIVATE simt)
  add_test(NAME test_simt_asan_static_overrun COMMAND test_simt_asan_static_overrun)
  set_tests_properties(test_simt_asan_static_overrun PROPERTIES LABELS simt
    PASS_REGULAR_EXPRESSION "index 32 out of bounds for type 'float ?\\[32\\]'|AddressSanitizer: global-buffer-overflow"
    ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()
if(TRAINER_SIMT_TSAN)
  add_executable(test_simt_tsan_race ${CMAKE_SOURCE_DIR}/tests/simt/tsan_race.cc)
  target_link_libraries(test_simt_tsan_race PRIVATE simt)
  add_test(NAME test_simt_tsan_race COMMAND test_simt_tsan_race)
  set_tests_properties(test_simt_tsan_race PROPERTIES LABELS simt
    PASS_REGULAR_EXPRESSION "WARNING: ThreadSanitizer: data race")
  # a race between two blocks (never within one) is seen where they ran on different workers
  add_test(NAME test_simt_tsan_race_blocks COMMAND test_simt_tsan_race blocks)
  set_tests_properties(test_simt_tsan_race_blocks PROPERTIES LABELS simt
    PASS_REGULAR_EXPRESSION "WARNING: ThreadSanitizer: data race.*p_racy_blocks")
endif()
if(TRAINER_SIMT_TSAN)
  # the correct kernels must give no report: TSan's exit code 66 on a report fails the test
  set_tests_properties(test_simt test_simt_c PROPERTIES ENVIRONMENT
    "TRAINER_SANITIZE=1;SIMT_TEST_NO_FORK=1;TSAN_OPTIONS=exitcode=66:halt_on_error=0")
endif()
