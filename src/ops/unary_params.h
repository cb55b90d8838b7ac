/*
 * unary_params.h: the parsed attributes of the unary family, shared by src/ops/unary.c
 * (which fills them) and src/kernels/cpu/unary.c (which reads them).  Internal header.
 */
#ifndef OG_UNARY_PARAMS_H
#define OG_UNARY_PARAMS_H

/* One struct for the whole family: each op reads only its own fields. */
typedef struct og_unary_params {
    /* Elu, HardSigmoid, LeakyRelu, Selu, Celu, ThresholdedRelu: alpha; HardSigmoid: beta;
     * Selu: gamma; Shrink: lambd in alpha, bias in beta. */
    float alpha, beta, gamma;
    /* Clip before opset 11 (attributes; from 11 on the bounds are inputs). */
    float clip_min, clip_max;
    int detect_negative, detect_positive; /* IsInf */
    int gelu_tanh;                        /* Gelu: approximate == "tanh" */
} og_unary_params;

#endif /* OG_UNARY_PARAMS_H */
