/* image.c: the CPU kernel of ImageDecoder (src/ops/image.c decodes): the decoded pixels in
 * the asked layout.  Grayscale from color is ITU-R 601-2 luma in 16-bit fixed point,
 * (19595 R + 38470 G + 7471 B + 2^15) >> 16, as Pillow's convert("L") (the ONNX reference's);
 * color from gray repeats the value. */
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/image.h"

static og_status k_image(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                         og_tensor *const *out, int n_out)
{
    int fmt = *(const int *)k->params;
    og_op_ctx c = {k->node, k->alloc, NULL, true};
    og_image img;
    og_status st = og_image_decode(&c, in[0]->data, (size_t)in[0]->numel, &img, NULL);
    if (st) return st;
    og_tensor *y = out[0];
    if (y->numel != img.w * img.h * (fmt == OG_PIXEL_GRAY ? 1 : 3)) {
        og_free(k->alloc, img.px);
        return og_kernel_error(k, OG_ERR_INTERNAL, "the output does not fit the decoded image");
    }
    uint8_t *o = y->data;
    const uint8_t *p = img.px;
    for (int64_t i = 0; i < img.w * img.h; i++, p += img.ch) {
        if (fmt == OG_PIXEL_GRAY) {
            o[i] = img.ch == 1
                       ? p[0]
                       : (uint8_t)((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 0x8000u) >> 16);
            continue;
        }
        uint8_t r = p[0], g = img.ch == 1 ? p[0] : p[1], b = img.ch == 1 ? p[0] : p[2];
        o[3 * i] = fmt == OG_PIXEL_BGR ? b : r;
        o[3 * i + 1] = g;
        o[3 * i + 2] = fmt == OG_PIXEL_BGR ? r : b;
    }
    og_free(k->alloc, img.px);
    return OG_OK;
}

static const og_dtype u8[] = {OG_UINT8, OG_UNDEFINED};

const og_kernel_def og_cpu_image[] = {
    {.name = "ImageDecoder", .domain = "", .fn = k_image, .types = u8},
    {.name = NULL},
};
