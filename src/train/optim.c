/* optim.c — gradient clipping, the Adam step and the learning-rate schedules (see optim.h). */
#include "train/optim.h"

#include <math.h>

double optim_grad_norm(const ParamSet *ps) { return sqrt(ps->be->sumsq(ps->grad, ps->total)); }

void optim_clip(ParamSet *ps, double norm, float max_norm) {
    if (max_norm > 0 && norm > max_norm)
        ps->be->scale(ps->grad, (float)(max_norm / norm), ps->total);
}

void optim_adam(ParamSet *ps, const Config *cfg, double lr, int t) {
    ps->be->adam_update(ps->data, ps->grad, ps->m, ps->v, ps->total, (float)lr, cfg->adam_beta1,
                        cfg->adam_beta2, cfg->adam_eps, t);
}

double optim_lr(const Config *cfg, long step_1based, double lr_scale) {
    double step = (double)step_1based;
    double w = cfg->warmup_steps > 0 ? fmin(1.0, step / cfg->warmup_steps) : 1.0;
    if (cfg->lr_schedule == LR_INVERSE_SQRT && step > cfg->warmup_steps)
        return cfg->lr * sqrt(fmax(cfg->warmup_steps, 1) / step);
    double lr = cfg->lr * w * lr_scale;
    return lr < cfg->min_lr && lr_scale < 1.0 ? cfg->min_lr : lr;
}

double optim_decay(const Config *cfg, double lr_scale) {
    return lr_scale * (cfg->lr_schedule == LR_PLATEAU ? cfg->lr_decay : 1.0);
}
