/*
 * control.h: the parsed attributes of If, Loop, Scan and SequenceMap, shared by src/ops/control.c,
 * src/exec/control.c (which runs them) and src/grad/control.c (their gradients).
 * Internal header.
 */
#ifndef OG_OPS_CONTROL_H
#define OG_OPS_CONTROL_H

#include "ops/op.h"

typedef enum og_control_kind {
    OG_CONTROL_IF = 0,
    OG_CONTROL_LOOP = 1,
    OG_CONTROL_SCAN = 2,
    OG_CONTROL_SEQMAP = 3 /* SequenceMap */
} og_control_kind;

typedef struct og_control_params {
    og_control_kind kind;
    int n_out;      /* If: outputs of each branch */
    int n_state;    /* Loop: loop-carried values; Scan: states */
    int n_scan_in;  /* Scan: num_scan_inputs */
    int n_scan_out; /* Loop, Scan: scan outputs */
    int n_own;      /* SequenceMap: the node's own inputs (the body's inputs) */
    bool v8;        /* Scan-8: batch axis 0, sequence_lens as input 0 */
    /* Scan (not normalized: an axis may be negative): n_scan_in axes and directions,
     * n_scan_out axes and directions, in the block allocated with the struct (freed with it) */
    int64_t *in_axes, *in_dirs;
    int64_t *out_axes, *out_dirs;
    int64_t lists[];
} og_control_params;

#endif /* OG_OPS_CONTROL_H */
