/* library_types.h — HOST STAND-IN (emulated build only): the data-type enum the cuBLAS stand-in
 * uses, with CUDA's values. Source: CUDA Toolkit library_types.h (cudaDataType). */
#ifndef TRAINER_SIMT_LIBRARY_TYPES_H
#define TRAINER_SIMT_LIBRARY_TYPES_H

typedef enum cudaDataType_t {
    CUDA_R_32F = 0,  /* float */
    CUDA_R_16F = 2,  /* half (not supported by the stand-in) */
    CUDA_R_16BF = 14 /* bfloat16: A and B of a CUBLAS_COMPUTE_32F product */
} cudaDataType;
typedef cudaDataType cudaDataType_t;

#endif
