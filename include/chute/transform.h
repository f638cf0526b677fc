/*
 * chute/transform.h - typed fields (lib/transform/): the dtypes of fixed-shape
 * arrays, which --transform pipelines make and batch frames carry.
 */
#ifndef CHUTE_TRANSFORM_H
#define CHUTE_TRANSFORM_H

#include "chute/common.h"

/* A fixed-shape field's values (man/chute-batch.5): dtype 1 u8, 2 i64,
 * 3 f16, 4 f32; 0 is variable-length bytes.  ndim 0 is a scalar. */
enum ch_dtype { CH_DTYPE_BYTES, CH_DTYPE_U8, CH_DTYPE_I64, CH_DTYPE_F16,
		CH_DTYPE_F32 };
struct ch_field_type {
	uint32_t dtype, ndim;
	uint64_t shape[4];
};
size_t ch_dtype_size(uint32_t dtype);

#endif
