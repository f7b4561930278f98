/* attention_cases.h — the attention cases of test_backend_ops (tests/ops/test_backend_ops.c's
 * case table), each testing the CPU backend (backend_cpu()) against double-precision references,
 * central finite differences and the exact equivalences of docs/design.md §11; each seeds optest_rng
 * itself and reports through tests/optest.h. */
#ifndef TRAINER_TESTS_ATTENTION_CASES_H
#define TRAINER_TESTS_ATTENTION_CASES_H

/* attention_softmax.c */
void case_attn_sdp(void);      /* attn_forward, attn_backward, attn_workspace */
void case_attn_sdp_merged(void); /* attn_forward_merged, attn_backward_merged */
void case_additive_attn(void); /* additive_attn_forward, additive_attn_backward */
void case_flash_attn(void);    /* flash_attn_forward/backward/workspace (= sdp exactly) */
/* attention_linear.c */
void case_linear_attn(void);    /* linear_attn_forward/backward/step/workspace */
void case_efficient_attn(void); /* efficient_attn_forward/backward/workspace */
/* attention_taylor.c */
void case_taylor_attn(void); /* l2feature_forward/backward, and the taylor kind built on them */
/* attention_linformer.c */
void case_linformer_attn(void); /* linformer_proj_forward/backward, and the linformer kind */
/* attention_local.c */
void case_local_attn(void); /* local_attn_forward/backward/workspace, and the luong_local kind */

#endif
