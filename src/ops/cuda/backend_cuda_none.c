/* backend_cuda_none.c — compiled when the build has no CUDA compiler: device = cuda is refused. */
#include <stdio.h>

#include "ops/cuda/cuda.h"

const Backend *backend_cuda(char *err_msg, size_t err_len) {
    snprintf(err_msg, err_len,
             "this build of trainer has no CUDA backend (nvcc was not found when it was built); "
             "rebuild on a machine with the CUDA toolkit, or set train.device = cpu");
    return NULL;
}

/* No CUDA: nothing uses the precision. */
void backend_cuda_set_precision(int precision) { (void)precision; }
size_t backend_cuda_set_bf16_stage(size_t elems) {
    (void)elems;
    return 0;
}

const char *backend_cuda_device_name(void) { return ""; }

/* No CUDA, hence no cuDNN. */
int backend_cuda_has_cudnn(void) { return 0; }

int backend_cuda_emulated(void) { return 0; }

/* No CUDA: no device to choose. */
void backend_cuda_use_device(int index) { (void)index; }

int backend_cuda_device_index(void) { return -1; }
