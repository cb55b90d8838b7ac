/* image.h: ImageDecoder (src/ops/image.c): the decoders, which inference runs to size the
 * output (a damaged stream gives the spec's empty result) and the kernel runs again to fill it
 * (src/kernels/cpu/image.c).  Internal header.
 *
 * The decoders need nothing beyond zlib (already onnxgrad's, for .npz): BMP (1, 4, 8 bits
 * with a palette, 16, 24 and 32 bits, uncompressed or bit fields), PNG (every color type and
 * bit depth, Adam7 interlacing; alpha dropped), PNM (P1 to P6, any maxval) and baseline TIFF
 * (strips, uncompressed, PackBits or Deflate; 8-bit gray, RGB, palette).  JPEG, JPEG 2000 and
 * WebP are refused (OG_ERR_UNSUPPORTED): they need their codec libraries, and a small decoder
 * of one's own would not give libjpeg's integer IDCT and upsampling, bit for bit. */
#ifndef OG_OPS_IMAGE_H
#define OG_OPS_IMAGE_H

#include "ops/op.h"

enum { OG_PIXEL_RGB = 0, OG_PIXEL_BGR = 1, OG_PIXEL_GRAY = 2 };

/* A decoded image: h rows of w pixels of ch (1 or 3) bytes. */
typedef struct og_image {
    int64_t w, h;
    int ch;
    uint8_t *px;
} og_image;

/* Decode data[0..n-1] into img (px allocated with c->alloc, 1 or 3 channels as the source
 * has them).  A stream that is not a supported image, or is damaged, gives img->px NULL and
 * w = h = 0 (the op's empty result; *why, when not NULL, says what).  Errors:
 * OG_ERR_UNSUPPORTED for JPEG, JPEG 2000 and WebP, OG_ERR_SHAPE for an image of more than 2^28
 * pixels, OG_ERR_NOMEM. */
og_status og_image_decode(const og_op_ctx *c, const uint8_t *data, size_t n, og_image *img,
                          const char **why);

#endif /* OG_OPS_IMAGE_H */
