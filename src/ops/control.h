/*
 * control.h: the parsed attributes of If, Loop and Scan, shared by src/ops/control.c,
 * src/exec/control.c (which runs them) and src/grad/control.c (their gradients).
 * Internal header.
 */
#ifndef OG_OPS_CONTROL_H
#define OG_OPS_CONTROL_H

#include "ops/op.h"

/* Scan inputs and outputs at most (the axes and directions are kept in arrays). */
#define OG_CONTROL_MAX 64

typedef enum og_control_kind {
    OG_CONTROL_IF = 0,
    OG_CONTROL_LOOP = 1,
    OG_CONTROL_SCAN = 2
} og_control_kind;

typedef struct og_control_params {
    og_control_kind kind;
    int n_out;      /* If: outputs of each branch */
    int n_state;    /* Loop: loop-carried values; Scan: states */
    int n_scan_in;  /* Scan: num_scan_inputs */
    int n_scan_out; /* Loop, Scan: scan outputs */
    bool v8;        /* Scan-8: batch axis 0, sequence_lens as input 0 */
    /* Scan (not normalized: an axis may be negative) */
    int64_t in_axes[OG_CONTROL_MAX], in_dirs[OG_CONTROL_MAX];
    int64_t out_axes[OG_CONTROL_MAX], out_dirs[OG_CONTROL_MAX];
} og_control_params;

#endif /* OG_OPS_CONTROL_H */
