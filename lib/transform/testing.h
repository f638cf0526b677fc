/* transform/testing.h - functions of transform/ that only tests call
 * (tests/unit/test_transform.c). */
#ifndef CH_TRANSFORM_TESTING_H
#define CH_TRANSFORM_TESTING_H

#include <stdint.h>

/* f rounded to the nearest half float (ties to even), as f16 arrays
 * hold it. */
uint16_t ch_f32_to_f16(float f);

#endif
