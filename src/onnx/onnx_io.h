/*
 * onnx_io.h: ONNX bytes <-> onnxgrad IR.  Internal header.  Protobuf types stop here:
 * nothing outside src/onnx/ sees a protobuf-c struct.
 */
#ifndef OG_ONNX_IO_H
#define OG_ONNX_IO_H

#include "ir/ir.h"

/* Parse a ModelProto into a new graph (not yet finalized or resolved).  base_dir: where
 * external data lives (NULL refuses external data). */
og_status og_onnx_parse_model(const void *data, size_t size, const char *base_dir,
                              const og_allocator *a, og_graph **out);

/* Parse a serialized TensorProto (the backend tests' input_N.pb / output_N.pb). */
og_status og_onnx_parse_tensor(const void *data, size_t size, const og_allocator *a,
                               og_tensor **out, char **name);

/* Serialize a graph as a ModelProto into a buffer allocated with a. */
og_status og_onnx_serialize_model(const og_graph *g, const og_allocator *a, void **out,
                                  size_t *out_size);

/* Read a whole file (at most max_size bytes) into a buffer allocated with a. */
og_status og_read_file(const char *path, size_t max_size, const og_allocator *a, void **out,
                       size_t *out_size);

#endif /* OG_ONNX_IO_H */
