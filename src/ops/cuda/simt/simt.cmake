# The SIMT emulation library (target simt) and the tests of tests/simt (label simt); included by
# the top-level CMakeLists.txt when TRAINER_SIMT is ON. (To be written.)
